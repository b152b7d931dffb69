"""Workflows the browser tests open: a long one, one that waits at a gate, one rolled back, and
one of every shape for the diagram."""

from __future__ import annotations

import asyncio
from typing import Any

from lambda_workflows import (
    NonRetryableError,
    StepFailedError,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
)
from tests.functional.api.many_steps import LoudSteps

MANY_STEPS = 1_000


class ManyStepsWorkflow(WorkflowEntrypoint):
    """``params["steps"]`` steps (1,000 by default), each returning its number."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        total = int(event.payload.get("steps", MANY_STEPS))
        for number in range(total):
            await step.do(f"step {number:04d}", lambda number=number: number)
        return {"steps": total}


class GateWorkflow(WorkflowEntrypoint):
    """Prepares, waits for a "go" event, then finishes: live long enough to pause and resume."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("prepare", lambda: "ready")
        go = await step.wait_for_event("gate", type="go", timeout="1 hour")
        return await step.do("finish", lambda: {"opened_by": go.payload.get("by")})


class RefundedWorkflow(WorkflowEntrypoint):
    """Debits, then fails for good: the debit's rollback refunds it."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def refund(ctx: Any, output: Any, error: Any) -> None:
            """Nothing to call here: the row it leaves is what the page shows."""

        await step.do("debit", lambda: {"debited": 10}, rollback=refund)

        def credit() -> None:
            raise NonRetryableError("the receiving account is closed")

        await step.do("credit", credit)


class FulfilmentWorkflow(WorkflowEntrypoint):
    """An order shipped: a branch, a loop, a gather, a try, a sleep, an event wait, a rollback."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        order = await step.do(
            "load order",
            {"retries": {"limit": 3, "delay": "1 second"}, "timeout": "30 seconds"},
            lambda: {"items": ["mug", "poster"], "express": event.payload.get("express", False)},
        )
        if order["express"]:
            await step.do("book courier", lambda: "courier")
        else:
            await step.sleep("wait for the van", "1 hour")
        for item in order["items"]:
            await step.do(f"reserve {item}", lambda: True, rollback=self.release)
        await asyncio.gather(
            step.do("email customer", lambda: "sent"),
            step.do("print label", lambda: "printed"),
        )
        try:
            await step.do("charge card", lambda: "charged")
        except StepFailedError:
            await step.do("cancel order", lambda: "cancelled")
            raise
        return await step.wait_for_event("delivered", type="delivered", timeout="7 days")

    def release(self, ctx: Any, output: Any, error: Any) -> None:
        """Nothing reserved for real: the diagram only shows that the step has a rollback."""


class RenewalV1(WorkflowEntrypoint):
    """Version 1 of a renewal: still deployed for the instances that run on it."""

    version = "1"

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.wait_for_event("renewed", type="renewed", timeout="30 days")


class RenewalV2(WorkflowEntrypoint):
    """Version 2 of a renewal: new instances run it."""

    version = "2"

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("notify", lambda: "sent")
        return await step.wait_for_event("renewed", type="renewed", timeout="30 days")


BROWSER_WORKFLOWS: dict[str, type[WorkflowEntrypoint]] = {
    "renewal": RenewalV2,
    "renewal@1": RenewalV1,
    "many-steps": ManyStepsWorkflow,
    "loud-steps": LoudSteps,
    "gate": GateWorkflow,
    "refunded": RefundedWorkflow,
    "fulfilment": FulfilmentWorkflow,
}
