"""The WorkflowEvents rule: "Workflow Event" events of the trigger source and bus reach
TriggerFunction, through their own rule only (the creating rule leaves them alone), and one
that fails goes to the trigger dead-letter queue."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import boto3
import pytest
from infra.intrinsics import Values, resolve
from infra.template import load_template, parameter_defaults

from workflows.entrypoints.trigger import WORKFLOW_EVENT

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
