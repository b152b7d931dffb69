"""A delete always finishes: whatever call of it fails (throttled, unreachable, timed out after
it happened), whatever DynamoDB leaves unprocessed, whatever a runner that was mid-step writes
after it, the instance's partition ends up holding its tombstone and nothing else (what
docs/operations.md names). A delete cut short is completed by the client's retry, which
succeeds, and by the recovery sweep. Faults are injected into the real adapters (botocore
event hooks) on moto.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from collections import Counter
from typing import Any

import pytest

from lambda_workflows import InstanceNotFound, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws import deletes
from lambda_workflows.engine.errors import InfrastructureError
from lambda_workflows.engine.instances.deletion import SETTLE_SECONDS
from lambda_workflows.engine.instances.recovery import SWEEP_MARGIN
from lambda_workflows.engine.model import EntryKind, InstanceRef, JournalEntry
from lambda_workflows.testing import WorkflowTestEnv
from tests.aws_faults import Faults

BIG = base64.b64encode(os.urandom(400_000)).decode()  # params kept in chunk items
ran: Counter[str] = Counter()


class Waits(WorkflowEntrypoint):
    """Every kind of item: params and a step result in chunks, journal entries, a buffered
    event with an idempotency key (its marker), a claim of a restart."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("label", lambda: secrets.token_hex(400_000))  # chunked
        got = await step.wait_for_event("go", type="go", timeout="1 day")
        return got.payload


def waiting(env: WorkflowTestEnv, id: str, *, shared: bool = True) -> Any:
    """An instance of Waits, asleep on its event, with an event of another type buffered;
    ``shared``: with large params and an event key too (keys a new instance writes again)."""
    inst = env.create("w", id=id, params={"big": BIG} if shared else {})
    env.run_until_idle()
    inst.send_event(type="other", payload={"n": 1}, key="k-1" if shared else None)
    env.run_until_idle()
    assert inst.status().status == "waiting"
    return inst


def partition(env: WorkflowTestEnv, ref: InstanceRef) -> dict[str, dict[str, Any]]:
    """Every item of the instance's partition by sort key (read past the faults)."""
    assert env.aws is not None
    client = env.aws.session.client("dynamodb")
    found: dict[str, dict[str, Any]] = {}
    query: dict[str, Any] = {
        "TableName": env.aws.settings.table_name,
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": f"I#{ref.workflow}#{ref.id}"}},
        "ConsistentRead": True,
    }
    while True:
        page = client.query(**query)
        found |= {item["sk"]["S"]: item for item in page["Items"]}
        if "LastEvaluatedKey" not in page:
            return found
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def leftovers(env: WorkflowTestEnv, ref: InstanceRef) -> list[str]:
    return sorted(sk for sk in partition(env, ref) if sk != "I")


def only_a_settled_tombstone(env: WorkflowTestEnv, ref: InstanceRef) -> bool:
    """What docs/operations.md says a delete leaves: the tombstone, off the sweep's index."""
    left = partition(env, ref)
    return list(left) == ["I"] and "deleted_at" in left["I"] and "due_shard" not in left["I"]


def settle(env: WorkflowTestEnv) -> None:
    """Let the late-write horizon pass, then run the sweep."""
    env.clock.advance(SETTLE_SECONDS + SWEEP_MARGIN + 1)
    env.sweep()


# --- which call of a delete fails ------------------------------------------------------------


def commit(params: dict[str, Any]) -> bool:
    """The tombstone's write: a PutItem, or a transaction that also deletes shared keys."""
    first = (params.get("TransactItems") or [{}])[0].get("Put", params)
    return "deleted_at" in first.get("Item", {})


def shared_query(params: dict[str, Any]) -> bool:
    return "begins_with(sk" in str(params.get("KeyConditionExpression"))


def partition_query(params: dict[str, Any]) -> bool:
    return params.get("KeyConditionExpression") == "pk = :pk" and "ProjectionExpression" in params


def checked_delete(params: dict[str, Any]) -> bool:
    return "ConditionCheck" in (params.get("TransactItems") or [{}])[0]


def settling_mark(params: dict[str, Any]) -> bool:
    return "cleanup" in str(params.get("UpdateExpression", ""))


# (call, which of its kind, the instance has keys a new one reuses, failing it fails the delete)
DELETE_CALLS = [
    ("dynamodb.Query", shared_query, True, True),  # before the commit: nothing happened yet
    ("dynamodb.PutItem", commit, False, True),
    ("dynamodb.TransactWriteItems", commit, True, True),
    ("dynamodb.Query", partition_query, True, False),  # after it: the delete stands
    ("dynamodb.BatchWriteItem", None, True, False),
    ("dynamodb.UpdateItem", settling_mark, True, False),
]


