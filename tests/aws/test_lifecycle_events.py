"""Instances' lifecycle events reach an EventBridge bus from the table's stream
(LifecycleEventsFunction, lambda_workflows.entrypoints.lifecycle), each transition at least once,
in order per instance, under ids that make duplicates droppable.

All on moto: the table's stream is moto's (dynamodbstreams GetRecords, with the template's
view type), the bus, a rule on it and the SQS queue it targets are moto's. Lambda's event
source mapping is emulated by :func:`deliver`: batches in the stream's order, retried from the
first record a batch reports as failed (what Lambda does with ReportBatchItemFailures).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError, ReadTimeoutError

from lambda_workflows import NonRetryableError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.eventbridge import EventBridgePublisher
from lambda_workflows.engine.instances.lifecycle import SOURCE
from lambda_workflows.entrypoints.lifecycle import make_handler
from lambda_workflows.infra.template import load_template, resource
from lambda_workflows.local.embedded import LambdaContext
from lambda_workflows.testing import TestInstance, WorkflowTestEnv
from tests.infra.test_least_privilege import granted

os.environ.setdefault("WORKFLOWS", "")

BUS = "lifecycle"
Record = dict[str, Any]
Event = dict[str, Any]


class Journey(WorkflowEntrypoint):
    """A step, a sleep, an event wait, a step: every kind of suspension."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("reserve", lambda: {"sku": "a-1"})
        await step.sleep("cool down", "1 hour")
        approved = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return await step.do("ship", lambda: {"by": approved.payload["by"]})


class Failing(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def charge() -> None:
            raise NonRetryableError("card declined")

        await step.do("charge", charge)


class Stack:
    """A stack on moto with its table's stream on, a bus, a rule for lifecycle events to an
    SQS queue, and the LifecycleEventsFunction handler on that bus."""

    def __init__(self, env: WorkflowTestEnv, *, steps: bool = False) -> None:
        self.env = env
        session = env.aws.session
        table = env.aws.settings.table_name
        # The stream as template.yaml declares it (moto's provisioning leaves it off)
        view = resource(load_template(), "Table")["Properties"]["StreamSpecification"]
        dynamodb = session.client("dynamodb")
        dynamodb.update_table(TableName=table, StreamSpecification={"StreamEnabled": True, **view})
        self.stream_arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        self.streams = session.client("dynamodbstreams")
        self.iterator: str | None = None
        self.events = session.client("events")
        self.sqs = session.client("sqs")
        self.queue_url = self._rule_to_queue()
        self.pauses: list[float] = []
        self.publisher = EventBridgePublisher(self.events, BUS, pause=self.pauses.append)
        self.handler = make_handler(self.publisher, steps=steps)

    def _rule_to_queue(self) -> str:
        self.events.create_event_bus(Name=BUS)
        url = self.sqs.create_queue(QueueName="lifecycle-events")["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        self.events.put_rule(
            Name="all-lifecycle-events",
            EventBusName=BUS,
            EventPattern=json.dumps({"source": [SOURCE]}),
        )
        self.events.put_targets(
            Rule="all-lifecycle-events",
            EventBusName=BUS,
            Targets=[{"Id": "queue", "Arn": arn["Attributes"]["QueueArn"]}],
        )
        return str(url)

    def records(self) -> list[Record]:
        """The stream's records written since the last call, in order."""
        if self.iterator is None:
            shard = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
            self.iterator = self.streams.get_shard_iterator(
                StreamArn=self.stream_arn,
                ShardId=shard["Shards"][0]["ShardId"],
                ShardIteratorType="TRIM_HORIZON",
            )["ShardIterator"]
        found: list[Record] = []
        while True:
            page = self.streams.get_records(ShardIterator=self.iterator, Limit=1000)
            self.iterator = page["NextShardIterator"]
            if not page["Records"]:
                return found
            found += page["Records"]

    def deliver(self, records: list[Record], batch_size: int = 25) -> int:
        """Hand ``records`` to the handler as the event source mapping would; the batches'
        retries (a reported record and every one after it, again)."""
        position, retries = 0, 0
        while position < len(records):
            batch = records[position : position + batch_size]
            answer = self.handler({"Records": batch}, LambdaContext("LifecycleEventsFunction"))
            failed = [int(item["itemIdentifier"]) for item in answer["batchItemFailures"]]
            if not failed:
                position += len(batch)
                continue
            retries += 1
            assert retries < 50, "the same records keep failing"
            position = next(
                i
                for i, r in enumerate(records)
                if int(r["dynamodb"]["SequenceNumber"]) == min(failed)
            )
        return retries

    def arrived(self) -> list[Event]:
        """Every event the rule delivered to the queue so far, in arrival order."""
        found: list[Event] = []
        while True:
            page = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10)
            messages = page.get("Messages", [])
            if not messages:
                return found
            for message in messages:
                found.append(json.loads(message["Body"]))
                self.sqs.delete_message(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )


