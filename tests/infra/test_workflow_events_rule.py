"""The WorkflowEvents rule: "Workflow Event" events of the trigger source and bus reach
TriggerFunction, through their own rule only (the creating rule leaves them alone), and one
that fails goes to the trigger dead-letter queue."""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path
from typing import Any

import boto3
import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.entrypoints import trigger
from lambda_workflows.entrypoints.trigger import WORKFLOW_EVENT
from lambda_workflows.infra.intrinsics import Values, resolve
from lambda_workflows.infra.template import load_template, parameter_defaults
from lambda_workflows.testing import WorkflowTestEnv
from tests.functional.api.conftest import sample

from .test_granted_calls import CallLog
from .test_least_privilege import granted

TEMPLATE = load_template()
TRIGGER = TEMPLATE["Resources"]["TriggerFunction"]["Properties"]
RULES = ("TriggerEvents", "WorkflowEvents")


def patterns(**parameters: str) -> dict[str, dict[str, Any]]:
    """Each rule's pattern as deployed with these parameter values (others: defaults)."""
    values = Values(refs={**parameter_defaults(TEMPLATE), **parameters})
    return {
        name: resolve(TRIGGER["Events"][name]["Properties"]["Pattern"], values) for name in RULES
    }


def test_the_rule_takes_workflow_events_of_the_trigger_source_on_the_trigger_bus() -> None:
    rule = TRIGGER["Events"]["WorkflowEvents"]
    assert rule["Type"] == "EventBridgeRule"
    assert rule["Properties"]["EventBusName"] == {"Ref": "TriggerEventBusName"}
    assert patterns()["WorkflowEvents"] == {
        "source": ["workflows.trigger"],
        "detail-type": [WORKFLOW_EVENT],
    }
    assert patterns(TriggerEventSource="com.example.orders")["WorkflowEvents"]["source"] == [
        "com.example.orders"
    ]


def test_a_failed_event_goes_to_the_trigger_dead_letter_queue() -> None:
    config = TRIGGER["EventInvokeConfig"]
    assert config["MaximumRetryAttempts"] == 2
    assert config["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": ["TriggerDeadLetterQueue", "Arn"]
    }


def matched_by(session: boto3.Session, sent: list[tuple[str, str]]) -> dict[str, list[str]]:
    """For each rule (on moto, with the template's default patterns), the ``source/detail-type``
    of the events it delivers among ``sent``."""
    events, sqs = session.client("events"), session.client("sqs")
    urls = {}
    for name, pattern in patterns().items():
        url = sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        events.put_rule(Name=name, EventPattern=json.dumps(pattern))
        events.put_targets(Rule=name, Targets=[{"Id": "q", "Arn": arn["Attributes"]["QueueArn"]}])
        urls[name] = url
    for source, detail_type in sent:
        entry = {"Source": source, "DetailType": detail_type, "Detail": '{"a": 1}'}
        events.put_events(Entries=[entry])
    matched: dict[str, list[str]] = {}
    for name, url in urls.items():
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        bodies = [json.loads(m["Body"]) for m in messages]
        matched[name] = sorted(f"{b['source']}/{b['detail-type']}" for b in bodies)
    return matched


def test_each_event_of_the_trigger_source_matches_exactly_one_rule(
    session: boto3.Session,
) -> None:
    sent = [
        ("workflows.trigger", "Workflow Event"),
        ("workflows.trigger", "OrderPlaced"),
        ("workflows.trigger", "Workflow Events"),
        ("someone.else", "Workflow Event"),
    ]
    assert matched_by(session, sent) == {
        "TriggerEvents": ["workflows.trigger/OrderPlaced", "workflows.trigger/Workflow Events"],
        "WorkflowEvents": ["workflows.trigger/Workflow Event"],
    }


def documented_entries(page: str) -> list[dict[str, Any]]:
    """The entries of the ``aws events put-events`` example in a documentation page."""
    text = (Path(__file__).parents[2] / page).read_text(encoding="utf-8")
    found = re.search(r"aws events put-events --entries '(.*?)'\n", text, re.S)
    assert found, f"{page} has no put-events example"
    entries: list[dict[str, Any]] = json.loads(found.group(1))
    return entries


@pytest.mark.parametrize("page", ["README.md", "docs/semantics.md"])
def test_the_documented_put_events_example_is_a_workflow_event(page: str) -> None:
    [entry] = documented_entries(page)
    assert (entry["Source"], entry["DetailType"]) == ("workflows.trigger", WORKFLOW_EVENT)
    assert set(json.loads(entry["Detail"])) == {"workflow", "instance_id", "type", "payload"}


class Approval(WorkflowEntrypoint):
    """Waits for one approval."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return (await step.wait_for_event("approval", type="approved", timeout="1 day")).payload


def test_delivering_events_calls_only_what_trigger_function_may() -> None:
    # GIVEN the real TriggerFunction handler on a moto stack, every engine call logged
    env = WorkflowTestEnv({"approvals": Approval}, backend="aws")
    calls = CallLog()
    runtime = env.aws.runtime
    for client in (runtime.store.client, runtime.queue.client, runtime.wakeups.client):
        client.meta.events.register("before-parameter-build", calls)
    handler = trigger.make_handler(runtime)
    try:
        for name in ("waiting", "queued"):
            env.create("approvals", id=name)
        env.run_once("approvals", "waiting")
        big = base64.b64encode(os.urandom(600_000)).decode()  # stored in chunks
        event = sample("eventbridge_workflow_event.json")
        event["detail"] |= {"workflow": "approvals", "instance_id": "waiting", "type": "approved"}
        large = {**event, "id": "large", "detail": {**event["detail"], "instance_id": "queued"}}
        large["detail"]["payload"] = big
        # WHEN an event for a waiting instance, its redelivery and a large one are delivered
        calls.recording = True
        answers = [handler(event, None), handler(event, None), handler(large, None)]
        calls.recording = False
    finally:
        env.close()
    # THEN each was stored once, and TriggerFunction's policy grants every call made
    assert answers[0] == answers[1] and answers[2]["instance_id"] == "queued"
    assert {"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem"} <= calls.actions
    missing = calls.actions - granted("TriggerFunction")
    assert not missing, f"TriggerFunction called {sorted(missing)}, which its policy lacks"
