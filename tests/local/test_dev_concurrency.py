"""A workflow's concurrency limit through `lambda-workflows dev`: with `concurrency = 1`, a second
and a third instance wait queued, their status says where they are in line, and they run one
at a time, oldest first, once the first one finishes — over HTTP."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.remote import HttpApi

from .devserver import serving, until_status

RAN: list[str] = []
GO = threading.Event()  # the first instance's step holds its slot until the test sets it


class OneAtATime(WorkflowEntrypoint):
    concurrency = 1

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def work() -> str:
            RAN.append(event.instance_id)
            GO.wait(30)
            return event.instance_id

        return await step.do("work", work)


@pytest.fixture
def api() -> Iterator[HttpApi]:
    with serving(LocalRuntime({"gate": OneAtATime}, out=lambda line: None)) as dev:
        try:
            yield HttpApi(dev.url)
        finally:
            GO.set()  # before the server stops: a step still holding the slot lets go


def _status(api: HttpApi, instance_id: str) -> dict[str, Any]:
    return dict(api.request("GET", f"/workflows/gate/instances/{instance_id}").body)


def test_instances_over_the_limit_wait_in_line_and_run_oldest_first(api: HttpApi) -> None:
    RAN.clear()
    GO.clear()
    # GIVEN a first instance running, holding the only slot
    api.request("POST", "/workflows/gate/instances", {"instance_id": "first"})
    until_status(api, "gate", "first", "running")

    # WHEN two more are created
    api.request("POST", "/workflows/gate/instances", {"instance_id": "second"})
    api.request("POST", "/workflows/gate/instances", {"instance_id": "third"})

    # THEN they wait queued, each saying where it is in line
    second, third = _status(api, "second"), _status(api, "third")
    assert (second["status"], third["status"]) == ("queued", "queued")
    assert second["status_reason"] == (
        "waiting for a slot: position 1 in line (at most 1 of gate run at once)"
    )
    assert third["status_reason"].startswith("waiting for a slot: position 2 in line")

    # AND once the first finishes, they run one at a time, oldest first
    GO.set()
    for instance_id in ("first", "second", "third"):
        assert until_status(api, "gate", instance_id, "complete")["output"] == instance_id
    assert RAN == ["first", "second", "third"]
    assert _status(api, "third")["status_reason"] is None
