"""What an instance leaves behind is deleted once TTL removed its instance item
(lambda_workflows.aws.reaper, fed by SweepFunction's ExpiredInstances stream event), and nothing
else.

moto never expires an item by TTL and does not serve the table's stream, so a test expires the
instance item as TTL does (reads its last image, then deletes it) and hands SweepFunction the
record DynamoDB Streams would: a REMOVE by ``dynamodb.amazonaws.com`` with the old image.
"""

from __future__ import annotations

import os
import secrets
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.items import JOURNAL_HORIZON
from lambda_workflows.aws.reaper import CLOCK_MARGIN
from lambda_workflows.local.embedded import LambdaContext
from lambda_workflows.testing import WorkflowTestEnv
from tests.infra.test_least_privilege import granted

os.environ.setdefault("WORKFLOWS", "")


class Ordered(WorkflowEntrypoint):
    """Three steps, one of them too large to store inline (chunk items), then an event."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("reserve", lambda: {"sku": "a-1"})
        await step.do("label", lambda: secrets.token_hex(400_000))  # chunked: over an item
        approved = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return await step.do("ship", lambda: {"approved": approved.payload})


@pytest.fixture
def env() -> Iterator[WorkflowTestEnv]:
    with WorkflowTestEnv({"orders": Ordered}, backend="aws") as made:
        yield made


def finish(env: WorkflowTestEnv, instance_id: str) -> None:
    instance = env.create("orders", id=instance_id)
    env.run_until_idle()
    instance.send_event(type="approved", payload={"by": "ops"})
    env.run_until_idle()
    assert instance.status()["status"] == "complete"


def partition(env: WorkflowTestEnv, instance_id: str) -> list[str]:
    client = env.aws.session.client("dynamodb")
    found = client.query(
        TableName=env.aws.settings.table_name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"I#orders#{instance_id}"}},
    )
    return [item["sk"]["S"] for item in found["Items"]]


def expire(env: WorkflowTestEnv, instance_id: str, sequence: str = "100") -> dict[str, Any]:
    """Remove the instance item as TTL does; the stream record DynamoDB would emit."""
    client = env.aws.session.client("dynamodb")
    key = {"pk": {"S": f"I#orders#{instance_id}"}, "sk": {"S": "I"}}
    table = env.aws.settings.table_name
    old = client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
    assert float(old["expires_at"]["N"]) > 0  # finished: it has a TTL
    client.delete_item(TableName=table, Key=key)
    return {
        "eventID": f"e-{sequence}",
        "eventName": "REMOVE",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
        "dynamodb": {
            "Keys": key,
            "OldImage": old,
            "SequenceNumber": sequence,
            "SizeBytes": 512,
            "StreamViewType": "OLD_IMAGE",
        },
    }


def sweep(env: WorkflowTestEnv, *records: dict[str, Any]) -> dict[str, Any]:
    """SweepFunction's handler, on this stack, given the stream's records."""
    from lambda_workflows.entrypoints.sweep import make_handler

    handler = make_handler(env.aws.runtime)
    return handler({"Records": list(records)}, LambdaContext("SweepFunction"))


def count_calls(env: WorkflowTestEnv) -> Counter[str]:
    calls: Counter[str] = Counter()
    env.aws.runtime.store.client.meta.events.register(
        "before-call.dynamodb", lambda model, **_: calls.update([model.name])
    )
    return calls


def test_an_expired_instance_leaves_nothing_behind(env: WorkflowTestEnv) -> None:
    # GIVEN a finished instance: journal entries, chunks, an event, its idempotency-free mailbox
    finish(env, "o-1")
    left = [sk for sk in partition(env, "o-1") if sk != "I"]
    assert any(sk.startswith("J#") for sk in left) and any(sk.startswith("E#") for sk in left)
    assert any("\x1dc" in sk for sk in left)  # a chunk of the large step result
    calls = count_calls(env)

    # WHEN TTL removes its instance item and the sweep gets the stream's record
    answer = sweep(env, expire(env, "o-1"))

    # THEN every item it left is deleted: one Query, one conditional delete per item
    assert answer == {"batchItemFailures": []}
    assert partition(env, "o-1") == []
    assert calls == Counter({"Query": 1, "DeleteItem": len(left)})


def test_a_new_instance_with_the_same_id_keeps_every_item_it_wrote(
    env: WorkflowTestEnv,
) -> None:
    # GIVEN an instance that finished, expired and was removed, and then a new instance with
    # the same id, created after that, waiting for its event
    finish(env, "o-2")
    old = set(partition(env, "o-2")) - {"I"}
    env.clock.advance(31 * 86_400)  # past its retention
    record = expire(env, "o-2")
    env.clock.advance(60)
    again = env.create("orders", id="o-2")
    env.run_until_idle()
    assert again.status()["status"] == "waiting"
    mine = set(partition(env, "o-2")) - old
    assert "I" in mine and any(sk.startswith("J#") for sk in mine)

    # WHEN the removal's record is reaped (late, as streams may be)
    assert sweep(env, record) == {"batchItemFailures": []}

    # THEN only the old instance's items went: the new one's are all there, and it finishes
    assert set(partition(env, "o-2")) == mine
    again.send_event(type="approved", payload={"by": "ops"})
    env.run_until_idle()
    assert again.status()["status"] == "complete"


def test_only_ttl_removals_of_instance_items_are_reaped(env: WorkflowTestEnv) -> None:
    finish(env, "o-3")
    left = partition(env, "o-3")
    record = expire(env, "o-3")
    by_a_user = {**record, "userIdentity": None}
    not_the_instance = {
        **record,
        "dynamodb": {
            **record["dynamodb"],
            "Keys": {**record["dynamodb"]["Keys"], "sk": {"S": "E#1"}},
        },
    }
    written = {**record, "eventName": "MODIFY"}

    assert sweep(env, by_a_user, not_the_instance, written) == {"batchItemFailures": []}

    assert partition(env, "o-3") == [sk for sk in left if sk != "I"]


def test_a_throttled_delete_reports_the_record_for_a_retry_that_finishes_it(
    env: WorkflowTestEnv,
) -> None:
    # GIVEN a finished instance, and DynamoDB throttling the second delete
    finish(env, "o-4")
    record = expire(env, "o-4", sequence="4242")
    deletes = []

    def throttle_second(**_: Any) -> None:
        deletes.append(1)
        if len(deletes) == 2:
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow"}},
                "DeleteItem",
            )

    env.aws.runtime.store.client.meta.events.register(
        "before-call.dynamodb.DeleteItem", throttle_second
    )

    # WHEN the sweep reaps it
    answer = sweep(env, record)

    # THEN the record is reported for a retry (the others' deletes landed), nothing raised
    assert answer == {"batchItemFailures": [{"itemIdentifier": "4242"}]}
    assert len(partition(env, "o-4")) == 1
    # and the event source mapping's retry deletes the rest
    assert sweep(env, record) == {"batchItemFailures": []}
    assert partition(env, "o-4") == []


def test_the_cut_is_the_removed_items_ttl_plus_the_journal_horizon_less_a_clock_margin(
    env: WorkflowTestEnv,
) -> None:
    # GIVEN two items of the partition written (by their TTL) around the cut: one just below,
    # one at it (as if written by a new instance on a clock CLOCK_MARGIN behind DynamoDB's,
    # right when the removed instance item expired)
    finish(env, "o-5")
    record = expire(env, "o-5")
    expired = float(record["dynamodb"]["OldImage"]["expires_at"]["N"])
    cut = expired + JOURNAL_HORIZON - CLOCK_MARGIN
    client = env.aws.session.client("dynamodb")
    for sk, ttl in (("E#below", cut - 1), ("E#at", cut)):
        client.put_item(
            TableName=env.aws.settings.table_name,
            Item={"pk": {"S": "I#orders#o-5"}, "sk": {"S": sk}, "expires_at": {"N": str(ttl)}},
        )

    sweep(env, record)

    assert partition(env, "o-5") == ["E#at"]


def test_an_item_rewritten_by_a_new_instance_between_the_read_and_the_delete_is_kept(
    env: WorkflowTestEnv,
) -> None:
    # GIVEN an expired instance, and a new instance writing one of its keys again (its
    # instance item's chunk, an idempotency marker) just before the reaper deletes that key
    finish(env, "o-6")
    record = expire(env, "o-6")
    later = float(record["dynamodb"]["OldImage"]["expires_at"]["N"]) + JOURNAL_HORIZON + 60
    client = env.aws.runtime.store.client
    rewritten: list[dict[str, Any]] = []

    def rewrite_first(params: dict[str, Any], **_: Any) -> None:
        if not rewritten:
            rewritten.append(params["Key"])
            item = {**params["Key"], "expires_at": {"N": str(later)}}
            env.aws.session.client("dynamodb").put_item(TableName=params["TableName"], Item=item)

    client.meta.events.register("before-parameter-build.dynamodb.DeleteItem", rewrite_first)

    # WHEN the sweep reaps it
    assert sweep(env, record) == {"batchItemFailures": []}

    # THEN the rewritten item is the only one left
    assert partition(env, "o-6") == [rewritten[0]["sk"]["S"]]


def test_reaping_calls_only_what_sweep_functions_policy_grants(env: WorkflowTestEnv) -> None:
    finish(env, "o-7")
    record = expire(env, "o-7")
    actions = {f"dynamodb:{name}" for name in count_calls_of(env, lambda: sweep(env, record))}

    assert actions == {"dynamodb:Query", "dynamodb:DeleteItem"}
    missing = actions - granted("SweepFunction")
    assert not missing, f"SweepFunction called {sorted(missing)}, which its policy lacks"


def count_calls_of(env: WorkflowTestEnv, work: Any) -> Counter[str]:
    calls = count_calls(env)
    work()
    return calls


# --- paging: a bounded amount of work per invocation ------------------------------------------


def scheduled_sweep(env: WorkflowTestEnv) -> dict[str, Any]:
    """SweepFunction's handler on its 5-minute schedule."""
    from lambda_workflows.entrypoints.sweep import make_handler

    handler = make_handler(env.aws.runtime)
    return handler({"source": "aws.events"}, LambdaContext("SweepFunction"))


