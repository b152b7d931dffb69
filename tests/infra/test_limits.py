"""Limits the stack sets on itself: log retention, API access logs and throttling, reserved
concurrency, and which EventBridge events may start instances."""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import pytest

from lambda_workflows.infra.intrinsics import Values, resolve
from lambda_workflows.infra.template import load_template, parameter_defaults, resources_of_type

TEMPLATE = load_template()
RESOURCES: dict[str, dict[str, Any]] = TEMPLATE["Resources"]
PARAMETERS: dict[str, dict[str, Any]] = TEMPLATE["Parameters"]
FUNCTIONS = sorted(resources_of_type(TEMPLATE, "AWS::Serverless::Function"))


def properties(logical_id: str) -> dict[str, Any]:
    props: dict[str, Any] = RESOURCES[logical_id]["Properties"]
    return props


def ref(value: Any) -> str:
    """The name a ``{"Ref": name}`` refers to (fails on anything else)."""
    assert isinstance(value, dict) and set(value) == {"Ref"}, value
    return str(value["Ref"])


def unless_zero(value: Any, parameter: str) -> str:
    """The condition under which ``value`` is ``Ref parameter``, else no value at all."""
    assert isinstance(value, dict) and set(value) == {"Fn::If"}, value
    condition, then, otherwise = value["Fn::If"]
    assert ref(then) == parameter
    assert otherwise == {"Ref": "AWS::NoValue"}
    assert TEMPLATE["Conditions"][condition] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": parameter}, "0"]}]
    }
    return str(condition)


# --- logs ------------------------------------------------------------------------------------


def test_the_retention_parameter_defaults_to_30_days_of_the_values_cloudwatch_accepts() -> None:
    parameter = PARAMETERS["LogRetentionDays"]
    assert parameter["Default"] == 30
    assert 30 in parameter["AllowedValues"] and 3653 in parameter["AllowedValues"]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_function_logs_to_its_own_group_kept_log_retention_days(function: str) -> None:
    # GIVEN the group the function's LoggingConfig names
    group = ref(properties(function)["LoggingConfig"]["LogGroup"])
    # THEN it is a log group of this template, kept LogRetentionDays
    assert RESOURCES[group]["Type"] == "AWS::Logs::LogGroup"
    assert properties(group)["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_no_two_functions_share_a_log_group() -> None:
    groups = [ref(properties(f)["LoggingConfig"]["LogGroup"]) for f in FUNCTIONS]
    assert len(set(groups)) == len(groups) == 5


@pytest.mark.parametrize("function", FUNCTIONS)
def test_a_functions_log_group_exists_when_the_function_does(function: str) -> None:
    # LifecycleEventsFunction exists only with a LifecycleEventBus: so does its group
    group = ref(properties(function)["LoggingConfig"]["LogGroup"])
    assert RESOURCES[group].get("Condition") == RESOURCES[function].get("Condition")


def test_every_log_group_has_a_retention() -> None:
    groups = resources_of_type(TEMPLATE, "AWS::Logs::LogGroup")
    assert len(groups) == len(FUNCTIONS) + 1  # one per function, one for API access logs
    for name, group in groups.items():
        assert group["Properties"].get("RetentionInDays") == {"Ref": "LogRetentionDays"}, name


# --- the API stage ---------------------------------------------------------------------------

API = properties("WorkflowsApi")  # the REST API (ApiType=REST)
HTTP_API = properties("WorkflowsHttpApi")  # the HTTP API (ApiType=HTTP, the default)
ACCESS_LOGS = {
    "WorkflowsApi": API["AccessLogSetting"],
    "WorkflowsHttpApi": HTTP_API["AccessLogSettings"],
}


@pytest.mark.parametrize("api", sorted(ACCESS_LOGS))
def test_the_stage_writes_a_json_access_log_line_per_request_to_a_kept_group(api: str) -> None:
    setting = ACCESS_LOGS[api]
    # GIVEN the destination: the access log group (which has a retention, above)
    destination = setting["DestinationArn"]["Fn::Sub"]
    assert destination.endswith(":log-group:${ApiAccessLogGroup}")
    assert RESOURCES["ApiAccessLogGroup"]["Type"] == "AWS::Logs::LogGroup"
    # WHEN API Gateway fills in the $context variables (here, with their names)
    line = setting["Format"]
    assert "\n" not in line
    filled = re.sub(r"\$context\.([A-Za-z.]+)", lambda m: m.group(1), line)
    # THEN each request is one JSON object saying who asked what, the answer, and how long
    fields = json.loads(filled)
    assert fields["requestId"] == "requestId"
    assert fields["ip"] == "identity.sourceIp"
    assert fields["user"] == "identity.userArn"
    assert fields["method"] == "httpMethod"
    assert fields.get("route", fields.get("resource")) in ("routeKey", "resourcePath")
    # never the path: an approval link's path is its bearer token
    assert "path" not in fields and "$context.path" not in line
    assert fields["status"] == "status"
    assert fields["latency"] == "responseLatency"


def test_the_stage_throttles_every_route_by_default() -> None:
    (default,) = [
        s for s in API["MethodSettings"] if s["ResourcePath"] == "/*" and s["HttpMethod"] == "*"
    ]
    http_default = HTTP_API["DefaultRouteSettings"]
    for settings in (default, http_default):
        assert ref(settings["ThrottlingRateLimit"]) == "ApiThrottleRateLimit"
        assert ref(settings["ThrottlingBurstLimit"]) == "ApiThrottleBurstLimit"
    rate = PARAMETERS["ApiThrottleRateLimit"]["Default"]
    burst = PARAMETERS["ApiThrottleBurstLimit"]["Default"]
    # far below API Gateway's account limit (10,000 rps), and a burst of at least a second's rate
    assert 0 < rate <= 1000 and burst >= rate


def test_access_logging_can_set_up_the_accounts_api_gateway_role_when_asked() -> None:
    # API Gateway refuses access logs in a region whose account settings name no logging role
    assert PARAMETERS["ApiGatewayCloudWatchRole"]["Default"] == "existing"
    account = RESOURCES["ApiGatewayAccount"]
    assert account["Condition"] == "CreateApiGatewayCloudWatchRole"
    assert RESOURCES["ApiGatewayCloudWatchLogsRole"]["Condition"] == account["Condition"]
    # and the API is created after it (the stage could not enable its access log before)
    assert "${ApiGatewayAccount}" in json.dumps(API["Description"])


# --- concurrency -----------------------------------------------------------------------------


def test_the_runner_has_reserved_concurrency_and_its_poller_stays_within_it() -> None:
    runner = properties("RunnerFunction")
    # GIVEN the runner's reservation (unless RunnerReservedConcurrency is 0)
    condition = unless_zero(runner["ReservedConcurrentExecutions"], "RunnerReservedConcurrency")
    assert PARAMETERS["RunnerReservedConcurrency"]["Default"] >= 2
    # THEN the work queue's poller starts no more runners than reserved (a throttled poll
    # would leave its message invisible for the whole visibility timeout)
    scaling = runner["Events"]["WorkMessages"]["Properties"]["ScalingConfig"]
    condition_name, then, otherwise = scaling["Fn::If"]
    assert condition_name == condition
    assert then == {"MaximumConcurrency": {"Ref": "RunnerReservedConcurrency"}}
    assert otherwise == {"Ref": "AWS::NoValue"}


def test_a_reservation_of_one_is_refused_at_deploy_time() -> None:
    # MaximumConcurrency is at least 2: 1 would fail half way through a deployment
    (rule,) = [r for r in TEMPLATE["Rules"].values() if "RunnerReservedConcurrency" in str(r)]
    (assertion,) = rule["Assertions"]
    assert assertion["Assert"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "RunnerReservedConcurrency"}, "1"]}]
    }


