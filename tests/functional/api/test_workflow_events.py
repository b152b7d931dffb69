"""TriggerFunction delivers ``Workflow Event`` EventBridge events to instances, on moto: once per
EventBridge event id however often it arrives or is retried, FIFO per type, and an event it
cannot deliver is logged with the reason and raised (to the dead-letter queue) writing nothing."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import (
    InstanceAlreadyExists,
    InstanceNotFound,
    InvalidInput,
    InvalidTransition,
    StorageError,
    UnknownWorkflow,
)
from lambda_workflows.engine.instances.recovery import SWEEP_MARGIN
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.entrypoints import sweep
from lambda_workflows.infra.intrinsics import Values, resolve
from lambda_workflows.infra.template import load_template, parameter_defaults
from lambda_workflows.testing import WorkflowTestEnv
from tests.aws_faults import Faults

from .conftest import Api, sample


class TwoVotes(WorkflowEntrypoint):
    """Waits for two votes and returns their payloads in the order its waits received them."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        first = await step.wait_for_event("first", type="vote", timeout="1 day")
        second = await step.wait_for_event("second", type="vote", timeout="1 day")
        return [first.payload, second.payload]


@pytest.fixture(scope="module")
def module_api() -> Iterator[Api]:
    """One moto env for the module, with the voting workflow (overrides conftest's)."""
    env = WorkflowTestEnv({"votes": TwoVotes}, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


def workflow_event(
    event_id: str, instance_id: str, payload: Any = None, **detail: Any
) -> dict[str, Any]:
    """The sample ``Workflow Event`` with this event id, for a vote of this instance."""
    event = sample("eventbridge_workflow_event.json")
    event["id"] = event_id
    event["detail"] = {"workflow": "votes", "instance_id": instance_id, "type": "vote"}
    event["detail"] |= {"payload": payload, **detail}
    return event


def waiting(api: Api, instance_id: str) -> InstanceRef:
    """A votes instance, run until it waits for its first vote."""
    api.env.create("votes", id=instance_id)
    api.env.run_until_idle()
    assert api.env.get("votes", instance_id).status().status == "waiting"
    api.writes.calls.clear()
    return InstanceRef("votes", instance_id)


def output(api: Api, ref: InstanceRef) -> Any:
    status = api.env.get(ref.workflow, ref.id).status()
    assert status.status == "complete", status
    return status.output


def stored(api: Api, ref: InstanceRef) -> list[Any]:
    """The payloads of the instance's events, in store order."""
    return [json.loads(e.payload) for e in api.env.store.load(ref).events]


def log_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_the_sample_event_reaches_the_waiting_instance(api: Api) -> None:
    # GIVEN the instance the sample names, waiting for a vote
    ref = waiting(api, "vote-1")
    # WHEN the sample event arrives, then a second vote
    answer = api.trigger(sample("eventbridge_workflow_event.json"))
    api.trigger(workflow_event("0b7e5c36-0000-4000-8000-000000000002", "vote-1", "second"))
    api.env.run_until_idle()
    # THEN the waits received the detail's payloads
    assert answer == {
        "workflow": "votes",
        "instance_id": "vote-1",
        "type": "vote",
        "event_id": api.env.store.load(ref).events[0].id,
    }
    assert output(api, ref) == [{"user": "ana"}, "second"]


def test_a_redelivered_event_is_stored_once_and_the_instance_continues_once(api: Api) -> None:
    # GIVEN a waiting instance that received one event
    ref = waiting(api, "dup")
    event = workflow_event("5d9a2f10-0000-4000-8000-000000000001", "dup", "once")
    first = api.trigger(event)
    assert api.writes.calls == ["TransactWriteItems", "Invoke"]
    before = api.snapshot()
    api.writes.calls.clear()
    # WHEN EventBridge delivers it again (same event id), before and after the instance ran
    again = api.trigger(event)
    api.env.run_until_idle()
    later = api.trigger(event)
    # THEN each redelivery succeeds with the stored event, and writes and wakes nothing
    assert again == later == first
    assert api.writes.calls.count("TransactWriteItems") == 0
    assert api.snapshot() != before  # the runner's pass wrote; the redeliveries did not
    assert stored(api, ref) == ["once"]
    # and the instance took it once: its second wait still waits, and gets the next event
    assert api.env.get("votes", "dup").status().status == "waiting"
    api.trigger(workflow_event("5d9a2f10-0000-4000-8000-000000000002", "dup", "next"))
    api.env.run_until_idle()
    assert output(api, ref) == ["once", "next"]
    # a redelivery after the instance finished is still a success that stores nothing
    assert api.trigger(event) == first


def test_a_redelivery_alone_writes_nothing(api: Api) -> None:
    ref = waiting(api, "dup-alone")
    event = workflow_event("5d9a2f10-0000-4000-8000-0000000000a1", "dup-alone", 1)
    api.trigger(event)
    before = api.snapshot()
    api.writes.calls.clear()

    api.trigger(event)

    assert api.writes.calls == []
    assert api.snapshot() == before
    assert stored(api, ref) == [1]


def test_events_of_one_type_are_received_in_the_order_they_were_delivered(api: Api) -> None:
    # GIVEN an instance that has not run yet (its events are kept until it waits)
    api.env.create("votes", id="fifo")
    ref = InstanceRef("votes", "fifo")
    # WHEN two votes arrive, with an event of another type between them
    api.trigger(workflow_event("9e1f0000-0000-4000-8000-000000000001", "fifo", "first"))
    api.trigger(
        workflow_event("9e1f0000-0000-4000-8000-000000000002", "fifo", "other", type="note")
    )
    api.trigger(workflow_event("9e1f0000-0000-4000-8000-000000000003", "fifo", "second"))
    api.env.run_until_idle()
    # THEN the first wait got the first vote, the second wait the second
    assert output(api, ref) == ["first", "second"]


def test_an_event_for_a_missing_instance_is_logged_raised_and_writes_nothing(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    before = api.snapshot()
    capsys.readouterr()

    with pytest.raises(InstanceNotFound):
        api.trigger(workflow_event("4c4c0000-0000-4000-8000-000000000001", "ghost", "x"))

    assert api.writes.calls == []
    assert api.snapshot() == before
    [line] = [entry for entry in log_lines(capsys.readouterr().out) if entry["level"] == "ERROR"]
    assert "dead-letter queue" in line["message"]
    assert line["code"] == "instance_not_found"
    assert "no instance 'ghost' of workflow 'votes'" in line["reason"]
    assert line["event_id"] == "4c4c0000-0000-4000-8000-000000000001"
    assert (line["workflow"], line["instance_id"], line["event_type"]) == ("votes", "ghost", "vote")


UNDELIVERABLE = {
    "unknown workflow": ({"workflow": "invoices"}, UnknownWorkflow, "registered: votes"),
    "bad type": ({"type": "no spaces"}, InvalidInput, "event type 'no spaces'"),
    "type not a string": ({"type": 7}, InvalidInput, "event type must be a string"),
    "payload over 1 MiB": ({"payload": "x" * (1024 * 1024)}, InvalidInput, "payload"),
    "bad instance id": ({"instance_id": "a/b"}, InvalidInput, "instance id 'a/b'"),
    "unknown key": ({"params": {}}, InvalidInput, "unknown key(s) ['params']"),
    "no type": ({"type": None}, InvalidInput, "lacks ['type']"),
    "no instance id": ({"instance_id": None}, InvalidInput, "lacks ['instance_id']"),
}


@pytest.mark.parametrize(
    ("detail", "error", "reason"), list(UNDELIVERABLE.values()), ids=list(UNDELIVERABLE)
)
def test_an_undeliverable_event_is_logged_raised_and_writes_nothing(
    api: Api,
    capsys: pytest.CaptureFixture[str],
    detail: dict[str, Any],
    error: type[Exception],
    reason: str,
) -> None:
    with contextlib.suppress(InstanceAlreadyExists):  # it exists: only the detail is wrong
        api.env.create("votes", id="target")
    event = workflow_event("7a7a0000-0000-4000-8000-000000000001", "target", "x")
    event["detail"] |= detail
    before = api.snapshot()
    api.writes.calls.clear()
    capsys.readouterr()

    with pytest.raises(error):
        api.trigger(event)

    assert api.writes.calls == []
    assert api.snapshot() == before
    [line] = [entry for entry in log_lines(capsys.readouterr().out) if entry["level"] == "ERROR"]
    assert reason in line["reason"]


def test_an_event_whose_detail_is_not_an_object_is_refused(api: Api) -> None:
    event = {**sample("eventbridge_workflow_event.json"), "detail": ["vote"]}
    with pytest.raises(InvalidInput, match="detail must be an object"):
        api.trigger(event)


def test_an_event_for_a_finished_instance_is_refused(api: Api) -> None:
    ref = waiting(api, "done")
    for n in (1, 2):
        api.trigger(workflow_event(f"6b6b0000-0000-4000-8000-00000000000{n}", "done", n))
    api.env.run_until_idle()
    assert output(api, ref) == [1, 2]

    with pytest.raises(InvalidTransition, match="already complete"):
        api.trigger(workflow_event("6b6b0000-0000-4000-8000-000000000003", "done", 3))
    assert stored(api, ref) == [1, 2]


# --- AWS errors while delivering --------------------------------------------------------------


def test_a_throttled_delivery_stores_nothing_and_its_retry_delivers_once(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a waiting instance, and DynamoDB throttling the event's transaction
    ref = waiting(api, "throttled")
    faults = Faults.on(api.env.aws.runtime)
    faults.arm("dynamodb.TransactWriteItems", "throttle")
    event = workflow_event("8c8c0000-0000-4000-8000-000000000001", "throttled", "one")
    capsys.readouterr()
    # WHEN the event arrives: the invocation fails (Lambda retries it), nothing stored
    with pytest.raises(StorageError):
        api.trigger(event)
    assert faults.fired("dynamodb.TransactWriteItems") == 1
    assert stored(api, ref) == []
    [line] = [e for e in log_lines(capsys.readouterr().out) if e["level"] == "WARNING"]
    assert "Lambda retries it" in line["message"]
    # THEN Lambda's retry (the same event) delivers it, once
    api.trigger(event)
    api.trigger(event)
    api.trigger(workflow_event("8c8c0000-0000-4000-8000-000000000002", "throttled", "two"))
    api.env.run_until_idle()
    assert output(api, ref) == ["one", "two"]
    assert stored(api, ref) == ["one", "two"]


def test_a_delivery_that_timed_out_after_its_commit_is_retried_without_a_second_event(
    api: Api,
) -> None:
    # GIVEN a waiting instance, and the event's transaction committing but timing out
    ref = waiting(api, "ambiguous")
    faults = Faults.on(api.env.aws.runtime)
    faults.arm("dynamodb.TransactWriteItems", "timeout")
    event = workflow_event("8d8d0000-0000-4000-8000-000000000001", "ambiguous", "one")
    with pytest.raises(StorageError):
        api.trigger(event)
    assert stored(api, ref) == ["one"]  # it did commit; the invocation saw an error
    # WHEN Lambda retries the event
    retried = api.trigger(event)
    # THEN it finds the stored event: still one
    assert retried["event_id"] == api.env.store.load(ref).events[0].id
    assert stored(api, ref) == ["one"]
    # and the instance, never woken by the failed invocation, is due: the sweep wakes it
    api.env.clock.advance(SWEEP_MARGIN + 1)
    assert sweep.make_handler(api.env.aws.runtime)({}, None)["requeued"] >= 1
    api.env.run_until_idle()
    [first] = [
        row for row in api.env.get("votes", "ambiguous").status().steps if row.name == "first"
    ]
    assert first.status == "complete"
    api.trigger(workflow_event("8d8d0000-0000-4000-8000-000000000002", "ambiguous", "two"))
    api.env.run_until_idle()
    assert output(api, ref) == ["one", "two"]


# --- end to end through EventBridge ---------------------------------------------------------


def template_patterns() -> dict[str, dict[str, Any]]:
    """TriggerFunction's two EventBridge rules' patterns, as deployed with the defaults."""
    template = load_template()
    events = template["Resources"]["TriggerFunction"]["Properties"]["Events"]
    values = Values(refs=parameter_defaults(template))
    return {
        name: resolve(events[name]["Properties"]["Pattern"], values)
        for name in ("TriggerEvents", "WorkflowEvents")
    }


def test_an_event_put_on_the_bus_reaches_the_instance_through_its_rule(api: Api) -> None:
    # GIVEN the template's two rules on moto's EventBridge, each sending to a queue (as the
    # Lambda target would get the event)
    session = api.env.aws.session
    events, sqs = session.client("events"), session.client("sqs")
    queues = {}
    for name, pattern in template_patterns().items():
        url = sqs.create_queue(QueueName=f"rule-{name}")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        events.put_rule(Name=name, EventPattern=json.dumps(pattern))
        events.put_targets(Rule=name, Targets=[{"Id": "q", "Arn": arn["Attributes"]["QueueArn"]}])
        queues[name] = url
    ref = waiting(api, "via-bus")
    # WHEN a producer puts two votes as the docs show (aws events put-events)
    for vote in ("first", "second"):
        detail = {"workflow": "votes", "instance_id": "via-bus", "type": "vote", "payload": vote}
        entry = {"Source": "workflows.trigger", "DetailType": "Workflow Event"}
        events.put_events(Entries=[{**entry, "Detail": json.dumps(detail)}])
    # THEN only the WorkflowEvents rule matched them, and handing what it delivered to
    # TriggerFunction (each twice: at-least-once) delivers each vote once, in order
    assert "Messages" not in sqs.receive_message(QueueUrl=queues["TriggerEvents"])
    received = sqs.receive_message(QueueUrl=queues["WorkflowEvents"], MaxNumberOfMessages=10)
    delivered = [json.loads(m["Body"]) for m in received["Messages"]]
    assert [d["detail"]["payload"] for d in delivered] == ["first", "second"]
    for event in delivered:
        api.trigger(event)
        api.trigger(event)
    api.env.run_until_idle()
    assert output(api, ref) == ["first", "second"]
    assert stored(api, ref) == ["first", "second"]


def test_a_wake_up_the_queue_refused_is_posted_by_the_sweep(api: Api) -> None:
    # GIVEN a waiting instance, and Lambda then SQS throttling the wake-up that follows the
    # event's commit (the direct invoke, then the work message it falls back to)
    ref = waiting(api, "unwoken")
    faults = Faults.on(api.env.aws.runtime)
    faults.arm("lambda.Invoke", "throttle")
    faults.arm("sqs.SendMessage", "throttle")
    # WHEN the event arrives: it is stored, and the invocation succeeds (no Lambda retry)
    api.trigger(workflow_event("8e8e0000-0000-4000-8000-000000000001", "unwoken", "one"))
    assert faults.fired("sqs.SendMessage") == 1
    assert stored(api, ref) == ["one"]
    # THEN the sweep posts the wake-up, and the instance receives the event once
    api.env.clock.advance(SWEEP_MARGIN + 1)
    assert sweep.make_handler(api.env.aws.runtime)({}, None)["requeued"] >= 1
    api.env.run_until_idle()
    api.trigger(workflow_event("8e8e0000-0000-4000-8000-000000000002", "unwoken", "two"))
    api.env.run_until_idle()
    assert output(api, ref) == ["one", "two"]
