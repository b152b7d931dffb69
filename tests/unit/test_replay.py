"""Replay: recorded steps are never re-run, names are counted, crashes resume from the journal."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.testing import Crash

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

calls: Counter[str] = Counter()


class ThreeSteps(WorkflowEntrypoint):
    crash_in_third = True

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def one() -> int:
            calls["one"] += 1
            return 1

        async def two() -> int:
            calls["two"] += 1
            return 2

        def three() -> int:
            calls["three"] += 1
            if calls["three"] == 1 and type(self).crash_in_third:
                raise Crash()
            return 3

        a = await step.do("one", one)
        b = await step.do("two", two)
        c = await step.do("three", three)
        return [a, b, c]


def test_crash_inside_step_three_reruns_only_step_three(make_env: EnvFactory) -> None:
    # GIVEN a 3-step workflow whose third step crashes the invocation on its first attempt
    calls.clear()
    env = make_env({"three": ThreeSteps})
    inst = env.create("three", id="i-1")
    # WHEN it runs to the end
    env.run_until_idle()
    # THEN steps one and two ran once, step three twice, and the output is complete
    assert inst.status().status == "complete"
    assert inst.status().output == [1, 2, 3]
    assert calls == Counter(one=1, two=1, three=2)
    assert env.crashes == 1


def test_nothing_of_a_crashed_attempt_is_recorded(make_env: EnvFactory) -> None:
    calls.clear()
    env = make_env({"three": ThreeSteps})
    inst = env.create("three", id="i-2")
    env.run_once("three", "i-2")  # the invocation that crashes in step three
    assert [e.name for e in inst.journal()] == ["one", "two"]


class DuplicateNames(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        first = await step.do("fetch", lambda ctx: ctx.step.count)
        second = await step.do("fetch", lambda ctx: ctx.step.count)
        return [first, second]


def test_duplicate_step_names_are_distinct_steps(make_env: EnvFactory) -> None:
    env = make_env({"dup": DuplicateNames})
    inst = env.create("dup", id="d")
    env.run_until_idle()
    assert inst.status().output == [1, 2]
    assert [(s.name, s.count) for s in inst.status().steps] == [("fetch", 1), ("fetch", 2)]


class Nested(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def outer() -> str:
            inner_a = await step.do("inner a", lambda: "a")
            inner_b = await step.do("inner b", lambda: "b")
            calls["outer"] += 1
            if calls["outer"] == 1:
                raise RuntimeError("outer fails once after its inner steps")
            return inner_a + inner_b

        return await step.do("outer", {"retries": {"limit": 2, "delay": 1}}, outer)


def test_nested_steps_are_recorded_and_replayed_inside_their_parent(make_env: EnvFactory) -> None:
    calls.clear()
    env = make_env({"nested": Nested})
    inst = env.create("nested", id="n")
    env.run_until_idle()
    status = inst.status()
    assert status.status == "complete"
    assert status.output == "ab"
    names = [(s.name, s.parent is not None) for s in status.steps]
    assert ("inner a", True) in names and ("outer", False) in names
    # the retried parent found its inner steps recorded: each inner step recorded once
    assert sum(1 for s in status.steps if s.name == "inner a") == 1


class GatherAsync(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        started = 0
        all_started = asyncio.Event()

        async def part(ctx: Any) -> str:
            nonlocal started
            started += 1
            if started == 3:
                all_started.set()
            # Only completes if all three are running at the same time.
            await asyncio.wait_for(all_started.wait(), 5)
            return ctx.step.name

        return await asyncio.gather(step.do("a", part), step.do("b", part), step.do("c", part))


class GatherSync(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        barrier = threading.Barrier(3, timeout=5)

        def part(ctx: Any) -> str:
            barrier.wait()  # raises BrokenBarrierError unless all three run at once
            return ctx.step.name

        config = {"retries": {"limit": 0}}
        return await asyncio.gather(
            step.do("a", config, part), step.do("b", config, part), step.do("c", config, part)
        )


def test_gather_runs_async_steps_concurrently(make_env: EnvFactory) -> None:
    env = make_env({"g": GatherAsync})
    inst = env.create("g", id="g")
    env.run_until_idle()
    assert inst.status().output == ["a", "b", "c"]


def test_gather_runs_sync_steps_concurrently_in_threads(make_env: EnvFactory) -> None:
    env = make_env({"g": GatherSync})
    inst = env.create("g", id="g")
    env.run_until_idle()
    assert inst.status().status == "complete", inst.status().error
    assert inst.status().output == ["a", "b", "c"]


class CachedValues(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        token = await step.do("make token", lambda: {"n": calls["token"] + 1})
        calls["token"] += 1
        await step.sleep("nap", "1 hour")
        return token


def test_replay_returns_the_recorded_value_without_running_the_callback(
    make_env: EnvFactory,
) -> None:
    calls.clear()
    env = make_env({"c": CachedValues})
    inst = env.create("c", id="c")
    env.run_until_idle()
    # run() was replayed after the sleep: the callback ran once, the value is the recorded one
    assert calls["token"] == 2  # run()-level line ran on both passes
    assert inst.status().output == {"n": 1}
    assert env.invocations == 2


class CtxReader(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def read(ctx: Any) -> Any:
            return {
                "name": ctx.step.name,
                "count": ctx.step.count,
                "attempt": ctx.attempt,
                "limit": ctx.config["retries"]["limit"],
                "timeout": ctx.config["timeout"],
            }

        return await step.do("ctx", {"retries": {"limit": 2}, "timeout": "1 minute"}, read)


def test_callback_receives_ctx_with_step_attempt_and_config(make_env: EnvFactory) -> None:
    env = make_env({"ctx": CtxReader})
    inst = env.create("ctx", id="x")
    env.run_until_idle()
    assert inst.status().output == {
        "name": "ctx",
        "count": 1,
        "attempt": 1,
        "limit": 2,
        "timeout": 60.0,
    }


class SiblingCrashes(WorkflowEntrypoint):
    """One gathered step waits for a retry while its sibling dies mid-callback."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def flaky(ctx: Any) -> str:
            if ctx.attempt == 1:
                raise ConnectionError("retry me")
            return "flaky ok"

        async def dies_once() -> str:
            await asyncio.sleep(0.01)  # still running when its sibling suspends run()
            calls["sibling"] += 1
            if calls["sibling"] == 1:
                raise Crash()
            return "sibling ok"

        config = {"retries": {"limit": 2, "delay": "1 minute"}}
        return await asyncio.gather(step.do("flaky", config, flaky), step.do("sibling", dies_once))


def test_a_crash_in_a_step_still_running_after_run_suspended_kills_the_invocation(
    make_env: EnvFactory,
) -> None:
    calls.clear()
    env = make_env({"s": SiblingCrashes})
    inst = env.create("s", id="s")
    env.run_until_idle()
    assert env.crashes == 1  # the crash was not swallowed while run() was already suspending
    assert inst.status().output == ["flaky ok", "sibling ok"]
    assert calls["sibling"] == 2
