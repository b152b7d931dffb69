"""`make demo`: the example workflows end to end, with each instance's step timeline.

Runs on the in-memory engine with virtual time (sleeps and retry delays are skipped, and the
screen says so). Exits non-zero if any instance does not end as expected.
"""

from __future__ import annotations

import sys
from typing import Any

from examples.showcase import SHOWCASE_WORKFLOWS, CrashResumeWorkflow, attempts

from .engine.clock import iso
from .engine.model import InstanceStatusView
from .testing import Crash, WorkflowTestEnv


def print_timeline(title: str, status: InstanceStatusView) -> None:
    """Print one instance's status, output and step timeline."""
    print(f"\n{title}  [{status.workflow}/{status.id}] -> {status.status}")
    for row in status.steps:
        end = iso(row.end) or "…"
        detail = f"error={dict(row.error)}" if row.error else f"output={row.output!r}"
        print(
            f"  {row.type:<12} {row.name!r:<22} #{row.count} {row.status:<9} "
            f"attempts={row.attempts}  {iso(row.start)} -> {end}  {detail}"
        )
    if status.error:
        print(f"  error: {dict(status.error)}")
    else:
        print(f"  output: {status.output!r}")


def main() -> int:
    """Run the demo; return the process exit code."""
    CrashResumeWorkflow.crash = Crash
    env = WorkflowTestEnv(SHOWCASE_WORKFLOWS)
    print("Durable workflows demo — in-memory engine, VIRTUAL TIME: sleeps and retry delays")
    print(f"are skipped instantly. Virtual clock starts at {env.clock.now().isoformat()}.")
    sub = env.create("subscription", id="sub-42", params={"customer_id": 42})
    flaky = env.create("flaky-fetch", id="flaky-1")
    crash = env.create("crash-resume", id="order-7")
    env.run_until_idle()
    print(f"\nafter the first run: subscription is {sub.status().status} (waiting for approval)")
    sub.send_event(type="approved", payload={"user": "manager@example.com"})
    print("sent event 'approved' to sub-42")
    env.run_until_idle()

    expected: list[tuple[str, Any, Any]] = [
        ("Subscription: charge, 3 h sleep, wait for approval", sub, "complete"),
        ("Flaky fetch: fails twice, retried with backoff", flaky, "complete"),
        ("Crash and resume: dies in step 3, only step 3 reruns", crash, "complete"),
    ]
    ok = True
    for title, inst, want in expected:
        status = inst.status()
        print_timeline(title, status)
        ok &= status.status == want
    ok &= attempts["charge 42"] == 1
    ok &= attempts["order-7 reserve stock"] == 1 and attempts["order-7 ship parcel"] == 2
    print(f"\ncallback runs: {dict(attempts)}")
    print(f"runner invocations: {env.invocations}, crashes survived: {env.crashes}")
    print("\nDEMO OK" if ok else "\nDEMO FAILED: an instance did not end as expected")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
