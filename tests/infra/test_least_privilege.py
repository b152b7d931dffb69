"""Every IAM permission in template.yaml names its resources.

A statement may use ``Resource: "*"`` only when every action in it is one IAM cannot scope to a
resource, listed below with the reason. ``iam:PassRole`` may only pass the scheduler role, and
only to EventBridge Scheduler.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from infra.template import load_template, resources_of_type

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

# Managed policies (by name or ARN) a function may attach, with the reason.
MANAGED_POLICIES_ALLOWED: dict[str, str] = {}

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
        attached += [(name, arn) for arn in properties.get("ManagedPolicyArns", [])]
    for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for name, policy in resources_of_type(template, kind).items():
            statements += statements_of(policy["Properties"]["PolicyDocument"], name)
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
    if any(
        a.startswith("scheduler:") and a not in RESOURCE_STAR_ALLOWED for a in statement.actions
    ):
        for arn in statement.resources:
            pattern = arn.get("Fn::Sub", "") if isinstance(arn, dict) else str(arn)
            if ":schedule/${ScheduleGroup}/" not in pattern:
                found.append(f"reaches schedules outside the ScheduleGroup: {arn}")
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


# --- the grants cover what the adapters call (moto does not enforce IAM, AWS does) -----------

ADAPTERS = Path(__file__).resolve().parents[2] / "handler" / "workflows" / "aws"
# IAM prefix of each adapter module (one module per service).
ADAPTER_SERVICES = {"dynamodb.py": "dynamodb", "sqs.py": "sqs", "scheduler.py": "scheduler"}
# Operations authorized by another action (Service Authorization Reference).
AUTHORIZED_BY = {
    "sqs:SendMessageBatch": {"sqs:SendMessage"},
    "sqs:DeleteMessageBatch": {"sqs:DeleteMessage"},
    "dynamodb:TransactGetItems": {"dynamodb:GetItem"},
    "scheduler:CreateSchedule": {"scheduler:CreateSchedule", "iam:PassRole"},
    "scheduler:UpdateSchedule": {"scheduler:UpdateSchedule", "iam:PassRole"},
}
# TransactWriteItems is authorized by the actions it contains.
TRANSACT_ITEM_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}


def _is_client(node: ast.expr) -> bool:
    """``client``, ``self.client``, ``self._client``: what an adapter calls AWS through."""
    if isinstance(node, ast.Attribute):
        return node.attr.lstrip("_").endswith("client")
    return isinstance(node, ast.Name) and node.id.lstrip("_").endswith("client")


def adapter_actions(path: Path, service: str) -> set[str]:
    """The IAM actions the operations called in one adapter module need."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    operations: set[str] = set()
    transact_kinds: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if _is_client(node.func.value):
                operation = node.func.attr
                if operation == "get_paginator" and node.args:
                    argument = node.args[0]
                    assert isinstance(argument, ast.Constant), f"{path}: dynamic paginator"
                    operation = str(argument.value)
                if operation not in ("get_waiter", "can_paginate", "close"):
                    operations.add("".join(part.title() for part in operation.split("_")))
        elif isinstance(node, ast.Dict):
            transact_kinds |= {
                key.value
                for key in node.keys
                if isinstance(key, ast.Constant) and key.value in TRANSACT_ITEM_ACTIONS
            }
    needed: set[str] = set()
    for operation in operations:
        action = f"{service}:{operation}"
        if action == "dynamodb:TransactWriteItems":
            needed |= {TRANSACT_ITEM_ACTIONS[kind] for kind in transact_kinds}
        else:
            needed |= AUTHORIZED_BY.get(action, {action})
    return needed


def granted(function: str) -> set[str]:
    return {
        action
        for statement in ALLOWS
        if statement.owner == function
        for action in statement.actions
    }


def needed_by_the_adapters() -> dict[str, set[str]]:
    return {
        service: adapter_actions(ADAPTERS / module, service)
        for module, service in ADAPTER_SERVICES.items()
        if (ADAPTERS / module).is_file()
    }


@pytest.mark.parametrize(
    ("function", "services"),
    [
        # The API and the runner drive the whole engine: instances, wake-ups, schedules.
        ("ApiFunction", ("dynamodb", "sqs", "scheduler")),
        ("RunnerFunction", ("dynamodb", "sqs", "scheduler")),
        # The trigger creates instances and enqueues their first run.
        ("TriggerFunction", ("dynamodb", "sqs")),
    ],
)
def test_each_function_may_call_what_the_adapters_it_uses_call(
    function: str, services: tuple[str, ...]
) -> None:
    # GIVEN the IAM actions the service adapters' calls need
    needed = needed_by_the_adapters()
    if not needed:
        pytest.skip("handler/workflows/aws has no adapters yet")
    # THEN the function's policy grants each of them
    wanted = set().union(*(needed.get(service, set()) for service in services))
    missing = wanted - granted(function)
    assert not missing, f"{function} lacks {sorted(missing)} for the calls in workflows.aws"


def test_the_sweep_may_list_instances_and_enqueue_them() -> None:
    assert {"dynamodb:Query", "sqs:SendMessage"} <= granted("SweepFunction")


def test_the_adapter_scan_maps_calls_to_iam_actions(tmp_path: Path) -> None:
    # GIVEN an adapter making batch, paginated and transactional calls
    source = tmp_path / "adapter.py"
    source.write_text(
        "def go(self, client):\n"
        "    self.client.send_message_batch(Entries=[])\n"
        "    client.get_paginator('list_schedules')\n"
        "    self._client.transact_write_items(TransactItems=[{'Put': {}}, {'Update': {}}])\n"
    )
    # WHEN it is scanned, THEN each call maps to the action IAM checks
    assert adapter_actions(source, "svc") == {
        "svc:SendMessageBatch",
        "svc:ListSchedules",
        "svc:TransactWriteItems",
    }
    assert adapter_actions(source, "dynamodb") >= {"dynamodb:PutItem", "dynamodb:UpdateItem"}
    assert "dynamodb:TransactWriteItems" not in adapter_actions(source, "dynamodb")