@pytest.mark.parametrize("kind", ["throttle", "unreachable", "timeout"])
@pytest.mark.parametrize(
    ("operation", "match", "shared", "may_fail"),
    DELETE_CALLS,
    ids=["shared-query", "commit-put", "commit-transaction", "query", "batch", "mark"],
)
def test_a_delete_whose_call_fails_is_finished_by_its_retry_and_by_the_sweep(
    aws_env: Any, operation: str, match: Any, shared: bool, may_fail: bool, kind: str
) -> None:
    # GIVEN a waiting instance with every kind of item, and one call of its delete failing
    env = aws_env({"w": Waits})
    inst = waiting(env, f"d-{match.__name__ if match else 'batch'}-{kind}", shared=shared)
    faults = Faults.on(env.aws.runtime)
    faults.arm(operation, kind, match=match)

    # WHEN it is deleted, and deleted again if that failed (the client's retry)
    try:
        inst.delete()
    except InfrastructureError:
        assert may_fail, "a failure after the commit must not fail the delete"
        inst.delete()  # THEN the retry succeeds, even when the first one had committed
    assert faults.fired(operation) == 1

    # THEN the instance reads as missing at once, and after the sweep the partition holds
    # the tombstone and nothing else; deleting it again is a 404
    with pytest.raises(InstanceNotFound):
        inst.status()
    settle(env)
    assert only_a_settled_tombstone(env, inst.ref), leftovers(env, inst.ref)
    with pytest.raises(InstanceNotFound):
        inst.delete()


@pytest.mark.parametrize("shared", [False, True], ids=["put", "transaction"])
def test_a_commit_that_landed_before_it_was_sent_again_counts_as_done(
    aws_env: Any, shared: bool
) -> None:
    # GIVEN the tombstone's write lands, and is sent again (botocore retries a call whose
    # answer timed out): the second one fails its condition on that very tombstone
    env = aws_env({"w": Waits})
    inst = waiting(env, f"twice-{shared}", shared=shared)
    raw = env.aws.session.client("dynamodb")
    sent: list[str] = []

    def land_first(params: dict[str, Any], model: Any, **_: Any) -> None:
        if commit(params) and not sent:
            sent.append(model.name)
            if model.name == "PutItem":
                raw.put_item(**params)
            else:
                raw.transact_write_items(**params)

    env.aws.runtime.store.client.meta.events.register("before-parameter-build.dynamodb", land_first)

    # WHEN the store deletes it
    deleted = env.store.delete(env.store.get(inst.ref))

    # THEN it took its own tombstone as its commit (not as a change to decide again on),
    # and finished
    assert deleted is True
    assert sent == ["TransactWriteItems" if shared else "PutItem"]
    assert leftovers(env, inst.ref) == []
    settle(env)
    assert only_a_settled_tombstone(env, inst.ref)


def test_a_retry_completes_a_delete_cut_short_and_a_second_delete_is_a_404(
    aws_env: Any,
) -> None:
    # GIVEN a delete whose partition read was throttled: committed, its cleanup owed
    env = aws_env({"w": Waits})
    inst = waiting(env, "cut")
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.Query", "throttle", match=partition_query)
    inst.delete()
    assert leftovers(env, inst.ref)  # what the issue saw: events, journal, chunks left

    # WHEN the client deletes it again (no sweep in between)
    inst.delete()

    # THEN that retry succeeded and removed everything; a third delete is a 404 like any
    # missing id's, and writes nothing
    assert leftovers(env, inst.ref) == []
    faults.calls.clear()
    with pytest.raises(InstanceNotFound):
        inst.delete()
    assert not [c for c in faults.calls if not c.endswith(("GetItem", "Query"))]


def test_the_sweep_alone_finishes_a_delete_nobody_retried(aws_env: Any) -> None:
    env = aws_env({"w": Waits})
    inst = waiting(env, "alone")
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.BatchWriteItem", "unreachable")
    inst.delete()
    assert leftovers(env, inst.ref)

    env.clock.advance(SWEEP_MARGIN + 1)  # its first sweep: cleared, then settling
    env.sweep()
    assert leftovers(env, inst.ref) == []
    assert not only_a_settled_tombstone(env, inst.ref)  # a late writer may still write
    settle(env)
    assert only_a_settled_tombstone(env, inst.ref)


# --- late writers ----------------------------------------------------------------------------


