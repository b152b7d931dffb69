"""Versions through `lambda-workflows dev`: an instance created on version 1 keeps replaying version
1 after version 2 (its steps reordered) is registered beside it, and a new instance runs
version 2 — over HTTP, with the dev server's clock moved past the sleep."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.remote import HttpApi

from .devserver import serving, until_status

CALLS: list[str] = []


def _done(name: str) -> Any:
    def call() -> str:
        CALLS.append(name)
        return name

    return call


class OrdersV1(WorkflowEntrypoint):
    version = "1"

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        first = await step.do("reserve", _done("reserve"))
        await step.sleep("settle", "1 hour")
        return [first, await step.do("charge", _done("charge"))]


class OrdersV2(WorkflowEntrypoint):
    version = "2"

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        first = await step.do("charge", _done("charge"))  # reordered: charge first
        await step.sleep("settle", "1 hour")
        return [first, await step.do("reserve", _done("reserve"))]


@pytest.fixture
def dev() -> Iterator[tuple[HttpApi, dict[str, type[WorkflowEntrypoint]]]]:
    """`lambda-workflows dev` waiting out sleeps (its clock is moved by hand), with v1
    registered."""
    registry: dict[str, type[WorkflowEntrypoint]] = {"orders": OrdersV1}
    with serving(LocalRuntime(registry, skip_sleeps=False, out=lambda line: None)) as dev:
        yield HttpApi(dev.url), registry


def test_an_old_instance_finishes_on_its_version_and_a_new_one_runs_the_newest(
    dev: tuple[HttpApi, dict[str, type[WorkflowEntrypoint]]],
) -> None:
    api, registry = dev
    CALLS.clear()
    # GIVEN an instance created on version 1, sleeping
    api.request("POST", "/workflows/orders/instances", {"instance_id": "old"})
    assert until_status(api, "orders", "old", "waiting")["workflow_version"] == "1"

    # WHEN version 2 is registered beside version 1 (what a deploy with orders@1 kept does)
    registry["orders"] = OrdersV2
    registry["orders@1"] = OrdersV1
    api.request("POST", "/workflows/orders/instances", {"instance_id": "new"})
    assert until_status(api, "orders", "new", "waiting")["workflow_version"] == "2"
    api.request("POST", "/_dev/clock/advance", {"by": "2 hours"})

    # THEN the old instance finishes on version 1, the new one ran version 2's order
    assert until_status(api, "orders", "old", "complete")["output"] == ["reserve", "charge"]
    new = until_status(api, "orders", "new", "complete")
    assert (new["workflow_version"], new["output"]) == ("2", ["charge", "reserve"])
    described = api.request("GET", "/workflows/orders").body
    assert {v["version"]: v["in_flight"] for v in described["versions"]} == {"2": 0, "1": 0}
