"""Rules of Workflows: "Ensure API/Binding calls are idempotent".

Check whether a non-idempotent call is still needed first.

A step runs *at least* once: the engine may restart in the middle of a callback, or the service
may commit a request and die before answering. Either way the callback runs again, so a call
that is not idempotent (a payment) must be guarded by a check of whether it already happened.
Cloudflare's documentation shows only the good version; the bad one is the same step without
the check.
"""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


class IdempotentChargeWorkflow(WorkflowEntrypoint):
    """Charge a customer's monthly subscription once, however often the step runs."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        customer_id = event.payload.get("customer_id", 123456)

        # ✅ Good: ask the payment processor whether the charge is still needed, and only then
        # make the non-idempotent call.
        async def charge_monthly_subscription() -> dict[str, Any] | None:
            # A previous attempt may have charged the customer and then failed (the processor
            # committed but the answer was lost, or the engine restarted): nothing to do.
            if self.env.PAYMENTS.is_charged(customer_id):
                return None
            # Not idempotent: without the check above, every retry of this step would charge
            # the customer once more.
            receipt: dict[str, Any] = self.env.PAYMENTS.charge(customer_id, 10.0)
            return receipt

        return await step.do(
            f"charge {customer_id} for its monthly subscription", charge_monthly_subscription
        )
