"""GET /workflows/{name}: the workflow's class, module, the first paragraph of its docstring and
its instances counted by status (one walk of the workflow's listing, every shard paged, at most
lambda_workflows.engine.instances.census.CENSUS_LIMIT instances)."""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows.aws.shards import index_shard
from lambda_workflows.engine.instances import census
from lambda_workflows.engine.model import InstanceStatus
from lambda_workflows.testing import WorkflowTestEnv
from tests.functional.workflows_under_test import Lifecycle

from .conftest import Api

EVERY_STATUS_BUT_UNKNOWN = {s.value for s in InstanceStatus} - {"unknown"}


@pytest.fixture
def fresh() -> Iterator[Api]:
    """An API on its own empty table (the counts are of the whole table)."""
    env = WorkflowTestEnv({"orders": Lifecycle}, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


def test_describes_the_class_and_counts_instances_by_status(fresh: Api) -> None:
    # GIVEN two instances queued, one paused and one terminated
    for instance_id in ("d-1", "d-2", "d-3", "d-4"):
        fresh.request("POST", "/workflows/orders/instances", {"id": instance_id})
    fresh.request("PATCH", "/workflows/orders/instances/d-3/status", {"status": "pause"})
    fresh.request("PATCH", "/workflows/orders/instances/d-4/status", {"status": "terminate"})

    # WHEN the workflow is described
    answer = fresh.request("GET", "/workflows/orders")

    # THEN it names its class and counts each status, zeros included
    assert answer.status == 200, answer.body
    assert answer.body == {
        "name": "orders",
        "class_name": "Lifecycle",
        "module": "tests.functional.workflows_under_test",
        "description": "Charge, sleep an hour, wait for approval, finish.",
        "instances": {
            **dict.fromkeys(EVERY_STATUS_BUT_UNKNOWN, 0),
            "queued": 2,
            "paused": 1,
            "terminated": 1,
        },
        # its one version, with the three instances not finished
        "versions": [
            {
                "version": "1",
                "class_name": "Lifecycle",
                "module": "tests.functional.workflows_under_test",
                "in_flight": 3,
            }
        ],
        "schedules": [],  # it declares none
    }


def test_counts_every_page_of_a_status(fresh: Api) -> None:
    # GIVEN more queued instances than one 1 MB page of the index holds, all in one shard
    shards = fresh.aws.runtime.store.index_shards
    ids = [i for i in (f"big-{n}" for n in range(1000)) if index_shard(i, shards) == 0][:24]
    blob = "".join(random.Random(7).choices(string.ascii_letters, k=60_000))
    items: list[dict[str, Any]] = [{"id": i, "params": {"blob": blob}} for i in ids]
    for half in (items[:12], items[12:]):  # a request body holds at most 1 MiB
        assert fresh.request("POST", "/workflows/orders/instances/batch", half).status == 201
    pages: list[int] = []
    fresh.check_paths = False  # one answer to count, not the resolver's second one
    fresh.aws.runtime.store.client.meta.events.register(
        "after-call.dynamodb.Query", lambda parsed, **_: pages.append(parsed["Count"])
    )

    # WHEN the workflow is described
    answer = fresh.request("GET", "/workflows/orders")

    # THEN the count is summed over the pages DynamoDB answered in
    assert answer.body["instances"]["queued"] == 24
    partitions = shards + 1  # and the key of items written before sharding
    assert len(pages) > partitions, "the full shard took one page"
    assert sum(pages) == 24


def test_a_workflow_with_more_instances_than_a_count_reads_names_its_lower_bounds(
    fresh: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a count that reads at most 3 instances a listing (5,000 deployed), two instances
    # queued, then four terminated
    monkeypatch.setattr(census, "CENSUS_LIMIT", 3)
    for instance_id in ("q-1", "q-2", "t-1", "t-2", "t-3", "t-4"):
        fresh.aws.clock.advance(1)
        fresh.request("POST", "/workflows/orders/instances", {"id": instance_id})
        if instance_id.startswith("t-"):
            fresh.request(
                "PATCH",
                f"/workflows/orders/instances/{instance_id}/status",
                {"status": "terminate"},
            )

    # WHEN the workflow is described
    answer = fresh.request("GET", "/workflows/orders")

    # THEN the finished counts are what the 3 newest showed, and say they are lower bounds,
    # while the instances in flight (older) are counted exactly
    assert answer.status == 200, answer.body
    counted = {k: v for k, v in answer.body["instances"].items() if v}
    assert counted == {"queued": 2, "terminated": 3}
    assert answer.body["instances_at_least"] == ["errored", "terminated", "complete"]
    assert [v["in_flight"] for v in answer.body["versions"]] == [2]


def test_an_unknown_workflow_is_a_404_naming_the_registered_ones(api: Api) -> None:
    answer = api.request("GET", "/workflows/invoices")

    assert (answer.status, answer.code) == (404, "unknown_workflow")
    assert "registered: orders" in answer.message


def test_a_malformed_name_is_an_unknown_workflow(api: Api) -> None:
    answer = api.request("GET", "/workflows/in.voices")

    assert (answer.status, answer.code) == (404, "unknown_workflow")


def test_other_methods_are_not_allowed(api: Api) -> None:
    answer = api.request("DELETE", "/workflows/orders")

    assert (answer.status, answer.code) == (405, "method_not_allowed")
    assert answer.headers["Allow"] == "GET"