@pytest.fixture
def env() -> Iterator[WorkflowTestEnv]:
    with WorkflowTestEnv({"journey": Journey, "failing": Failing}, backend="aws") as made:
        yield made


@pytest.fixture
def stack(env: WorkflowTestEnv) -> Stack:
    return Stack(env)


def journey(env: WorkflowTestEnv, *instance_ids: str) -> TestInstance:
    """Instances of Journey run together (their writes interleave) through JOURNEY: queued,
    started, waiting (the sleep), started, waiting (the event), paused, resumed, started,
    waiting (the event), started, complete. The last one's handle."""
    instances = [env.create("journey", id=instance_id) for instance_id in instance_ids]
    env.run_until_idle()  # through the sleep, to the event wait
    for instance in instances:
        instance.pause()
    for instance in instances:
        instance.resume()
    env.run_until_idle()
    for instance in instances:
        instance.send_event(type="approved", payload={"by": "ops"})
    env.run_until_idle()
    assert {instance.status()["status"] for instance in instances} == {"complete"}
    return instances[-1]


JOURNEY = [
    "instance.queued",
    "instance.started",
    "instance.waiting",
    "instance.started",
    "instance.waiting",
    "instance.paused",
    "instance.resumed",
    "instance.started",
    "instance.waiting",
    "instance.started",
    "instance.complete",
]


def by_instance(events: list[Event]) -> dict[str, list[Event]]:
    """Each instance's events, duplicates dropped by ``detail.id`` (as a consumer does), in
    the order they first arrived."""
    seen: set[str] = set()
    found: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        if event["detail"]["id"] not in seen:
            seen.add(event["detail"]["id"])
            found[event["detail"]["instance_id"]].append(event)
    return dict(found)


def types(events: list[Event]) -> list[str]:
    return [event["detail-type"] for event in events]


def test_every_transition_of_each_instance_arrives_once_in_order(
    env: WorkflowTestEnv, stack: Stack
) -> None:
    # GIVEN an instance through every status, one that errors and one terminated while waiting
    journey(env, "j-1")
    env.create("failing", id="f-1")
    env.run_until_idle()
    waiting = env.create("journey", id="t-1")
    env.run_until_idle()
    waiting.terminate()

    # WHEN the table's stream is delivered to the function, in batches
    assert stack.deliver(stack.records()) == 0

    # THEN each transition arrived once, in order per instance
    arrived = stack.arrived()
    assert len({event["detail"]["id"] for event in arrived}) == len(arrived)
    events = by_instance(arrived)
    assert types(events["j-1"]) == JOURNEY
    assert types(events["f-1"]) == ["instance.queued", "instance.started", "instance.errored"]
    assert types(events["t-1"]) == [*JOURNEY[:5], "instance.terminated"]
    for shown in events.values():
        versions = [event["detail"]["version"] for event in shown]
        # in the order of the writes; a runner's pass without a lease is one write of two
        # events (instance.started, then where it left the instance), so a version may repeat
        assert versions == sorted(versions)


def test_an_event_says_what_moved_from_where_under_the_eventbridge_envelope(
    env: WorkflowTestEnv, stack: Stack
) -> None:
    env.create("failing", id="f-2")
    env.run_until_idle()

    stack.deliver(stack.records())

    queued, started, errored = by_instance(stack.arrived())["f-2"]
    assert queued["source"] == SOURCE == "lambda-workflows"
    assert queued["detail-type"] == queued["detail"]["type"] == "instance.queued"
    record = env.service.get(env.get("failing", "f-2").ref)
    created_ms = int(record.created_at * 1000)
    assert queued["detail"] == {
        "id": f"failing/f-2/{created_ms}/v1",
        "type": "instance.queued",
        "workflow": "failing",
        "instance_id": "f-2",
        "status": "queued",
        "previous_status": None,
        "version": 1,
        "workflow_version": "1",
        "timestamp": "2025-01-01T00:00:00.000Z",
    }
    assert started["detail"]["previous_status"] == "queued"
    assert errored["detail"]["previous_status"] == "running"
    assert errored["detail"]["error"] == {"name": "NonRetryableError", "message": "card declined"}
    assert errored["time"] == "2025-01-01T00:00:00Z"  # the transition's time, not the publication's


def test_a_redelivered_batch_publishes_the_same_ids(env: WorkflowTestEnv, stack: Stack) -> None:
    journey(env, "j-2")
    records = stack.records()
    stack.deliver(records)
    first = [event["detail"]["id"] for event in stack.arrived()]

    # WHEN the stream delivers the same records again (a retried batch)
    stack.deliver(records)

    # THEN the same events are published under the same ids: a consumer drops all of them
    assert [event["detail"]["id"] for event in stack.arrived()] == first
    assert len(first) == len(JOURNEY)


