"""Every IAM permission in template.yaml names its resources, and each function holds exactly
the permissions its code calls for.

A statement may use ``Resource: "*"`` only when every action in it is one IAM cannot scope to a
resource, listed below with the reason. ``iam:PassRole`` may only pass the scheduler role, and
only to EventBridge Scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows.engine.instances.lifecycle import SOURCE
from lambda_workflows.infra.template import load_template, resources_of_type

from .code_paths import all_adapter_actions, module_actions, needed_by

# Actions allowed on Resource "*", each with the reason nothing narrower exists.
RESOURCE_STAR_ALLOWED = {
    "scheduler:ListSchedules": (
        "has no resource type in the Service Authorization Reference; the adapter lists a"
        " group's schedules to cancel an instance's wake-ups"
    ),
    "xray:PutTraceSegments": "X-Ray accepts no resource (only if tracing is turned on)",
    "xray:PutTelemetryRecords": "X-Ray accepts no resource (only if tracing is turned on)",
    "cloudwatch:PutMetricData": (
        "metrics cannot be scoped by resource, only by a cloudwatch:namespace condition"
        " (only if metrics are published through the API rather than EMF logs)"
    ),
}

# Managed policies (by name or ARN) a role may attach, with the reason.
MANAGED_POLICIES_ALLOWED: dict[str, str] = {
    "arn:${AWS::Partition}:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs": (
        "API Gateway's account-wide logging role (created only with ApiGatewayCloudWatchRole="
        "create): it writes the logs of every API of the region, so it cannot name one group"
    ),
}

SCHEDULER_ROLE_ARN = {"Fn::GetAtt": ["SchedulerRole", "Arn"]}


@dataclass(frozen=True)
class Statement:
    """One IAM policy statement and where it comes from."""

    owner: str
    body: dict[str, Any]

    @property
    def actions(self) -> list[str]:
        return as_list(self.body.get("Action", []))

    @property
    def resources(self) -> list[Any]:
        return as_list(self.body.get("Resource", []))

    def __str__(self) -> str:
        return f"{self.owner}:{self.body.get('Sid', self.actions)}"


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements_of(document: dict[str, Any], owner: str) -> list[Statement]:
    return [Statement(owner, body) for body in as_list(document.get("Statement", []))]


def collect() -> tuple[list[Statement], list[tuple[str, Any]]]:
    """Every permission statement of the template, and every attached policy that is not an
    inline document (SAM policy templates, managed policy names / ARNs)."""
    template = load_template()
    statements: list[Statement] = []
    attached: list[tuple[str, Any]] = []
    for name, function in resources_of_type(template, "AWS::Serverless::Function").items():
        for policy in as_list(function.get("Properties", {}).get("Policies", [])):
            if isinstance(policy, dict) and "Statement" in policy:
                statements += statements_of(policy, name)
            else:
                attached.append((name, policy))
    for name, role in resources_of_type(template, "AWS::IAM::Role").items():
        properties = role.get("Properties", {})
        for policy in properties.get("Policies", []):
            statements += statements_of(policy["PolicyDocument"], name)
        attached += [
            (name, arn.get("Fn::Sub", arn) if isinstance(arn, dict) else arn)
            for arn in properties.get("ManagedPolicyArns", [])
        ]
    for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for name, policy in resources_of_type(template, kind).items():
            statements += statements_of(policy["Properties"]["PolicyDocument"], name)
    for policy in resources_of_type(template, "AWS::IAM::RolePolicy").values():
        # an inline policy of its own, owned by the role it is part of
        role = policy["Properties"]["RoleName"]
        owner = role.get("Ref", str(role)) if isinstance(role, dict) else str(role)
        statements += statements_of(policy["Properties"]["PolicyDocument"], owner)
    return statements, attached


STATEMENTS, ATTACHED = collect()
ALLOWS = [statement for statement in STATEMENTS if statement.body.get("Effect") == "Allow"]


def test_the_template_has_permission_statements_to_check() -> None:
    owners = {statement.owner for statement in STATEMENTS}
    assert {"ApiFunction", "RunnerFunction", "TriggerFunction", "SweepFunction"} <= owners
    assert "SchedulerRole" in owners


def problems(statement: Statement) -> list[str]:
    """What is wrong with an Allow statement, least-privilege-wise (nothing: [])."""
    found: list[str] = []
    if "NotAction" in statement.body or "NotResource" in statement.body:
        found.append("uses NotAction / NotResource")
    if not statement.resources:
        found.append("has no Resource")
    for action in statement.actions:
        if not isinstance(action, str) or "*" in action or "?" in action:
            found.append(f"grants the wildcard action {action!r}: list the actions it needs")
    if "*" in statement.resources:
        scopable = [a for a in statement.actions if a not in RESOURCE_STAR_ALLOWED]
        if scopable:
            found.append(f'grants {scopable} on "*": name the resources instead')
    if "iam:PassRole" in statement.actions:
        condition = statement.body.get("Condition", {}).get("StringEquals", {})
        if statement.actions != ["iam:PassRole"]:
            found.append("mixes iam:PassRole with other actions")
        if statement.resources != [SCHEDULER_ROLE_ARN]:
            found.append(f"passes {statement.resources}, not only the SchedulerRole")
        if condition.get("iam:PassedToService") != "scheduler.amazonaws.com":
            found.append("passes the role without iam:PassedToService scheduler.amazonaws.com")
    if "events:PutEvents" in statement.actions:
        found += _put_events_problems(statement)
    if any(
        a.startswith("scheduler:") and a not in RESOURCE_STAR_ALLOWED for a in statement.actions
    ):
        for arn in statement.resources:
            pattern = arn.get("Fn::Sub", "") if isinstance(arn, dict) else str(arn)
            if ":schedule/${ScheduleGroup}/" not in pattern:
                found.append(f"reaches schedules outside the ScheduleGroup: {arn}")
    return found


def _put_events_problems(statement: Statement) -> list[str]:
    """events:PutEvents only on named buses, and only as lifecycle events' source."""
    found: list[str] = []
    for arn in statement.resources:
        pattern = arn.get("Fn::Sub", "") if isinstance(arn, dict) else str(arn)
        if ":event-bus/" not in pattern or pattern.endswith("/*"):
            found.append(f"puts events on {arn}, not on one named bus")
    condition = statement.body.get("Condition", {}).get("StringEquals", {})
    if condition.get("events:source") != SOURCE:
        found.append(f"puts events without the events:source condition {SOURCE!r}")
    return found