def test_the_api_reservation_is_a_parameter_unreserved_by_default() -> None:
    unless_zero(properties("ApiFunction")["ReservedConcurrentExecutions"], "ApiReservedConcurrency")
    assert PARAMETERS["ApiReservedConcurrency"]["Default"] == 0


# --- EventBridge trigger ---------------------------------------------------------------------

TRIGGER_EVENTS = properties("TriggerFunction")["Events"]["TriggerEvents"]["Properties"]


def test_the_trigger_rule_listens_on_the_configured_bus() -> None:
    assert ref(TRIGGER_EVENTS["EventBusName"]) == "TriggerEventBusName"
    assert PARAMETERS["TriggerEventBusName"]["Default"] == "default"


def pattern_for(**parameters: str) -> dict[str, Any]:
    """The rule's event pattern as deployed with these parameter values (others: defaults)."""
    values = Values(refs={**parameter_defaults(TEMPLATE), **parameters})
    pattern: dict[str, Any] = resolve(TRIGGER_EVENTS["Pattern"], values)
    return pattern


def delivered(session: boto3.Session, pattern: dict[str, Any], sources: list[str]) -> list[str]:
    """The sources of the events, put on a bus with a rule of ``pattern``, that the rule
    delivers."""
    events, sqs = session.client("events"), session.client("sqs")
    url = sqs.create_queue(QueueName="delivered")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    events.put_rule(Name="trigger", EventPattern=json.dumps(pattern))
    events.put_targets(Rule="trigger", Targets=[{"Id": "q", "Arn": arn["QueueArn"]}])
    for source in sources:
        events.put_events(
            Entries=[{"Source": source, "DetailType": "OrderPlaced", "Detail": '{"a": 1}'}]
        )
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    return sorted(json.loads(m["Body"])["source"] for m in received.get("Messages", []))


def test_only_events_of_the_default_source_start_instances(session: boto3.Session) -> None:
    # GIVEN the rule as deployed with the default parameters
    pattern = pattern_for()
    # THEN it matches on the source, only the configured one, and leaves the detail-type of
    # events for existing instances to their own rule (WorkflowEvents)
    assert pattern == {
        "source": [PARAMETERS["TriggerEventSource"]["Default"]],
        "detail-type": [{"anything-but": ["Workflow Event"]}],
    }
    sources = ["workflows.trigger", "someone.else", "workflows.trigger.extra", "workflows"]
    assert delivered(session, pattern, sources) == ["workflows.trigger"]


def test_a_configured_source_replaces_the_default(session: boto3.Session) -> None:
    pattern = pattern_for(TriggerEventSource="com.example.orders")
    assert delivered(session, pattern, ["workflows.trigger", "com.example.orders"]) == [
        "com.example.orders"
    ]
