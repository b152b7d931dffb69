"""A status-filtered listing on the keys-only ``by_created`` index: the entries' items are read
(BatchGetItem) and filtered on their status, a page reads a bounded number of entries, and
the pages still walk every matching instance once, newest first, across shards and the
legacy index (see :mod:`lambda_workflows.aws.instance_listing`)."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows.aws import instance_listing
from lambda_workflows.aws.dynamodb import DynamoStore
from lambda_workflows.aws.items import created_sort_key
from lambda_workflows.engine.instances import census
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.engine.instances.transitions import Finish
from lambda_workflows.engine.model import InstanceRef, InstanceStatus
from lambda_workflows.testing import WorkflowTestEnv

from .test_sharded_listing import (
    START,
    WORKFLOW,
    legacy_item,
    many,
    newest_first,
    put_legacy,
    queries,
    walk,
)

NOW = 1_767_225_700.0
RUNNING, COMPLETE, QUEUED = InstanceStatus.RUNNING, InstanceStatus.COMPLETE, InstanceStatus.QUEUED


def lease(store: DynamoStore, instance_id: str) -> None:
    assert store.acquire_lease(InstanceRef(WORKFLOW, instance_id), "r", NOW, NOW + 60)


def finish(store: DynamoStore, instance_id: str) -> None:
    lease(store, instance_id)
    record = store.get(InstanceRef(WORKFLOW, instance_id))
    change = Finish(InstanceStatus.COMPLETE, 3600.0, output="1").change(record, NOW)
    assert change is not None
    assert store.update(record.ref, record.version, change) is not None


def mixture(env: WorkflowTestEnv, store: DynamoStore) -> dict[InstanceStatus, list[str]]:
    """90 instances over the shards and 6 on the legacy index: 1 in 10 running, 3 in 10
    complete, the rest queued. Each status's ids, newest first."""
    ordered = many(store, 90)
    keys = {i: created_sort_key(START + int(i[2:]) - int(i[2:]) % 3 // 2, i) for i in ordered}
    for n in range(6):  # written before by_created, between the others, with their status
        status = ("running", "complete", "queued")[n % 3]
        old = f"old-{n}"
        put_legacy(env, legacy_item(old, START + 15 * n + 0.5, status))
        keys[old] = created_sort_key(START + 15 * n + 0.5, old)
    statuses: dict[str, InstanceStatus] = {}
    for rank, instance_id in enumerate(newest_first(keys)):
        if instance_id.startswith("old-"):
            statuses[instance_id] = InstanceStatus(
                ("running", "complete", "queued")[int(instance_id[4:]) % 3]
            )
            continue
        statuses[instance_id] = RUNNING if rank % 10 == 3 else COMPLETE if rank % 10 < 3 else QUEUED
        if statuses[instance_id] is RUNNING:
            lease(store, instance_id)
        elif statuses[instance_id] is COMPLETE:
            finish(store, instance_id)
    return {s: [i for i in newest_first(keys) if statuses[i] is s] for s in set(statuses.values())}


def items_read(store: DynamoStore) -> list[int]:
    """The keys each BatchGetItem call asks for, from now on."""
    asked: list[int] = []

    def sent(params: Any, **_: Any) -> None:
        asked.append(sum(len(t["Keys"]) for t in params["RequestItems"].values()))

    store.client.meta.events.register("provide-client-params.dynamodb.BatchGetItem", sent)
    return asked


def test_a_listing_index_entry_holds_the_keys_only(
    env: WorkflowTestEnv, store: DynamoStore
) -> None:
    # GIVEN an instance that changed status after its creation
    many(store, 1)
    finish(store, "i-000")

    # WHEN its by_created entry is read
    assert env.aws is not None
    found = store.client.query(
        TableName=env.aws.settings.table_name,
        IndexName="by_created",
        KeyConditionExpression="lpk = :v",
        ExpressionAttributeValues={":v": {"S": env_lpk(env, "i-000")}},
    )

    # THEN it carries the table's and the index's keys, no status: a status change never
    # rewrites it (template.yaml: KEYS_ONLY)
    assert [set(item) for item in found["Items"]] == [{"pk", "sk", "lpk", "lsk"}]


def env_lpk(env: WorkflowTestEnv, instance_id: str) -> str:
    assert env.aws is not None
    item = env.aws.session.client("dynamodb").get_item(
        TableName=env.aws.settings.table_name,
        Key={"pk": {"S": f"I#{WORKFLOW}#{instance_id}"}, "sk": {"S": "I"}},
    )["Item"]
    return str(item["lpk"]["S"])


@pytest.mark.parametrize("limit", [1, 3, 7, 25, 1000])
def test_filtered_pages_walk_each_instance_of_the_status_once_across_shards_and_pages(
    env: WorkflowTestEnv, store: DynamoStore, limit: int
) -> None:
    # GIVEN a mixture of statuses over the shards and the legacy index
    expected = mixture(env, store)
    made = queries(store)

    # WHEN each status is listed page by page
    listed = {status: walk(store, limit, status)[0] for status in expected}

    # THEN each holds its instances only, each once, newest first; and no Query filters
    # (the index projects no status to filter on)
    assert listed == expected
    assert not [q for q in made if "FilterExpression" in q]
    assert walk(store, limit)[0] == newest_first_all(expected)


def newest_first_all(by_status: dict[InstanceStatus, list[str]]) -> list[str]:
    keys = {
        i: created_sort_key(
            START + 15 * int(i[4:]) + 0.5 if i.startswith("old-") else _created(int(i[2:])), i
        )
        for ids in by_status.values()
        for i in ids
    }
    return newest_first(keys)


def _created(n: int) -> float:
    return START + n - n % 3 // 2


def test_a_filtered_page_reads_a_bounded_number_of_entries_and_answers_short_with_a_cursor(
    env: WorkflowTestEnv, store: DynamoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a page may read at most 12 entries, and the running instances are 1 in 10
    expected = mixture(env, store)
    monkeypatch.setattr(instance_listing, "FILTERED_READ", 12)
    asked = items_read(store)
    pages: list[int] = []
    cursor: str | None = None
    found: list[str] = []

    # WHEN they are listed five at a time, following each cursor
    while True:
        before = sum(asked)
        page = store.list_instances(WORKFLOW, RUNNING, cursor, 5)
        pages.append(sum(asked) - before)
        found += [r.id for r in page.records]
        if page.cursor is None:
            break
        cursor = page.cursor

    # THEN each page read at most its 12 entries' items (legacy entries are whole already),
    # some pages came back short (even empty) with a cursor, and the walk is still whole
    assert max(pages) <= 12
    assert found == expected[RUNNING]
    assert len(pages) > len(expected[RUNNING]) / 5 + 1


def test_a_page_ends_at_its_last_match_when_a_round_found_more(
    env: WorkflowTestEnv, store: DynamoStore
) -> None:
    # GIVEN most instances complete: a page's second round finds more than it still needs
    expected = mixture(env, store)
    complete = expected[COMPLETE]

    # WHEN the complete instances are listed four at a time
    first = store.list_instances(WORKFLOW, COMPLETE, None, 4)
    second = store.list_instances(WORKFLOW, COMPLETE, first.cursor, 4)

    # THEN each page is full and the second starts right after the first
    assert [r.id for r in first.records] == complete[:4]
    assert [r.id for r in second.records] == complete[4:8]


def describe(env: WorkflowTestEnv, store: DynamoStore) -> Any:
    service = InstanceService(
        {WORKFLOW}, store, env.service.queue, env.service.scheduler, env.clock
    )
    return service.describe(WORKFLOW)


def test_a_census_walks_a_rare_status_exactly_within_its_page_bound_and_a_lower_bound_past_it(
    env: WorkflowTestEnv, store: DynamoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the mixture, a census whose first walk reads 20 instances only, and filtered
    # pages that read at most 12 entries each
    expected = mixture(env, store)
    monkeypatch.setattr(census, "CENSUS_LIMIT", 20)
    monkeypatch.setattr(instance_listing, "FILTERED_READ", 12)

    # WHEN the workflow is described
    described = describe(env, store)

    # THEN the running instances (fewer than 20) were walked on their own listing, exactly,
    # over its short pages; the queued ones (more) are a lower bound
    assert described.instances["running"] == len(expected[RUNNING])
    assert "running" not in described.instances_at_least
    assert "queued" in described.instances_at_least

    # WHEN a walk may read only two pages of 12 entries
    monkeypatch.setattr(census, "CENSUS_PAGES", 2)
    bounded = describe(env, store)

    # THEN it stopped there: the running count is what it saw, named a lower bound
    assert bounded.instances["running"] < len(expected[RUNNING])
    assert "running" in bounded.instances_at_least