def parked(env: WorkflowTestEnv) -> list[dict[str, Any]]:
    """The markers of partitions left for the scheduled sweeps."""
    client = env.aws.session.client("dynamodb")
    found = client.scan(TableName=env.aws.settings.table_name)["Items"]
    return [item for item in found if item["pk"]["S"].startswith("R#")]


@pytest.fixture
def budget(monkeypatch: pytest.MonkeyPatch) -> int:
    """Four deletes per invocation (the real budget, 20,000, is the same code path)."""
    from lambda_workflows.entrypoints import sweep as sweep_function

    monkeypatch.setattr(sweep_function, "REAP_BUDGET", 4)
    return 4


def test_a_partition_larger_than_the_budget_is_reaped_across_invocations(
    env: WorkflowTestEnv, budget: int
) -> None:
    # GIVEN an expired instance that left more items than one invocation deletes
    finish(env, "o-8")
    left = len(partition(env, "o-8")) - 1
    assert left > budget + 1
    record = expire(env, "o-8")
    calls = count_calls(env)

    # WHEN the sweep gets its stream record
    assert sweep(env, record) == {"batchItemFailures": []}

    # THEN it made the budget's deletes and parked the rest (one marker)
    assert calls["DeleteItem"] == budget
    assert len(partition(env, "o-8")) == left - budget
    assert len(parked(env)) == 1

    # AND each scheduled run goes on a budget at a time, and the last removes the marker
    runs = 0
    while remaining := len(partition(env, "o-8")):
        env.clock.advance(300)
        scheduled_sweep(env)
        assert remaining - len(partition(env, "o-8")) == min(budget, remaining)
        runs += 1
    assert runs == -(-(left - budget) // budget)
    assert parked(env) == []


def test_records_past_the_budget_are_parked_untouched(env: WorkflowTestEnv, budget: int) -> None:
    # GIVEN two expired instances in one batch of stream records
    finish(env, "o-9")
    finish(env, "o-10")
    first, second = expire(env, "o-9", "9"), expire(env, "o-10", "10")
    untouched = partition(env, "o-10")
    calls = count_calls(env)

    # WHEN the first uses the whole budget
    assert sweep(env, first, second) == {"batchItemFailures": []}

    # THEN the second is parked without a read or a delete, and a later run reaps it
    assert calls["DeleteItem"] == budget and calls["Query"] == 1
    assert partition(env, "o-10") == untouched
    assert len(parked(env)) == 2
    for _ in range(10):
        env.clock.advance(300)
        scheduled_sweep(env)
    assert partition(env, "o-9") == partition(env, "o-10") == []
    assert parked(env) == []


def test_a_record_that_could_not_be_parked_is_reported_for_a_retry(
    env: WorkflowTestEnv, budget: int
) -> None:
    finish(env, "o-11")
    record = expire(env, "o-11", sequence="1111")

    def throttle_marker(params: dict[str, Any], **_: Any) -> None:
        if params.get("Item", {}).get("sk", {}).get("S") == "R":
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "PutItem"
            )

    env.aws.runtime.store.client.meta.events.register(
        "before-parameter-build.dynamodb.PutItem", throttle_marker
    )

    assert sweep(env, record) == {"batchItemFailures": [{"itemIdentifier": "1111"}]}
    assert parked(env) == []


