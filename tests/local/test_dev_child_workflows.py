"""Child workflows through `lambda-workflows dev`, over HTTP: the parent gets its child's output,
the two link each other in their status, the child's end wakes the parent (it runs twice: no
polling), and terminating a parent terminates its waiting child."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.remote import HttpApi

from .devserver import serving, until_status


class Charge(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        if event.payload.get("hold"):
            await step.wait_for_event("capture", type="capture", timeout="1 hour")
        return await step.do("charge", lambda: {"charged": event.payload["amount"]})


class Order(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.run_workflow("pay", workflow="charge", params=event.payload)


@pytest.fixture
def dev() -> Iterator[tuple[HttpApi, list[str]]]:
    """`lambda-workflows dev` with both workflows registered, and the lines it printed."""
    lines: list[str] = []
    with serving(LocalRuntime({"order": Order, "charge": Charge}, out=lines.append)) as dev:
        yield HttpApi(dev.url), lines


def test_a_parent_gets_its_childs_output_and_they_link_each_other(
    dev: tuple[HttpApi, list[str]],
) -> None:
    api, lines = dev
    api.request(
        "POST", "/workflows/order/instances", {"instance_id": "o-1", "params": {"amount": 4}}
    )
    parent = until_status(api, "order", "o-1", "complete")
    assert parent["output"] == {"charged": 4}
    (row,) = parent["steps"]
    assert row["type"] == "runWorkflow" and row["status"] == "complete"
    assert row["child"]["workflow"] == "charge"
    child = until_status(api, "charge", row["child"]["id"], "complete")
    assert child["parent"] == {"workflow": "order", "id": "o-1", "step": "pay"}
    # the parent ran twice: at its start, and when the child's end woke it; never to look at
    # the child. Neither pass ran step code of its own (starting a child and reading its
    # output only record), so neither took the lease: no "running" line
    # (lambda_workflows.engine.instances.lazy_lease)
    assert parent["usage"]["invocations"] == 2, parent["usage"]
    assert not any(line.endswith("order/o-1 -> running") for line in lines), lines


def test_terminating_a_parent_over_http_terminates_its_child(
    dev: tuple[HttpApi, list[str]],
) -> None:
    api, _ = dev
    params = {"amount": 1, "hold": True}
    api.request("POST", "/workflows/order/instances", {"instance_id": "o-2", "params": params})
    parent = until_status(api, "order", "o-2", "waiting")
    child_id = parent["steps"][0]["child"]["id"]
    until_status(api, "charge", child_id, "waiting")
    api.request("PATCH", "/workflows/order/instances/o-2/status", {"status": "terminate"})
    until_status(api, "order", "o-2", "terminated")
    until_status(api, "charge", child_id, "terminated")
