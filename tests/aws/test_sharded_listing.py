"""Listing, counting and sweeping with the listing indexes spread over K > 1 shards: a listing
is the merge of the shards, newest first, paged with one cursor; instances written before
sharding (the unsharded keys of the legacy listing index) are still listed, counted and swept,
and the sweep moves them to their shard of ``by_created``."""

from __future__ import annotations

import math
import zlib
from typing import Any

import pytest

from lambda_workflows.aws.cursors import MAX_CURSOR
from lambda_workflows.aws.dynamodb import DynamoStore
from lambda_workflows.aws.items import created_sort_key
from lambda_workflows.aws.shards import index_shard
from lambda_workflows.engine.instances.recovery import QUEUE_GRACE
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.engine.instances.transitions import Finish
from lambda_workflows.engine.model import InstanceRecord, InstanceRef, InstanceStatus
from lambda_workflows.testing import WorkflowTestEnv

from .conftest import SHARDS

WORKFLOW = "orders"


def create(store: DynamoStore, instance_id: str, created_at: float) -> InstanceRef:
    store.create(
        InstanceRecord(
            workflow=WORKFLOW,
            id=instance_id,
            status=InstanceStatus.QUEUED,
            params="{}",
            created_at=created_at,
            updated_at=created_at,
            due_at=created_at + QUEUE_GRACE,
        )
    )
    return InstanceRef(WORKFLOW, instance_id)


START = 1_767_225_600.0


def created(n: int) -> float:
    """When instance ``n`` is created: every third one at the same time as the one before
    (ids then break the tie, as they did before sharding)."""
    return START + n - n % 3 // 2


def newest_first(keys: dict[str, str]) -> list[str]:
    """Ids by their index sort key (creation time, then id), newest first."""
    return sorted(keys, key=keys.__getitem__, reverse=True)


def many(store: DynamoStore, count: int) -> list[str]:
    """``count`` instances; their ids, newest first."""
    for n in range(count):
        create(store, f"i-{n:03d}", created(n))
    return newest_first(
        {f"i-{n:03d}": created_sort_key(created(n), f"i-{n:03d}") for n in range(count)}
    )


def walk(
    store: DynamoStore, limit: int, status: InstanceStatus | None = None
) -> tuple[list[str], list[str]]:
    """Every page of a listing: the ids in order, and the cursors handed out."""
    ids: list[str] = []
    cursors: list[str] = []
    cursor: str | None = None
    while True:
        page = store.list_instances(WORKFLOW, status, cursor, limit)
        assert len(page.records) <= limit
        ids += [r.id for r in page.records]
        if page.cursor is None:
            return ids, cursors
        cursors.append(page.cursor)
        cursor = page.cursor


def census(env: WorkflowTestEnv, store: DynamoStore) -> dict[str, int]:
    """How many instances of the workflow have each status (those with any), as a describe
    served from ``store`` counts them."""
    service = InstanceService(
        {WORKFLOW}, store, env.service.queue, env.service.scheduler, env.clock
    )
    return {k: v for k, v in service.describe(WORKFLOW).instances.items() if v}


def table_item(env: WorkflowTestEnv, instance_id: str) -> dict[str, Any]:
    assert env.aws is not None
    found = env.aws.session.client("dynamodb").get_item(
        TableName=env.aws.settings.table_name,
        Key={"pk": {"S": f"I#{WORKFLOW}#{instance_id}"}, "sk": {"S": "I"}},
    )
    return dict(found["Item"])


def queries(store: DynamoStore) -> list[dict[str, Any]]:
    """The Query calls the store makes from now on: their parameters and ``Count``."""
    made: list[dict[str, Any]] = []

    def sent(params: Any, context: Any, **_: Any) -> None:
        context["query"] = dict(params)  # the shards are queried from several threads
        made.append(context["query"])

    def answered(parsed: Any, context: Any, **_: Any) -> None:
        context["query"]["answered"] = parsed.get("Count", 0)

    store.client.meta.events.register("provide-client-params.dynamodb.Query", sent)
    store.client.meta.events.register("after-call.dynamodb.Query", answered)
    return made


def test_instances_are_written_to_every_shard_by_a_stable_hash_of_their_id(
    env: WorkflowTestEnv, store: DynamoStore
) -> None:
    many(store, 24)

    shards = {table_item(env, f"i-{n:03d}")["lpk"]["S"] for n in range(24)}

    assert shards == {f"{WORKFLOW}#{k}" for k in range(SHARDS)}
    item = table_item(env, "i-005")
    assert item["lpk"]["S"] == f"{WORKFLOW}#{index_shard('i-005', SHARDS)}"
    assert item["lsk"]["S"] == created_sort_key(created(5), "i-005")
    # nothing on the legacy listing indexes (see lambda_workflows.aws.shards)
    assert not {"gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk"} & set(item)