class DeletedWhileRunning(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def first() -> int:
            ran["first"] += 1
            if ran["first"] == 1:  # deleted while this runner holds the lease, mid-step
                ENV[0].get("busy", event.instance_id).delete()
            return ran["first"]

        return [await step.do("first", first), await step.do("second", lambda: 2)]


ENV: list[WorkflowTestEnv] = []


def test_what_a_runner_records_after_the_delete_is_removed_by_the_sweep(aws_env: Any) -> None:
    # GIVEN an instance deleted while its runner was inside a step: the runner records that
    # step's result after the delete (a journal put is conditional on its own key only)
    ran.clear()
    env = aws_env({"busy": DeletedWhileRunning})
    ENV[:] = [env]
    inst = env.create("busy", id="b")
    env.run_until_idle()
    assert ran == Counter(first=1)
    assert [sk for sk in leftovers(env, inst.ref) if sk.startswith("J#")]

    # WHEN the late-write horizon passes and the sweep runs
    settle(env)

    # THEN the late entry is gone: only the tombstone is left
    assert only_a_settled_tombstone(env, inst.ref), leftovers(env, inst.ref)


def test_the_sweep_looks_again_after_the_horizon_before_it_calls_a_delete_done(
    aws_env: Any,
) -> None:
    # GIVEN a delete that finished at once, and a runner that had loaded the instance before
    # it recording an entry a minute later, and another ten minutes later
    env = aws_env({"w": Waits})
    inst = waiting(env, "late")
    generation = env.store.get(inst.ref).generation
    inst.delete()
    assert leftovers(env, inst.ref) == []
    store = env.aws.runtime.store

    def late(key: str) -> None:
        entry = JournalEntry(key=key, kind=EntryKind.STEP, name=key, count=1, at=0.0)
        store.record(inst.ref, generation, entry)

    env.clock.advance(60)
    late("late-1")
    env.clock.advance(SWEEP_MARGIN + 1)
    env.sweep()  # not due yet: settling until the horizon
    env.clock.advance(600)
    late("late-2")
    assert len(leftovers(env, inst.ref)) == 2

    # WHEN the horizon passes and the sweep runs
    settle(env)

    # THEN both are gone, and the tombstone is off the sweep's index
    assert only_a_settled_tombstone(env, inst.ref)


# --- unprocessed items -----------------------------------------------------------------------


class Unprocessed:
    """Makes the next ``times`` BatchWriteItem calls process only their first request, and
    answer the rest as UnprocessedItems (as DynamoDB does under load)."""

    def __init__(self, client: Any, times: int) -> None:
        self.times = times
        self.held: list[Any] = []
        client.meta.events.register("before-parameter-build.dynamodb.BatchWriteItem", self.hold)
        client.meta.events.register("after-call.dynamodb.BatchWriteItem", self.answer)

    def hold(self, params: dict[str, Any], **_: Any) -> None:
        if self.times <= 0:
            return
        self.times -= 1
        (table, requests), *_ = params["RequestItems"].items()
        params["RequestItems"] = {table: requests[:1]}
        self.held = [(table, requests[1:])]

    def answer(self, parsed: dict[str, Any], **_: Any) -> None:
        if self.held:
            table, requests = self.held.pop()
            if requests:
                parsed["UnprocessedItems"] = {table: requests}


def test_unprocessed_deletes_are_sent_again_with_growing_pauses(aws_env: Any) -> None:
    env = aws_env({"w": Waits})
    inst = waiting(env, "slow")
    store = env.aws.runtime.store
    pauses: list[float] = []
    store.deletes.pause = pauses.append
    Unprocessed(store.client, times=3)

    inst.delete()

    assert leftovers(env, inst.ref) == []
    assert pauses == [0.05, 0.1, 0.2]


def test_deletes_left_unprocessed_keep_the_cleanup_owed_until_a_retry_finishes_it(
    aws_env: Any,
) -> None:
    env = aws_env({"w": Waits})
    inst = waiting(env, "stuck")
    for n in range(10):  # more items than five calls of one processed item each
        inst.send_event(type="other", payload=n)
    store = env.aws.runtime.store
    pauses: list[float] = []
    store.deletes.pause = pauses.append
    unprocessed = Unprocessed(store.client, times=1_000)

    inst.delete()  # committed: it succeeds, and the cleanup is owed
    assert leftovers(env, inst.ref)
    assert len(pauses) == 4  # five calls per batch, then it gave up

    unprocessed.times = 0
    inst.delete()
    assert leftovers(env, inst.ref) == []


# --- a new instance with the id --------------------------------------------------------------


def test_an_id_created_again_while_its_delete_is_owed_starts_clean_and_keeps_its_items(
    aws_env: Any,
) -> None:
    # GIVEN a deleted instance whose cleanup was cut short: journal entries and events left,
    # but none under the keys a new instance writes again (gone with the commit)
    env = aws_env({"w": Waits})
    old = waiting(env, "again")
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.Query", "throttle", match=partition_query)
    old.delete()
    left = leftovers(env, old.ref)
    assert left and not [sk for sk in left if sk.startswith(("I", "K#"))]

    # WHEN an instance is created with the id (large params too) and sent an event with the
    # deleted one's key, before any sweep
    again = env.create("w", id="again", params={"big": BIG})
    env.run_until_idle()
    again.send_event(type="go", payload={"fresh": True}, key="k-1")
    env.run_until_idle()

    # THEN it was created, its event was delivered (not taken for the old instance's), and
    # once the horizon passed the sweep removed all the old instance left (its carried
    # cleanup included) and nothing of the new one
    assert again.status().output == {"fresh": True}
    mine = set(partition(env, again.ref)) - set(left)
    settle(env)
    assert set(partition(env, again.ref)) == {sk for sk in mine if not sk.startswith("D#")}
    assert again.status().output == {"fresh": True}
    assert json.loads(env.store.load(again.ref).record.params) == {"big": BIG}


def test_an_id_is_created_again_only_once_every_key_it_reuses_is_cleared(aws_env: Any) -> None:
    # GIVEN a deleted instance with more keyed events than the commit's transaction holds,
    # and the deletes of the rest failing: keys a new instance writes again are left
    env = aws_env({"w": Waits})
    old = waiting(env, "many-keys")
    for n in range(100):
        old.send_event(type="other", payload=n, key=f"k-{n + 2}")
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.TransactWriteItems", "throttle", match=checked_delete)
    old.delete()
    assert [sk for sk in leftovers(env, old.ref) if sk.startswith("K#")]

    # WHEN the id is created again: refused, retryably, and nothing written
    with pytest.raises(InfrastructureError, match="retry in a few minutes"):
        env.create("w", id="many-keys")
    with pytest.raises(InstanceNotFound):
        old.status()

    # THEN once the sweep cleared them, it is created, and an event with a key the deleted
    # instance used is delivered
    env.clock.advance(SWEEP_MARGIN + 1)
    env.sweep()
    assert leftovers(env, old.ref) == []
    again = env.create("w", id="many-keys")
    env.run_until_idle()
    again.send_event(type="go", payload="new", key="k-7")
    env.run_until_idle()
    assert again.status().output == "new"


# --- how much one call does ------------------------------------------------------------------


def test_a_large_partition_is_cleared_a_budget_at_a_time(
    aws_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN budgets of 10 items per request and 30 per sweep, and a deleted instance with 70
    env = aws_env({"w": Waits})
    monkeypatch.setattr(deletes, "INLINE_ITEMS", 10)
    monkeypatch.setattr(deletes, "SWEEP_ITEMS", 30)
    inst = waiting(env, "many", shared=False)
    for n in range(60):
        inst.send_event(type="other", payload=n)
    calls = Faults.on(env.aws.runtime)
    before = len(leftovers(env, inst.ref))

    # WHEN it is deleted, then swept three times
    inst.delete()
    after_delete = len(leftovers(env, inst.ref))
    removed = []
    for _ in range(3):
        env.clock.advance(SWEEP_MARGIN + 1)
        env.sweep()
        removed.append(after_delete - len(leftovers(env, inst.ref)) - sum(removed))

    # THEN the delete removed 10, each sweep at most 30, and then everything was gone
    assert before > 60 and before - after_delete == 10
    assert removed[0] == 30 and leftovers(env, inst.ref) == []
    assert calls.count("dynamodb.BatchWriteItem") <= (10 + 30 * 3) // 25 + 6
    settle(env)
    assert only_a_settled_tombstone(env, inst.ref)


def test_a_ttl_refresh_never_recreates_an_item_deleted_since_the_load_read_it(
    aws_env: Any,
) -> None:
    # GIVEN an instance asleep for 360 days: its journal's TTL is refreshed when next loaded
    class Sleeps(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            await step.do("a", lambda: 1)
            await step.sleep("long", "360 days")
            return await step.do("b", lambda: 2)

    env = aws_env({"s": Sleeps})
    inst = env.create("s", id="s")
    env.run_once("s", "s")
    assert inst.status().status == "waiting"
    env.clock.advance("360 days")
    raw = env.aws.session.client("dynamodb")
    removed: list[str] = []

    def delete_first(params: dict[str, Any], **_: Any) -> None:
        if params.get("UpdateExpression") == "SET expires_at = :t" and not removed:
            removed.append(params["Key"]["sk"]["S"])
            raw.delete_item(TableName=params["TableName"], Key=params["Key"])

    env.aws.runtime.store.client.meta.events.register(
        "before-parameter-build.dynamodb.UpdateItem", delete_first
    )

    # WHEN the runner loads it, and one item is deleted between the read and its refresh
    env.run_once("s", "s")

    # THEN that item stays deleted (the refresh is conditional)
    assert removed and removed[0] not in partition(env, inst.ref)