@pytest.mark.parametrize("statement", ALLOWS, ids=str)
def test_each_statement_names_its_resources_actions_and_passed_role(
    statement: Statement,
) -> None:
    assert problems(statement) == [], f"{statement}: {problems(statement)}"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"Action": "dynamodb:GetItem", "Resource": "*"}, 'on "*"'),
        ({"Action": ["scheduler:ListSchedules", "sqs:SendMessage"], "Resource": "*"}, 'on "*"'),
        ({"Action": "dynamodb:*", "Resource": "arn:t"}, "wildcard action"),
        ({"NotAction": "iam:*", "Resource": "arn:t"}, "NotAction"),
        ({"Action": "iam:PassRole", "Resource": "*"}, "not only the SchedulerRole"),
        ({"Action": "iam:PassRole", "Resource": SCHEDULER_ROLE_ARN}, "PassedToService"),
        (
            {"Action": "scheduler:DeleteSchedule", "Resource": {"Fn::Sub": "arn:x:schedule/*"}},
            "outside the ScheduleGroup",
        ),
        (
            {"Action": "events:PutEvents", "Resource": {"Fn::Sub": "arn:x:event-bus/*"}},
            "not on one named bus",
        ),
        (
            {"Action": "events:PutEvents", "Resource": {"Fn::Sub": "arn:x:event-bus/b"}},
            "without the events:source condition",
        ),
    ],
)
def test_the_check_catches_broad_statements(body: dict[str, Any], problem: str) -> None:
    # GIVEN a statement broader than it needs to be
    statement = Statement("Example", {"Effect": "Allow", **body})
    # THEN the check names what is wrong
    assert any(problem in found for found in problems(statement)), problems(statement)


def test_the_check_accepts_an_unscopable_action_on_star() -> None:
    statement = Statement(
        "Example", {"Effect": "Allow", "Action": "scheduler:ListSchedules", "Resource": "*"}
    )
    assert problems(statement) == []


def test_only_allowed_policy_templates_or_managed_policies_are_attached() -> None:
    for owner, policy in ATTACHED:
        if isinstance(policy, dict):
            # A SAM policy template ({"SQSSendMessagePolicy": {"QueueName": ...}}) is scoped to
            # the resource its parameters name; an empty parameter map would mean "*".
            ((name, parameters),) = policy.items()
            assert name.endswith("Policy") and parameters, f"{owner}: {policy}"
        else:
            assert policy in MANAGED_POLICIES_ALLOWED, (
                f"{owner} attaches managed policy {policy}; add it to MANAGED_POLICIES_ALLOWED"
                " with the reason, or write the statements it needs"
            )


