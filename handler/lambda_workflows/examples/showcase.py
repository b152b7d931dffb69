"""The demo's workflows: a sleep, an event wait, a retried step, and a crash that resumes.

They use local fakes instead of real services, so `make demo` needs no network.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep

_lock = threading.Lock()
attempts: Counter[str] = Counter()
"""How many times each demo callback ran, per instance (to show what replay skipped)."""


def _count(key: str) -> int:
    with _lock:
        attempts[key] += 1
        return attempts[key]


class SubscriptionWorkflow(WorkflowEntrypoint):
    """Charge a customer, cool down for 3 hours, then wait for a manager's approval."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        customer = event.payload["customer_id"]

        def charge() -> dict[str, Any]:
            _count(f"charge {customer}")
            return {"customer": customer, "amount": 10.0, "charged": True}

        receipt = await step.do(f"charge {customer}", charge)
        await step.sleep("cool down", "3 hours")
        approval = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return {"receipt": receipt, "approved_by": approval.payload["user"]}


class FlakyFetchWorkflow(WorkflowEntrypoint):
    """A step that fails twice before it succeeds: retried with exponential backoff."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def fetch(ctx: Any) -> str:
            _count(f"fetch {event.instance_id}")
            if ctx.attempt < 3:
                raise ConnectionError(f"upstream unavailable (attempt {ctx.attempt})")
            return "cutest cat"

        config = {"retries": {"limit": 4, "delay": "5 seconds", "backoff": "exponential"}}
        cat = await step.do("fetch cat", config, fetch)
        return {"cat": cat}


class CrashResumeWorkflow(WorkflowEntrypoint):
    """Three steps; the process dies during the third. Only the third runs again."""

    crash: type[BaseException] | None = None  # set by the runtime that simulates the crash

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        results = []
        for name in ("reserve stock", "charge card", "ship parcel"):

            def work(ctx: Any, name: str = name) -> str:
                runs = _count(f"{event.instance_id} {name}")
                crash = type(self).crash
                if name == "ship parcel" and runs == 1 and crash is not None:
                    raise crash("simulated crash: the invocation died mid-step")
                return f"{name}: ok (run {runs})"

            results.append(await step.do(name, work))
        return results


SHOWCASE_WORKFLOWS: dict[str, type[WorkflowEntrypoint]] = {
    "subscription": SubscriptionWorkflow,
    "flaky-fetch": FlakyFetchWorkflow,
    "crash-resume": CrashResumeWorkflow,
}
