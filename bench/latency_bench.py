"""Journal writes under network latency: sequential steps against a gather of steps.

moto answers in-process, with no network; real DynamoDB takes ~5 ms a write. A botocore hook
sleeps ``LATENCY`` before every AWS call the runtime makes (store, queue, scheduler) to stand
for that. One runner invocation advances one instance through N trivial steps, either one
after the other or all in one ``asyncio.gather``.

What a real deployment waits for is the network: how long, in all, at least one call of the
invocation was on its way. The hook keeps each sleep's interval; their union, divided by the
mean sleep, is the number of latencies the invocation waited one after the other. Sequential
steps wait about one per step (each result is recorded before run() goes on): that is the
limit. A gather's writes overlap, so it waits a few (target: at most 15 for 100 steps). The
wall times with and without the hook are printed too; moto's own CPU time (serialized: it
answers one request at a time, some ms a write) is in both, and a real deployment does not
pay it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.runtime import LAMBDA_RUNNER
from lambda_workflows.testing import WorkflowTestEnv

LATENCY = 0.005  # seconds per AWS call, about one DynamoDB write from Lambda
TARGET_GATHER_100 = 15  # latencies of wall time for a gather of 100 trivial steps
RUNS = 5  # per row, with and without the latency: the best of each counts


async def trivial() -> int:
    return 1


class Sequential(WorkflowEntrypoint):
    max_steps = 25_000

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for i in range(int(event.payload["steps"])):
            await step.do(f"step {i}", trivial)
        return None


class Gathered(WorkflowEntrypoint):
    max_steps = 25_000

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        steps = int(event.payload["steps"])
        await asyncio.gather(*(step.do(f"step {i}", trivial) for i in range(steps)))
        return None


@contextmanager
def latency(
    env: WorkflowTestEnv, seconds: float, waits: list[tuple[float, float]]
) -> Iterator[Counter[str]]:
    """Sleep ``seconds`` before every call of the runtime's clients; count the calls and keep
    each sleep's (start, end) in ``waits`` (a busy machine oversleeps: the real ones count)."""
    calls: Counter[str] = Counter()
    runtime = env.aws.runtime

    def before(model: Any, **_: Any) -> None:
        calls[model.name] += 1
        if seconds:
            started = time.perf_counter()
            time.sleep(seconds)
            waits.append((started, time.perf_counter()))

    clients = (runtime.store.client, runtime.queue.client, runtime.wakeups.client)
    for client in clients:
        client.meta.events.register("before-call", before)
    try:
        yield calls
    finally:
        for client in clients:
            client.meta.events.unregister("before-call", before)


def waited(waits: list[tuple[float, float]]) -> float:
    """Seconds during which at least one call was on its way (the union of the intervals)."""
    total, reached = 0.0, float("-inf")
    for start, end in sorted(waits):
        if end > reached:
            total += end - max(start, reached)
            reached = end
    return total


def run_one(
    env: WorkflowTestEnv, shape: str, n: int, seconds: float
) -> tuple[float, float, Counter[str]]:
    """(wall seconds, latencies waited, calls by operation) of a new instance of ``shape``."""
    instance = env.create(shape, params={"steps": n})
    waits: list[tuple[float, float]] = []
    with latency(env, seconds, waits) as calls:
        started = time.perf_counter()
        env.run_until_idle()
        elapsed = time.perf_counter() - started
    assert instance.status().status == "complete"
    mean = sum(end - start for start, end in waits) / len(waits) if waits else 1.0
    return elapsed, waited(waits) / mean, calls


def main() -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    print(f"runner invocation on moto, {LATENCY * 1000:.0f} ms injected before every AWS call")
    print(f"{'shape':>10} {'N':>4} {'calls':>6} {'latencies waited':>17} {'wall':>12} ", end="")
    print(f"{'wall, no latency':>17}")
    workflows = {"sequential": Sequential, "gathered": Gathered}
    with WorkflowTestEnv(workflows, backend="aws", settings=LAMBDA_RUNNER) as env:
        run_one(env, "gathered", 10, 0.0)  # warm up: imports, moto's first calls
        for shape, n in (
            ("sequential", 10),
            ("sequential", 100),
            ("gathered", 10),
            ("gathered", 100),
        ):
            line(env, shape, n)


def line(env: WorkflowTestEnv, shape: str, n: int) -> None:
    """Print one row: the best of ``RUNS`` with the latency and without (runs alternate, so a
    busy machine slows both alike)."""
    best = without = float("inf")
    latencies = 0.0
    calls: Counter[str] = Counter()
    for _ in range(RUNS):
        elapsed, rounds, calls = run_one(env, shape, n, LATENCY)
        if elapsed < best:
            best, latencies = elapsed, rounds
        without = min(without, run_one(env, shape, n, 0.0)[0])
    verdict = ""
    if shape == "gathered" and n == 100:
        verdict = "  ok" if latencies <= TARGET_GATHER_100 else f"  over {TARGET_GATHER_100}"
    print(
        f"{shape:>10} {n:>4} {sum(calls.values()):>6} {latencies:>17.1f} "
        f"{best * 1000:>9.0f} ms {without * 1000:>14.0f} ms{verdict}"
    )


if __name__ == "__main__":
    main()
