"""Two workflows as deployed, and the local code about to replace them, for check-deploy tests.

Deployed (version 1): ``orders`` reserves, charges and waits for "shipped"; ``shipping``
packs, labels and waits for "picked up". The local code adds a step after orders' wait
(compatible: the recorded calls come first, in the same order) and swaps shipping's first two
steps (incompatible: a shipping instance in flight recorded "pack" at call #1), as version 2.
"""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


async def _done() -> str:
    return "done"


class Orders(WorkflowEntrypoint):
    """Orders as deployed."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("reserve", _done)
        await step.do("charge", _done)
        return await step.wait_for_event("shipped", type="shipped", timeout="1 day")


class OrdersWithReceipt(WorkflowEntrypoint):
    """Orders with a step added after the last recorded one: compatible, same version."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("reserve", _done)
        await step.do("charge", _done)
        shipped = await step.wait_for_event("shipped", type="shipped", timeout="1 day")
        await step.do("email receipt", _done)
        return shipped


class Shipping(WorkflowEntrypoint):
    """Shipping as deployed (version 1)."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("pack", _done)
        await step.do("label", _done)
        return await step.wait_for_event("picked up", type="picked-up", timeout="1 day")


class ShippingLabelFirst(WorkflowEntrypoint):
    """Shipping with its first two steps swapped: incompatible, so version 2."""

    version = "2"

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("label", _done)
        await step.do("pack", _done)
        return await step.wait_for_event("picked up", type="picked-up", timeout="1 day")


class Chatty(WorkflowEntrypoint):
    """60 steps whose first attempts fail saying 8,000 characters (its history takes several
    pages of the API), then a wait."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for number in range(60):
            await step.do(_talk_name(number), {"retries": {"limit": 1, "delay": 0}}, _talk)
        return await step.wait_for_event("done", type="done", timeout="1 day")


class ChattyLastRenamed(Chatty):
    """Chatty whose 60th step has a new name: incompatible at call #60 only."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for number in range(59):
            await step.do(_talk_name(number), {"retries": {"limit": 1, "delay": 0}}, _talk)
        await step.do("last words", {"retries": {"limit": 1, "delay": 0}}, _talk)
        return await step.wait_for_event("done", type="done", timeout="1 day")


def _talk_name(number: int) -> str:
    return f"talk {number}"


def _talk(ctx: Any) -> str:
    if ctx.attempt == 1:
        raise RuntimeError("x" * 8_000)
    return "said"


MODULE = __name__
DEPLOYED = f"orders={MODULE}:Orders,shipping={MODULE}:Shipping"
CHANGED = f"orders={MODULE}:OrdersWithReceipt,shipping={MODULE}:ShippingLabelFirst"
CHANGED_AND_PINNED = f"{CHANGED},shipping@1={MODULE}:Shipping"
CHATTY = f"chatty={MODULE}:Chatty"
CHATTY_CHANGED = f"chatty={MODULE}:ChattyLastRenamed"
