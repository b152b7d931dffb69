"""Workflows the functional tests drive."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import WorkflowTimeoutError

calls: Counter[str] = Counter()
_lock = threading.Lock()


def count(key: str) -> int:
    with _lock:
        calls[key] += 1
        return calls[key]


class Lifecycle(WorkflowEntrypoint):
    """Charge, sleep an hour, wait for approval, finish."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        receipt = await step.do("charge", lambda: {"charged": event.payload["amount"]})
        await step.sleep("cool down", "1 hour")
        approval = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return {"receipt": receipt, "by": approval.payload["user"]}


class Sequential(WorkflowEntrypoint):
    """``params.steps`` trivial steps, optionally with one sleep in the middle."""

    max_steps = 25_000

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        total = 0
        n = int(event.payload["steps"])
        for i in range(n):
            if event.payload.get("sleep") and i == n // 2:
                await step.sleep("halfway", "1 hour")
            total += await step.do(f"step {i}", lambda i=i: i)
        return total


class ThreeSteps(WorkflowEntrypoint):
    """Three steps whose callbacks count their runs; a sleep between two and three."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        key = event.instance_id

        def work(name: str) -> str:
            count(f"{key} {name}")
            return f"{name} done"

        a = await step.do("one", lambda: work("one"))
        b = await step.do("two", lambda: work("two"))
        await step.sleep("pause", "1 hour")
        c = await step.do("three", lambda: work("three"))
        return [a, b, c]


class Approves(WorkflowEntrypoint):
    """Mails the link from a step, waits, then answers with what arrived."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        approval = step.wait_for_event("approval", type="approved", timeout="1 hour", link=True)
        mailed = await step.do("mail the link", lambda: approval.url)
        try:
            got = await approval
        except WorkflowTimeoutError:
            await step.sleep("after the timeout", "1 day")
            return {"mailed": mailed, "timed_out": True}
        return {"mailed": mailed, "same_url": approval.url == mailed, "payload": got.payload}
