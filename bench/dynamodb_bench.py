"""The DynamoDB path (moto, in-process): AWS API calls and wall time per step.

N sequential trivial steps through the real RunnerFunction handler and adapters, with the
deployed runner settings. moto's own cost (~4 ms per write here) dominates the wall time; the
API-call counts are what a real deployment pays for.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.runtime import LAMBDA_RUNNER
from lambda_workflows.testing import WorkflowTestEnv


class Sequential(WorkflowEntrypoint):
    max_steps = 25_000

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for i in range(int(event.payload["steps"])):
            await step.do(f"step {i}", lambda: 1)
        return None


def measure(n: int) -> tuple[float, Counter[str], int]:
    """(seconds per step, API calls by operation, runner invocations) for ``n`` steps."""
    with WorkflowTestEnv({"seq": Sequential}, backend="aws", settings=LAMBDA_RUNNER) as env:
        calls: Counter[str] = Counter()
        runtime = env.aws.runtime
        clients = [runtime.store.client, runtime.queue.client, runtime.wakeups.client]
        if runtime.queue.direct is not None:  # the creation's work: a direct invoke
            clients.append(runtime.queue.direct.client)
        for client in clients:

            def hook(model: Any, **_: Any) -> None:
                calls[model.name] += 1

            client.meta.events.register("before-call", hook)
        env.create("seq", id="bench", params={"steps": n})
        started = time.perf_counter()
        env.run_until_idle()
        elapsed = time.perf_counter() - started
        return elapsed / n, calls, env.invocations


def main() -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    print("DynamoDB path on moto (in-process), deployed runner settings")
    print(f"{'N':>6} {'wall/step':>10} {'API calls/step':>15} {'invocations':>12}  calls")
    for n in (10, 100, 1_000):
        per_step, calls, invocations = measure(n)
        total = sum(calls.values())
        detail = ", ".join(f"{op} {count}" for op, count in sorted(calls.items()))
        print(f"{n:>6} {per_step * 1000:>7.2f} ms {total / n:>15.3f} {invocations:>12}  {detail}")


if __name__ == "__main__":
    main()
