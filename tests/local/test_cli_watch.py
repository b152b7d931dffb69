"""``lambda-workflows instances watch NAME ID`` against a running ``lambda-workflows dev``: it
prints an instance's events as they happen, one line each, and exits 0 when it finishes."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.cli import main
from lambda_workflows.cli.console import Console
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.remote import HttpApi

from .devserver import RunningDev, serving

PATH = "/workflows/approvals/instances"


class Approval(WorkflowEntrypoint):
    """A step that fails once, a wait for an approval."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        tries: list[int] = []

        def quote() -> int:
            tries.append(1)
            if len(tries) == 1 and event.payload.get("flaky"):
                raise RuntimeError("rates not ready")
            return 42

        amount = await step.do("quote", {"retries": {"limit": 2, "delay": 0}}, quote)
        decision = await step.wait_for_event("approval", type="approved", timeout="1 hour")
        return {"amount": amount, "by": decision.payload["by"]}


@pytest.fixture(scope="module")
def dev() -> Iterator[RunningDev]:
    with serving(LocalRuntime({"approvals": Approval}, out=lambda line: None)) as running:
        yield running


def watch(dev: RunningDev, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["instances", "watch", *argv, "--url", dev.url], console=Console(out, err))
    return code, out.getvalue(), err.getvalue()


def approve_once_waiting(dev: RunningDev, instance_id: str) -> None:
    api = HttpApi(dev.url)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        steps = api.request("GET", f"{PATH}/{instance_id}").body["steps"]
        if steps and steps[-1]["type"] == "waitForEvent":
            api.request("POST", f"{PATH}/{instance_id}/events/approved", {"by": "ana"})
            return
        time.sleep(0.05)


def test_watch_prints_each_event_as_it_happens_and_exits_when_the_instance_finishes(
    dev: RunningDev,
) -> None:
    # GIVEN a running instance that will wait for an approval
    HttpApi(dev.url).request("POST", PATH, {"id": "w-1", "params": {"flaky": True}})
    approver = threading.Thread(target=approve_once_waiting, args=(dev, "w-1"))
    approver.start()

    # WHEN it is watched (the approval comes while the command waits)
    code, out, err = watch(dev, "approvals", "w-1")
    approver.join()

    # THEN it printed one line per event, in order, and exited 0 once the instance completed
    assert code == 0, err
    lines = out.splitlines()
    assert [line.split()[1] for line in lines] == [
        "instance.queued",
        "instance.started",
        "step.started",
        "step.retrying",
        "step.started",
        "step.completed",
        "wait.started",
        "event.received",
        "wait.completed",
        "instance.complete",
    ]
    assert "'quote'  attempt 1" in lines[3] and "RuntimeError: rates not ready" in lines[3]
    assert "approved (event" in lines[7]
    assert lines[-1].endswith("complete")


def test_watch_json_types_and_cursor(dev: RunningDev) -> None:
    HttpApi(dev.url).request("POST", PATH, {"id": "w-2"})
    approve_once_waiting(dev, "w-2")

    code, out, _ = watch(
        dev, "approvals", "w-2", "--json", "--types", "step.completed,wait.started"
    )
    events = [json.loads(line) for line in out.splitlines()]

    assert code == 0
    assert [e["type"] for e in events] == ["step.completed", "wait.started"]
    assert events[0]["output"] == 42
    code, out, _ = watch(dev, "approvals", "w-2", "--cursor", events[0]["cursor"])
    assert code == 0
    assert [line.split()[1] for line in out.splitlines()] == [
        "wait.started",
        "event.received",
        "wait.completed",
        "instance.complete",
    ]


def test_watch_refuses_an_unknown_type_or_instance_with_1(dev: RunningDev) -> None:
    HttpApi(dev.url).request("POST", PATH, {"id": "w-3"})

    code, out, err = watch(dev, "approvals", "w-3", "--types", "step.done")
    assert (code, out) == (1, "")
    assert "unknown event type 'step.done'" in err

    code, _, err = watch(dev, "approvals", "nobody")
    assert code == 1 and "nobody" in err