def test_a_listing_merges_the_shards_newest_first(store: DynamoStore) -> None:
    expected = many(store, 24)

    page = store.list_instances(WORKFLOW, limit=1000)

    assert [r.id for r in page.records] == expected
    assert page.cursor is None


@pytest.mark.parametrize("limit", [1, 2, 5, 7, 24, 25])
def test_pages_walk_every_instance_once_in_order(store: DynamoStore, limit: int) -> None:
    expected = many(store, 24)

    ids, cursors = walk(store, limit)

    assert ids == expected
    # a last page may come back empty (a shard's last item ended the page before), no more
    assert len(cursors) <= math.ceil(24 / limit)
    assert all(len(c) <= MAX_CURSOR for c in cursors)


def test_a_status_listing_pages_across_shards_and_a_describe_counts_them_all(
    env: WorkflowTestEnv, store: DynamoStore
) -> None:
    # GIVEN 24 instances, a third of them leased (running) and a third finished (complete)
    ordered = many(store, 24)
    now = 1_767_225_700.0
    running = ordered[0::3]
    complete = ordered[1::3]
    for instance_id in running + complete:
        assert store.acquire_lease(InstanceRef(WORKFLOW, instance_id), "r", now, now + 60)
    for instance_id in complete:
        record = store.get(InstanceRef(WORKFLOW, instance_id))
        change = Finish(InstanceStatus.COMPLETE, 3600.0, output="1").change(record, now)
        assert change is not None
        assert store.update(record.ref, record.version, change) is not None

    # WHEN each status is listed, three at a time, and the workflow is described
    listed = {s: walk(store, 3, s)[0] for s in (InstanceStatus.RUNNING, InstanceStatus.COMPLETE)}

    # THEN each listing holds its instances only, in the workflow's order, and counts agree
    assert listed[InstanceStatus.RUNNING] == running
    assert listed[InstanceStatus.COMPLETE] == complete
    assert census(env, store) == {"running": len(running), "complete": len(complete), "queued": 8}
    assert walk(store, 5)[0] == ordered  # every status, still each once


def test_a_page_reads_about_its_share_from_each_shard_not_k_times_the_limit(
    env: WorkflowTestEnv,
) -> None:
    # GIVEN 8 shards holding 120 instances
    assert env.aws is not None
    client = env.aws.session.client("dynamodb")
    store = DynamoStore(client, env.aws.settings.table_name, env.clock, index_shards=8)
    ordered = many(store, 120)
    made = queries(store)

    # WHEN a first page of 40 is listed
    page = store.list_instances(WORKFLOW, limit=40)

    # THEN it is right, and asked each partition (8 shards of by_created, and the legacy
    # index's unsharded key and 8 shards) for about its share (40 / 16 + 1 = 4), topping up
    # the few that held more: far from 8 x 40 items
    assert [r.id for r in page.records] == ordered[:40]
    assert len(made) >= 17
    assert [q["Limit"] for q in made[:17]] == [4] * 17
    assert sum(q["answered"] for q in made) < 40 + 17 * 4 + 40
    assert len(made) <= 17 + 8 * 2


def test_a_partition_found_exhausted_is_not_asked_again(store: DynamoStore) -> None:
    many(store, 24)
    first = store.list_instances(WORKFLOW, limit=5)
    made = queries(store)

    store.list_instances(WORKFLOW, cursor=first.cursor, limit=5)

    # the legacy key held nothing: only the shards are asked, below the last instance listed
    asked = {q["ExpressionAttributeValues"][":v"]["S"] for q in made}
    assert asked == {f"{WORKFLOW}#{k}" for k in range(SHARDS)}
    assert all(":below" in q["ExpressionAttributeValues"] for q in made)


def test_a_growing_k_still_lists_the_instances_written_under_a_smaller_one(
    env: WorkflowTestEnv, store: DynamoStore
) -> None:
    ordered = many(store, 12)  # written with 4 shards
    assert env.aws is not None
    client = env.aws.session.client("dynamodb")
    grown = DynamoStore(client, env.aws.settings.table_name, env.clock, index_shards=16)

    assert walk(grown, 5)[0] == ordered
    assert census(env, grown) == {"queued": 12}


# --- instances written before sharding ----------------------------------------------------