def test_the_scheduler_role_can_only_be_assumed_by_this_accounts_scheduler() -> None:
    template = load_template()
    trust = template["Resources"]["SchedulerRole"]["Properties"]["AssumeRolePolicyDocument"]
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert statement["Action"] == "sts:AssumeRole"
    condition = statement["Condition"]
    assert condition["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}


RUNNER_ARN = {"Fn::GetAtt": ["RunnerFunction", "Arn"]}


RUNNER_BY_NAME = {
    "Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:"
    "${AWS::StackName}-runner"
}


def test_only_the_runner_is_invoked_and_only_by_who_posts_work_or_wake_ups() -> None:
    # wake-up schedules invoke RunnerFunction directly: the role Scheduler assumes may invoke
    # it (any of its versions or aliases); work due now invokes it too, from the functions
    # that post work (and the runner itself); no other function is invoked by anyone
    invokers = {s.owner: s for s in ALLOWS if any(a.startswith("lambda:") for a in s.actions)}
    assert sorted(invokers) == [
        "ApiFunction",
        "RunnerFunctionRole",
        "SchedulerRole",
        "SweepFunction",
        "TriggerFunction",
    ]
    assert all(s.actions == ["lambda:InvokeFunction"] for s in invokers.values())
    assert invokers["SchedulerRole"].resources == [
        RUNNER_ARN,
        {"Fn::Sub": "${RunnerFunction.Arn}:*"},
    ]
    for owner in ("RunnerFunctionRole", "SweepFunction", "TriggerFunction"):
        assert invokers[owner].resources == [RUNNER_ARN]
    # the API names the runner by name: RunnerFunction's environment names the API
    assert invokers["ApiFunction"].resources == [RUNNER_BY_NAME]
    runner = load_template()["Resources"]["RunnerFunction"]["Properties"]
    assert runner["FunctionName"] == {"Fn::Sub": "${AWS::StackName}-runner"}


def test_a_wake_up_the_runner_could_not_handle_goes_to_the_work_queue() -> None:
    # GIVEN the runner's asynchronous invocations (the wake-up schedules')
    runner = load_template()["Resources"]["RunnerFunction"]["Properties"]
    config = runner["EventInvokeConfig"]
    # THEN Lambda retries a failed one, then sends its record to the work queue
    assert config["MaximumRetryAttempts"] >= 1
    assert config["DestinationConfig"]["OnFailure"] == {
        "Type": "SQS",
        "Destination": {"Fn::GetAtt": ["WorkQueue", "Arn"]},
    }
    # and the runner itself may send there (Lambda sends as the function's role)
    work_queue = {"Fn::GetAtt": ["WorkQueue", "Arn"]}
    assert any(
        s.owner == "RunnerFunction" and "sqs:SendMessage" in s.actions and work_queue in s.resources
        for s in ALLOWS
    )
    # and the scheduler role may send there: the schedules' dead-letter queue
    assert any(
        s.owner == "SchedulerRole" and "sqs:SendMessage" in s.actions and work_queue in s.resources
        for s in ALLOWS
    )


# --- each function holds what its code calls, and nothing else -----------------------------
# (moto does not enforce IAM; AWS does. A missing grant fails only in a deployed stack, an
# unused one never fails: both are checked against the code, see code_paths.)

# What SAM grants a function itself for its event sources, on the source's queue only.
SAM_EVENT_GRANTS = {
    "SQS": {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:GetQueueAttributes",
    },
}
# The services the engine's adapters call; grants outside them are checked elsewhere.
ENGINE_PREFIXES = ("dynamodb:", "sqs:", "scheduler:", "iam:PassRole", "events:", "lambda:")


def granted(function: str, *, with_event_sources: bool = True) -> set[str]:
    """The actions the template allows ``function``: its statements, plus (by default) what
    SAM adds for its event sources."""
    actions = {
        action
        for statement in ALLOWS
        if statement.owner in (function, f"{function}Role")  # SAM's role of the function
        for action in statement.actions
    }
    if with_event_sources:
        properties = load_template()["Resources"][function]["Properties"]
        for event in properties.get("Events", {}).values():
            actions |= SAM_EVENT_GRANTS.get(event["Type"], set())
    return actions


def test_the_runner_may_call_everything_the_adapters_call() -> None:
    # GIVEN every IAM action the adapters' calls need (a workflow's steps may use the whole
    # engine through the client, so the runner's code path is all of it)
    needed = all_adapter_actions()
    # THEN the runner's policy (and its work-queue event source) grants each of them
    missing = needed - granted("RunnerFunction")
    assert not missing, (
        f"RunnerFunction lacks {sorted(missing)} for the calls in lambda_workflows.aws"
    )


# Each function's entrypoint module (lambda_workflows.entrypoints.<name>).
ENTRYPOINTS = {
    "ApiFunction": "api",
    "RunnerFunction": "runner",
    "TriggerFunction": "trigger",
    "SweepFunction": "sweep",
    "LifecycleEventsFunction": "lifecycle",
}


@pytest.mark.parametrize(
    ("function", "entrypoint"),
    [(function, name) for function, name in ENTRYPOINTS.items() if function != "RunnerFunction"],
)
def test_each_function_holds_exactly_what_its_code_path_calls(
    function: str, entrypoint: str
) -> None:
    # GIVEN the IAM actions of the AWS calls reachable from the function's entrypoint
    needed = needed_by(entrypoint)
    # THEN its policy grants each of them, and no other action on the engine's services
    held = {a for a in granted(function, with_event_sources=False) if a.startswith(ENGINE_PREFIXES)}
    assert not needed - held, f"{function} lacks {sorted(needed - held)} its code calls"
    assert not held - needed, (
        f"{function} holds {sorted(held - needed)} that lambda_workflows.entrypoints.{entrypoint} "
        "never"
        " calls: remove them from template.yaml"
    )


# Permissions a function held without using them. Each must stay away (a test that only
# compared against the code would pass again if the code started needing them by mistake).
REMOVED = [
    # The API cancels wake-ups (terminate, restart) but never schedules one.
    ("ApiFunction", "scheduler:CreateSchedule"),
    ("ApiFunction", "iam:PassRole"),
    # The trigger creates (a conditional put, then a work message) and delivers events (a
    # read of the instance item, then one transaction): it never queries.
    ("TriggerFunction", "dynamodb:Query"),
    ("TriggerFunction", "dynamodb:DeleteItem"),
    ("TriggerFunction", "scheduler:CreateSchedule"),
    ("TriggerFunction", "iam:PassRole"),
    # Lifecycle events are published from the table's stream, never on the way of a step or
    # a request: no other function may put events, and the publisher touches nothing else.
    ("RunnerFunction", "events:PutEvents"),
    ("ApiFunction", "events:PutEvents"),
    ("TriggerFunction", "events:PutEvents"),
    ("SweepFunction", "events:PutEvents"),
    ("LifecycleEventsFunction", "dynamodb:Query"),
    ("LifecycleEventsFunction", "dynamodb:GetItem"),
]


@pytest.mark.parametrize(("function", "action"), REMOVED, ids=lambda value: str(value))
def test_an_unused_permission_is_not_granted(function: str, action: str) -> None:
    assert action not in granted(function), f"{function} must not hold {action}"
    assert action not in needed_by(ENTRYPOINTS[function])


def test_only_the_runner_and_the_sweep_may_pass_the_scheduler_role() -> None:
    # Passing SchedulerRole lets the holder create schedules that send as that role: only the
    # function that schedules wake-ups holds it, and the sweep, which reconciles the recurring
    # schedules (lambda_workflows.aws.recurring).
    holders = {statement.owner for statement in ALLOWS if "iam:PassRole" in statement.actions}
    assert holders == {"RunnerFunction", "SweepFunction"}


def test_the_trigger_reads_and_writes_items_of_the_table_only() -> None:
    (statement,) = [
        s for s in ALLOWS if s.owner == "TriggerFunction" and "dynamodb:PutItem" in s.actions
    ]
    assert statement.actions == ["dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem"]
    assert statement.resources == [{"Fn::GetAtt": ["Table", "Arn"]}]


def test_the_adapter_scan_maps_calls_to_iam_actions(tmp_path: Path) -> None:
    # GIVEN an adapter making batch, paginated and transactional calls
    source = tmp_path / "adapter.py"
    source.write_text(
        "def go(self, client):\n"
        "    self.client.send_message_batch(Entries=[])\n"
        "    client.get_paginator('list_schedules')\n"
        "    self._client.transact_write_items(TransactItems=[{'Put': {}}, {'Update': {}}])\n"
        "    self.client.create_schedule(Name='n')\n"
    )
    # WHEN it is scanned, THEN each call maps to the actions IAM checks
    assert module_actions(source, "sqs") >= {"sqs:SendMessage"}
    assert "sqs:SendMessageBatch" not in module_actions(source, "sqs")
    assert module_actions(source, "scheduler") >= {
        "scheduler:ListSchedules",
        "scheduler:CreateSchedule",
        "iam:PassRole",
    }
    assert module_actions(source, "dynamodb") >= {"dynamodb:PutItem", "dynamodb:UpdateItem"}
    assert "dynamodb:TransactWriteItems" not in module_actions(source, "dynamodb")
