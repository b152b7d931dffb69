"""Engine overhead on the in-memory store: new steps and replay of cached steps.

For N sequential trivial steps: the time per new step (engine + in-memory write, with an
async callback and with a sync callback, which runs inline when it is the only step running;
best of 3 runs), and the time to replay N cached steps in one pass (what every resume costs).
Replay must stay linear in N. Target: a new sync step ≤ 65 µs.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.clock import SystemClock
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.engine.replay.core import Completed, Replay
from lambda_workflows.engine.replay.journal import Journal
from lambda_workflows.testing import WorkflowTestEnv


def sequential(n: int, sync: bool) -> type[WorkflowEntrypoint]:
    async def trivial_async() -> int:
        return 1

    def trivial_sync() -> int:
        return 1

    callback = trivial_sync if sync else trivial_async

    class Sequential(WorkflowEntrypoint):
        max_steps = 25_000

        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            total = 0
            for i in range(n):
                total += await step.do(f"step {i}", callback)
            return total

    return Sequential


def measure(n: int, sync: bool) -> tuple[float, float]:
    """(seconds per new step, best of 3 runs; seconds to replay all n cached steps)."""
    workflow = sequential(n, sync)
    env = WorkflowTestEnv({"seq": workflow})
    per_new = float("inf")
    for run in range(3):
        env.create("seq", id=f"bench-{run}")
        started = time.perf_counter()
        env.run_until_idle()
        per_new = min(per_new, (time.perf_counter() - started) / n)
    state = env.store.load(InstanceRef("seq", "bench-0"))
    assert state.record.status == "complete"

    async def never(_: Any) -> Any:
        raise AssertionError("replay must not write")

    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        replay = Replay(
            workflow(),
            WorkflowEvent({}, env.clock.now(), "bench-0"),
            Journal(state.entries, state.events),
            never,
            SystemClock(),
        )
        outcome = asyncio.run(replay.run())
        best = min(best, time.perf_counter() - started)
        assert isinstance(outcome, Completed) and outcome.output == str(n)
    return per_new, best


def main() -> None:
    print("engine, in-memory store (best of 3 replays)")
    header = ("N", "new step async", "new step sync", "replay N cached", "per cached")
    print(f"{header[0]:>7} {header[1]:>16} {header[2]:>15} {header[3]:>17} {header[4]:>11}")
    for n in (100, 1_000, 10_000):
        new_async, replay = measure(n, sync=False)
        new_sync, _ = measure(n, sync=True)
        print(
            f"{n:>7} {new_async * 1e6:>13.1f} µs {new_sync * 1e6:>12.1f} µs "
            f"{replay:>15.4f} s {replay / n * 1e6:>8.1f} µs"
        )


if __name__ == "__main__":
    main()
