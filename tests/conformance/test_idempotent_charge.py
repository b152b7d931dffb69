"""Rules of Workflows: "Ensure API/Binding calls are idempotent".

Check whether a non-idempotent call is still needed first.

A step runs at least once: its callback runs again when the invocation dies mid-way or an
attempt fails after the service committed. ``IdempotentChargeWorkflow`` asks the processor
whether the customer was charged before charging, so the customer pays once whatever happens.
Cloudflare shows only the ✅ version; ``UncheckedChargeWorkflow`` below is the same step without
the check (test-local), to prove the injected faults really do run the callback twice.
"""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.examples._fakes import example_env
from lambda_workflows.examples.idempotent_charge import IdempotentChargeWorkflow
from lambda_workflows.testing import Crash, WorkflowTestEnv

from ._support import crash_after, inject, run_one, step_rows

CUSTOMER = 123456
STEP = f"charge {CUSTOMER} for its monthly subscription"


class UncheckedChargeWorkflow(WorkflowEntrypoint):
    """Test-local: Cloudflare's charge step *without* the "already charged?" check."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        customer_id = event.payload["customer_id"]
        return await step.do(
            f"charge {customer_id} for its monthly subscription",
            lambda: self.env.PAYMENTS.charge(customer_id, 10.0),
        )


def _run(workflow: type[WorkflowEntrypoint], fakes: dict[str, Any]) -> tuple[WorkflowTestEnv, Any]:
    return run_one(workflow, fakes, "charge", "sub-2025-01", {"customer_id": CUSTOMER})


def test_customer_is_charged_once_when_the_invocation_dies_right_after_the_payment_call() -> None:
    # GIVEN a payment processor that commits the charge and then the invocation dies
    fakes = example_env()
    crash = inject(fakes["PAYMENTS"], "charge", Crash, commit=True)
    # WHEN the idempotent charge workflow runs to the end (the work is redelivered and replayed)
    env, inst = _run(IdempotentChargeWorkflow, fakes)
    # THEN the crash happened, the step's callback ran again, and found the charge already done
    assert crash.fired == 1 and env.crashes == 1
    assert inst.status().status == "complete"
    assert fakes["PAYMENTS"].charge_count(CUSTOMER) == 1
    assert crash.calls == 1  # the rerun did not even call charge()
    # nothing of the crashed attempt was recorded: one step, one recorded attempt
    assert step_rows(inst) == [(STEP, 1, "do", "complete", 1)]


def test_customer_is_charged_once_when_an_attempt_fails_after_the_processor_committed() -> None:
    # GIVEN a processor that commits the charge but the answer is lost (the attempt fails)
    fakes = example_env()
    lost = inject(
        fakes["PAYMENTS"], "charge", lambda: ConnectionError("reset by peer"), commit=True
    )
    # WHEN the step is retried by the engine
    _, inst = _run(IdempotentChargeWorkflow, fakes)
    # THEN the retry saw the committed charge and did not charge again
    status = inst.status()
    assert lost.fired == 1
    assert status.status == "complete"
    assert fakes["PAYMENTS"].charge_count(CUSTOMER) == 1
    assert step_rows(inst) == [(STEP, 1, "do", "complete", 2)]


def test_a_recorded_charge_is_replayed_without_asking_the_processor_again() -> None:
    # GIVEN the invocation dies right after the charge step was recorded
    fakes = example_env()
    checks = inject(fakes["PAYMENTS"], "is_charged")  # a spy
    workflow = crash_after(IdempotentChargeWorkflow, STEP)
    # WHEN it is replayed
    env, inst = _run(workflow, fakes)
    # THEN the replay returned the recorded receipt: no second check, no second charge
    assert workflow.crash_plan.crashed == [STEP] and env.crashes == 1
    assert checks.calls == 1
    assert fakes["PAYMENTS"].charge_count(CUSTOMER) == 1
    assert inst.status().output == {
        "customer_id": str(CUSTOMER),
        "amount": 10.0,
        "charge_number": 1,
    }


def test_without_the_check_the_same_crash_charges_the_customer_twice() -> None:
    # GIVEN the same fault as above, but a charge step that does not check first (test-local)
    fakes = example_env()
    inject(fakes["PAYMENTS"], "charge", Crash, commit=True)
    # WHEN it runs to the end
    _, inst = _run(UncheckedChargeWorkflow, fakes)
    # THEN the rerun of the step charged again: this is what the check protects against
    assert inst.status().status == "complete"
    assert fakes["PAYMENTS"].charge_count(CUSTOMER) == 2
    assert inst.status().output["charge_number"] == 2