def test_entries_put_events_rejects_are_retried_and_nothing_overtakes_them(
    env: WorkflowTestEnv, stack: Stack
) -> None:
    # GIVEN two instances' interleaved transitions, and EventBridge rejecting j-3's first
    # event (a ThrottlingException for that entry alone: j-4's, put with it, is published)
    # the first three times it is put
    journey(env, "j-3", "j-4")
    rejected = RejectEntries(
        stack, lambda detail: (detail["instance_id"], detail["version"]) == ("j-3", 1), times=3
    )

    # WHEN the stream is delivered
    retries = stack.deliver(stack.records())

    # THEN the entry was put again twice in the invocation, after a pause each time; then the
    # batch reported it, and the retry from it published it
    assert rejected.count == 3 and stack.pauses[:2] == [0.1, 0.2] and retries == 1
    # AND every transition arrived, in order: none of j-3's before its first, and j-4's
    # first, published with it, again under the same id
    arrived = stack.arrived()
    events = by_instance(arrived)
    assert types(events["j-3"]) == types(events["j-4"]) == JOURNEY
    j3_versions = [e["detail"]["version"] for e in arrived if e["detail"]["instance_id"] == "j-3"]
    assert j3_versions[:2] == [1, 2]
    j4_first = [e for e in arrived if e["detail"]["id"] == events["j-4"][0]["detail"]["id"]]
    assert len(j4_first) == 2