def legacy_item(instance_id: str, created_at: float, status: str = "queued") -> dict[str, Any]:
    """An instance item as the store wrote it before sharding: unsharded index keys, the due
    index's shard out of 8."""
    due_shard = zlib.crc32(f"{WORKFLOW}/{instance_id}".encode()) % 8
    sort_key = created_sort_key(created_at, instance_id)
    return {
        "pk": {"S": f"I#{WORKFLOW}#{instance_id}"},
        "sk": {"S": "I"},
        "workflow": {"S": WORKFLOW},
        "id": {"S": instance_id},
        "status": {"S": status},
        "version": {"N": "1"},
        "generation": {"N": "1"},
        "created_at": {"N": repr(created_at)},
        "updated_at": {"N": repr(created_at)},
        "params": {"S": "{}"},
        "workflow_version": {"S": "1"},
        "gsi1pk": {"S": f"{WORKFLOW}#{status}"},
        "gsi1sk": {"S": sort_key},
        "gsi2pk": {"S": WORKFLOW},
        "gsi2sk": {"S": sort_key},
        "due_at": {"N": repr(created_at + QUEUE_GRACE)},
        "due_shard": {"S": f"due#{due_shard}"},
    }


def put_legacy(env: WorkflowTestEnv, item: dict[str, Any]) -> None:
    assert env.aws is not None
    env.aws.session.client("dynamodb").put_item(TableName=env.aws.settings.table_name, Item=item)


def test_an_instance_written_before_sharding_is_listed_counted_and_swept(
    env: WorkflowTestEnv, store: DynamoStore
) -> None:
    # GIVEN instances written by the store today, and one written before sharding, directly,
    # created between them
    many(store, 9)
    put_legacy(env, legacy_item("old-1", START + 3.5))
    keys = {f"i-{n:03d}": created_sort_key(created(n), f"i-{n:03d}") for n in range(9)}
    expected = newest_first(keys | {"old-1": created_sort_key(START + 3.5, "old-1")})
    assert 0 < expected.index("old-1") < 9

    # WHEN the workflow is listed (in pages and by status), described, and swept
    listed = walk(store, 2)[0]
    queued = walk(store, 4, InstanceStatus.QUEUED)[0]
    counts = census(env, store)
    overdue = store.overdue(START + 3.5 + QUEUE_GRACE + 1)

    # THEN it is there, once, in creation order, in every one of them
    assert listed == queued == expected
    assert counts == {"queued": 10}
    assert InstanceRef(WORKFLOW, "old-1") in overdue


def test_an_instance_written_before_sharding_lists_under_its_current_status(
    env: WorkflowTestEnv, store: DynamoStore
) -> None:
    many(store, 6)
    put_legacy(env, legacy_item("old-1", START + 3.5))
    now = 1_767_225_700.0

    # WHEN a runner leases it (queued -> running)
    assert store.acquire_lease(InstanceRef(WORKFLOW, "old-1"), "r", now, now + 60) is not None

    # THEN it lists once, under its new status (its legacy entry is the whole item)
    assert walk(store, 3)[0].count("old-1") == 1
    assert walk(store, 3, InstanceStatus.RUNNING)[0] == ["old-1"]
    assert "old-1" not in walk(store, 3, InstanceStatus.QUEUED)[0]


def test_the_sweep_moves_an_instance_written_before_sharding_to_its_shard(
    env: WorkflowTestEnv, store: DynamoStore
) -> None:
    ordered = many(store, 6)
    put_legacy(env, legacy_item("old-1", START + 3.5))

    # WHEN the recovery sweep's upgrade runs, twice
    moved = [store.upgrade_listing(), store.upgrade_listing()]

    # THEN it moved once, to its by_created shard, and still lists once, in its place
    item = table_item(env, "old-1")
    assert moved == [1, 0]
    assert item["lpk"]["S"] == f"{WORKFLOW}#{index_shard('old-1', SHARDS)}"
    assert item["lsk"]["S"] == created_sort_key(START + 3.5, "old-1")
    assert not {"gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk"} & set(item)
    assert walk(store, 3)[0] == newest_first(
        {i: created_sort_key(created(int(i[2:])), i) for i in ordered}
        | {"old-1": created_sort_key(START + 3.5, "old-1")}
    )


def test_a_finished_instance_written_before_sharding_stays_listed(
    env: WorkflowTestEnv, store: DynamoStore
) -> None:
    put_legacy(env, legacy_item("old-done", START, status="complete"))

    assert walk(store, 1, InstanceStatus.COMPLETE)[0] == ["old-done"]
    assert census(env, store) == {"complete": 1}