def test_a_parked_partition_whose_turn_fails_stays_parked(
    env: WorkflowTestEnv, budget: int
) -> None:
    finish(env, "o-12")
    sweep(env, expire(env, "o-12"))
    assert len(parked(env)) == 1
    throttled: list[int] = []

    def throttle_deletes(**_: Any) -> None:
        throttled.append(1)
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "x")

    client = env.aws.runtime.store.client
    client.meta.events.register("before-call.dynamodb.DeleteItem", throttle_deletes)
    env.clock.advance(300)
    scheduled_sweep(env)  # does not raise: recovery and schedules still ran
    assert throttled and len(parked(env)) == 1

    client.meta.events.unregister("before-call.dynamodb.DeleteItem", throttle_deletes)
    for _ in range(10):
        env.clock.advance(300)
        scheduled_sweep(env)
    assert partition(env, "o-12") == [] and parked(env) == []


def test_parked_reaping_calls_only_what_sweep_functions_policy_grants(
    env: WorkflowTestEnv, budget: int
) -> None:
    finish(env, "o-13")
    record = expire(env, "o-13")

    def reap() -> None:
        sweep(env, record)
        env.clock.advance(300)
        scheduled_sweep(env)

    actions = {f"dynamodb:{name}" for name in count_calls_of(env, reap)}

    assert {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:DeleteItem"} <= actions
    missing = actions - granted("SweepFunction")
    assert not missing, f"SweepFunction called {sorted(missing)}, which its policy lacks"