def test_a_throttled_put_is_retried_in_the_invocation(env: WorkflowTestEnv, stack: Stack) -> None:
    # GIVEN EventBridge throttling the first PutEvents call as a whole (past botocore's retries)
    journey(env, "j-5")
    calls = FailCalls(
        stack,
        ClientError(
            {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "PutEvents"
        ),
        times=1,
    )

    # WHEN the stream is delivered
    assert stack.deliver(stack.records()) == 0

    # THEN the call was made again after a pause, and nothing was published twice
    assert calls.failed == 1 and stack.pauses == [0.1]
    arrived = stack.arrived()
    assert types(arrived) == JOURNEY


def test_a_put_that_timed_out_after_it_succeeded_publishes_duplicates_with_the_same_ids(
    env: WorkflowTestEnv, stack: Stack
) -> None:
    # GIVEN a PutEvents whose answer is lost after EventBridge took the events
    journey(env, "j-6")
    FailCalls(stack, ReadTimeoutError(endpoint_url="https://events"), times=1, after=True)

    stack.deliver(stack.records())

    # THEN some events arrived twice, under the same ids; deduplicated, each is there once
    arrived = stack.arrived()
    assert len(arrived) > len(JOURNEY)
    assert types(by_instance(arrived)["j-6"]) == JOURNEY


def test_a_publication_that_keeps_failing_reports_its_first_record(
    env: WorkflowTestEnv, stack: Stack
) -> None:
    # GIVEN EventBridge refusing every call (a deleted bus, a denied action)
    journey(env, "j-7")
    records = stack.records()
    FailCalls(
        stack,
        ClientError(
            {"Error": {"Code": "ResourceNotFoundException", "Message": "no bus"}}, "PutEvents"
        ),
        times=1000,
    )

    answer = stack.handler({"Records": records}, LambdaContext("LifecycleEventsFunction"))

    # THEN the first record is reported: the stream retries all of them, nothing is lost
    assert answer == {
        "batchItemFailures": [{"itemIdentifier": records[0]["dynamodb"]["SequenceNumber"]}]
    }
    assert stack.arrived() == []


def test_writes_that_move_no_status_publish_nothing(env: WorkflowTestEnv, stack: Stack) -> None:
    # GIVEN an instance waiting for its event, sent one it does not wait for (its item's
    # version moves, its status does not), then deleted once terminated (a tombstone)
    instance = env.create("journey", id="q-1")
    env.run_until_idle()
    stack.deliver(stack.records())
    before = len(stack.arrived())
    instance.send_event(type="unrelated", payload={})
    instance.terminate()
    instance.delete()

    stack.deliver(stack.records())

    assert types(stack.arrived()) == ["instance.terminated"]
    assert before == 5


def test_step_events_are_published_only_when_asked_and_never_for_a_restarts_copies(
    env: WorkflowTestEnv,
) -> None:
    stack = Stack(env, steps=True)
    instance = journey(env, "s-1")
    env.create("failing", id="s-2")
    env.run_until_idle()
    # a restart from "ship" copies "reserve"'s result into the new run: that step does not run
    instance.restart(from_step={"name": "ship"})
    env.run_until_idle()

    stack.deliver(stack.records())

    events = by_instance(stack.arrived())
    steps = [
        (e["detail-type"], e["detail"].get("step"))
        for e in events["s-1"]
        if e["detail-type"].startswith("step.")
    ]
    assert steps == [
        ("step.completed", {"name": "reserve", "count": 1}),
        ("step.completed", {"name": "ship", "count": 1}),
        ("step.completed", {"name": "ship", "count": 1}),  # ran again after the restart
    ]
    failed = [e for e in events["s-2"] if e["detail-type"] == "step.failed"]
    assert [e["detail"]["error"]["message"] for e in failed] == ["card declined"]
    assert types(events["s-2"]).index("step.failed") < types(events["s-2"]).index(
        "instance.errored"
    )
    restarted = types(events["s-1"])[len(JOURNEY) + 2 :]
    assert restarted[0] == "instance.queued"


def test_without_step_events_journal_records_publish_nothing(
    env: WorkflowTestEnv, stack: Stack
) -> None:
    journey(env, "s-3")
    stack.deliver(stack.records())
    assert not [e for e in stack.arrived() if e["detail-type"].startswith("step.")]


def test_publishing_calls_only_what_lifecycle_events_functions_policy_grants(
    env: WorkflowTestEnv, stack: Stack
) -> None:
    journey(env, "p-1")
    actions: set[str] = set()
    stack.events.meta.events.register(
        "before-call.events", lambda model, **_: actions.add(f"events:{model.name}")
    )

    stack.deliver(stack.records())

    assert actions == {"events:PutEvents"}
    assert not actions - granted("LifecycleEventsFunction")


class RejectEntries:
    """EventBridge answering the entries ``rejects`` picks with a ThrottlingException (and not
    publishing them), the first ``times`` times; the call's other entries are published (by
    moto, through a client of its own) and answered with their event ids."""

    def __init__(self, stack: Stack, rejects: Callable[[dict[str, Any]], bool], times: int) -> None:
        self.rejects, self.times, self.count = rejects, times, 0
        self.moto = stack.env.aws.session.client("events")
        stack.events.meta.events.register("before-call.events.PutEvents", self._answer)

    def _answer(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        results = []
        for entry in json.loads(params["body"])["Entries"]:
            if self.count < self.times and self.rejects(json.loads(entry["Detail"])):
                self.count += 1
                results.append({"ErrorCode": "ThrottlingException", "ErrorMessage": "slow down"})
            else:
                results += self.moto.put_events(Entries=[entry])["Entries"]
        failed = sum("ErrorCode" in result for result in results)
        answer = {"FailedEntryCount": failed, "Entries": results}
        return AWSResponse("https://events.us-east-1.amazonaws.com", 200, {}, None), answer


class FailCalls:
    """PutEvents raising ``error`` ``times`` times: before the call (nothing published), or
    after it (published, but the answer lost)."""

    def __init__(self, stack: Stack, error: Exception, times: int, after: bool = False) -> None:
        self.error, self.times, self.failed = error, times, 0
        when = "after-call" if after else "before-call"
        stack.events.meta.events.register(f"{when}.events.PutEvents", self._fail)

    def _fail(self, **_: Any) -> None:
        if self.failed < self.times:
            self.failed += 1
            raise self.error


def test_the_reaper_still_reads_ttl_removals_from_the_stream_with_both_images(
    env: WorkflowTestEnv, stack: Stack
) -> None:
    # GIVEN a finished instance, and TTL removing its instance item (moto's stream record of
    # the removal, as DynamoDB's TTL signs it)
    env.create("failing", id="r-1")
    env.run_until_idle()
    stack.records()
    table = env.aws.settings.table_name
    client = env.aws.session.client("dynamodb")
    client.delete_item(TableName=table, Key={"pk": {"S": "I#failing#r-1"}, "sk": {"S": "I"}})
    (removal,) = stack.records()
    assert removal["dynamodb"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert "OldImage" in removal["dynamodb"] and "NewImage" not in removal["dynamodb"]
    removal["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

    # WHEN SweepFunction and LifecycleEventsFunction both get it
    from lambda_workflows.entrypoints.sweep import make_handler as sweep_handler

    reaped = sweep_handler(env.aws.runtime)({"Records": [removal]}, LambdaContext("Sweep"))
    published = stack.handler({"Records": [removal]}, LambdaContext("LifecycleEventsFunction"))

    # THEN the reaper deleted what the instance left, and no lifecycle event was published
    assert reaped == published == {"batchItemFailures": []}
    left = client.query(
        TableName=table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "I#failing#r-1"}},
    )
    assert left["Items"] == []
    assert stack.arrived() == []
