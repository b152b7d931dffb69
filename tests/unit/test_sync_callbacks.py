"""Sync step callbacks: inline when the step is alone, in worker threads beside other steps, and
under their timeout either way (see lambda_workflows.engine.replay.callbacks).

Where a callback ran is observed by its thread; an interrupted callback by the lines after the
interruption that never ran. No test measures a duration.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any, ClassVar

import pytest

from lambda_workflows import StepFailedError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.testing import Crash

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

SLOW = {"timeout": 0.05, "retries": {"limit": 1, "delay": 0}}


class Seen:
    """What the callbacks of one test saw."""

    threads: ClassVar[list[str]] = []
    events: ClassVar[list[str]] = []


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    Seen.threads, Seen.events = [], []
    yield


def where() -> str:
    return "main" if threading.current_thread() is threading.main_thread() else "worker"


class Sequence(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def one() -> int:
            Seen.threads.append(where())
            return 1

        return [await step.do(f"s{i}", one) for i in range(3)]


class Gathered(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        barrier = threading.Barrier(3, timeout=5)

        def part(ctx: Any) -> str:
            Seen.threads.append(where())
            barrier.wait()  # raises BrokenBarrierError unless all three run at once
            return str(ctx.step.name)

        config = {"retries": {"limit": 0}}
        return await asyncio.gather(*(step.do(n, config, part) for n in ("a", "b", "c")))


class Overruns(WorkflowEntrypoint):
    """Attempt 1 sleeps far past its 0.05 s timeout; attempt 2 returns at once."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def slow(ctx: Any) -> int:
            Seen.threads.append(where())
            try:
                if ctx.attempt == 1:
                    time.sleep(30)
                    Seen.events.append("went on after its deadline")
            finally:
                Seen.events.append(f"unwound attempt {ctx.attempt}")
            return int(ctx.attempt)

        return await step.do("slow", SLOW, slow)


class Stubborn(WorkflowEntrypoint):
    """Catches the interruption and returns anyway, late."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def stubborn() -> str:
            try:
                time.sleep(30)
            except BaseException:
                Seen.events.append("caught the interruption")
            return "late"

        try:
            return await step.do("stubborn", {**SLOW, "retries": {"limit": 0}}, stubborn)
        except StepFailedError as exc:
            return exc.error_name


class ReturnsCoroutine(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def fetch() -> str:
            await asyncio.sleep(0)
            return "fetched"

        return await step.do("fetch", lambda: fetch())


class RunsItsOwnLoop(WorkflowEntrypoint):
    """A sync callback using an async client the sync way, as it could in a thread."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def client_call() -> str:
            await asyncio.sleep(0)
            return "answered"

        def sync_wrapper() -> str:
            Seen.threads.append(where())
            return asyncio.run(client_call())

        return await step.do("call", sync_wrapper)


class Crashes(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def dies() -> None:
            Seen.events.append("ran")
            if len(Seen.events) == 1:
                raise Crash("the Lambda died here")

        await step.do("dies", dies)
        return "done"


def test_a_sync_step_alone_runs_inline_and_leaves_no_timer_or_handler(
    make_env: EnvFactory,
) -> None:
    env = make_env({"seq": Sequence})
    inst = env.create("seq", id="seq")
    env.run_until_idle()
    assert inst.status().output == [1, 1, 1]
    assert Seen.threads == ["main", "main", "main"]
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_sync_steps_of_a_gather_still_run_concurrently_in_threads(make_env: EnvFactory) -> None:
    env = make_env({"g": Gathered})
    inst = env.create("g", id="g")
    env.run_until_idle()
    status = inst.status()
    assert status.status == "complete", status.error
    assert status.output == ["a", "b", "c"]
    assert Seen.threads == ["worker"] * 3


def test_an_inline_sync_step_past_its_timeout_is_interrupted_and_retried(
    make_env: EnvFactory,
) -> None:
    env = make_env({"slow": Overruns})
    inst = env.create("slow", id="slow")
    env.run_until_idle()
    status = inst.status()
    assert status.output == 2
    assert status.steps[0].attempts == 2
    first = next(a.error for a in status.steps[0].attempt_history if a.attempt == 1)
    assert first is not None and first.name == "WorkflowTimeoutError"
    # stopped at its deadline (its finally ran, the line after the sleep never did), inline
    assert Seen.events == ["unwound attempt 1", "unwound attempt 2"]
    assert Seen.threads == ["main", "main"]


def test_an_attempt_that_catches_the_interruption_still_times_out(make_env: EnvFactory) -> None:
    env = make_env({"stubborn": Stubborn})
    inst = env.create("stubborn", id="stubborn")
    env.run_until_idle()
    assert Seen.events == ["caught the interruption"]
    assert inst.status().output == "WorkflowTimeoutError"


def test_a_sync_callback_returning_a_coroutine_is_awaited(make_env: EnvFactory) -> None:
    env = make_env({"c": ReturnsCoroutine})
    inst = env.create("c", id="c")
    env.run_until_idle()
    assert inst.status().output == "fetched"


def test_an_inline_sync_callback_may_run_an_event_loop_of_its_own(make_env: EnvFactory) -> None:
    env = make_env({"loop": RunsItsOwnLoop})
    inst = env.create("loop", id="loop")
    env.run_until_idle()
    assert inst.status().output == "answered"
    assert Seen.threads == ["main"]


def test_a_crash_inside_an_inline_callback_is_a_crash_not_a_failure(make_env: EnvFactory) -> None:
    env = make_env({"crash": Crashes})
    inst = env.create("crash", id="crash")
    env.run_until_idle()
    assert env.crashes == 1
    assert Seen.events == ["ran", "ran"]  # nothing recorded: it ran again, then completed
    assert inst.status().output == "done"


def test_when_sigalrm_is_taken_a_lone_sync_step_runs_in_a_thread(make_env: EnvFactory) -> None:
    # GIVEN the process uses SIGALRM itself
    fired: list[int] = []

    def theirs(signum: int, frame: FrameType | None) -> None:
        fired.append(signum)

    previous = signal.signal(signal.SIGALRM, theirs)
    try:
        env = make_env({"seq": Sequence})
        inst = env.create("seq", id="taken")
        env.run_until_idle()
        # THEN the steps ran in worker threads, and the handler is still theirs, never fired
        assert inst.status().output == [1, 1, 1]
        assert Seen.threads == ["worker"] * 3
        assert signal.getsignal(signal.SIGALRM) is theirs
        assert fired == []
    finally:
        signal.signal(signal.SIGALRM, previous)
