"""Workflows the browser tests open: a long one, one that waits at a gate, one rolled back."""

from __future__ import annotations

from typing import Any

from workflows import NonRetryableError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep

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


BROWSER_WORKFLOWS: dict[str, type[WorkflowEntrypoint]] = {
    "many-steps": ManyStepsWorkflow,
    "gate": GateWorkflow,
    "refunded": RefundedWorkflow,
}
