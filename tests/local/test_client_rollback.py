"""``instance.terminate(rollback=True)`` in the client's two modes, direct and over HTTP, against
one in-process ``lambda-workflows dev``: the same request, the same rollbacks, the same status."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import Workflow, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.local.runtime import LocalRuntime

from .devserver import serving
from .test_client_modes import MODES, Dev

undone: list[tuple[str, str, str]] = []  # (instance, step, error name)


class Transfer(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def undo(ctx: Any, output: Any, error: Any) -> None:
            undone.append((event.instance_id, ctx.step.name, error.name))

        await step.do("debit", lambda: {"debited": 1}, rollback=undo)
        await step.do("credit", lambda: {"credited": 1}, rollback=undo)
        await step.wait_for_event("confirmation", type="confirmed", timeout="1 day")


@pytest.fixture(scope="module")
def dev() -> Iterator[Dev]:
    runtime = LocalRuntime({"transfers": Transfer}, out=lambda line: None)
    with serving(runtime, worker=False) as running:
        yield Dev(running.runtime, running.server)


@pytest.mark.parametrize("mode", MODES)
def test_terminate_with_rollback_runs_the_rollbacks_in_either_mode(dev: Dev, mode: str) -> None:
    transfers = (
        Workflow("transfers", url=dev.url)
        if mode == "http"
        else Workflow("transfers", service=dev.service)
    )
    instance_id = f"{mode}-t-1"
    instance = transfers.create(id=instance_id)
    dev.runtime.run_until_idle()
    assert instance.status().status == "waiting"
    # WHEN it is terminated with rollback
    instance.terminate(rollback=True)
    assert instance.status().status == "running"
    dev.runtime.run_until_idle()
    # THEN its rollbacks ran newest first, then it became terminated; both modes read the same
    assert [(step, error) for i, step, error in undone if i == instance_id] == [
        ("credit", "Terminated"),
        ("debit", "Terminated"),
    ]
    status = instance.status()
    assert status.status == "terminated"
    assert status.rollback is not None and status.rollback.status == "complete"
    direct = dev.service.status(InstanceRef("transfers", instance_id))
    assert status.to_dict() == direct.to_dict()
