"""run() cannot swallow the engine's suspension: a sleep inside asyncio.gather(...,
return_exceptions=True), asyncio.wait, a TaskGroup, asyncio.timeout, a ``finally`` or any construct
that passes the cancellation on still sleeps, no step after it runs early, and run() never holds the
suspension as a value (a suspended step parks until the pass ends; see
lambda_workflows.engine.replay.parking). Catching it and going on errors the instance: see
test_caught_suspensions.py."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from lambda_workflows import StepFailedError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.testing import Crash, WorkflowTestEnv

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

HOUR = 3600.0
ran_after: list[float] = []


async def gather_returning_exceptions(step: WorkflowStep) -> Any:
    return await asyncio.gather(
        step.sleep("nap", "1 hour"), step.do("beside", lambda: "b"), return_exceptions=True
    )


async def wait_without_looking(step: WorkflowStep) -> Any:
    tasks = [asyncio.ensure_future(step.sleep("nap", "1 hour"))]
    tasks.append(asyncio.ensure_future(step.do("beside", lambda: "b")))
    await asyncio.wait(tasks)
    return ["waited"]


async def task_group(step: WorkflowStep) -> Any:
    async with asyncio.TaskGroup() as group:
        group.create_task(step.sleep("nap", "1 hour"))
    return ["grouped"]


SHAPES: dict[str, Callable[[WorkflowStep], Awaitable[Any]]] = {
    "gather(return_exceptions=True)": gather_returning_exceptions,
    "asyncio.wait": wait_without_looking,
    "TaskGroup": task_group,
}


def make_workflow(
    shape: Callable[[WorkflowStep], Awaitable[Any]], env_ref: list[WorkflowTestEnv]
) -> type[WorkflowEntrypoint]:
    class Swallower(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            first = await shape(step)

            def after() -> str:
                ran_after.append(env_ref[0].clock.time())
                return "after"

            return [first, await step.do("after the nap", after)]

    return Swallower


@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
def test_a_sleep_whose_suspension_run_catches_still_sleeps(shape: str) -> None:
    # GIVEN run() sleeps in a construct that can catch the engine's suspension
    ran_after.clear()
    holder: list[WorkflowTestEnv] = []
    env = WorkflowTestEnv({"swallow": make_workflow(SHAPES[shape], holder)})
    holder.append(env)
    start = env.clock.time()
    inst = env.create("swallow", id="s")
    # WHEN one invocation runs it
    env.run_once("swallow", "s")
    # THEN it is asleep: nothing after the sleep ran, nothing was returned
    status = inst.status()
    assert status.status == "waiting", status
    assert status.output is None
    assert ran_after == []
    assert "after the nap" not in [row.name for row in status.steps]
    # AND once the hour has passed it completes with the sleep's real outcome
    env.run_until_idle()
    status = inst.status()
    assert status.status == "complete", status.error
    assert ran_after == [start + HOUR]
    assert "Suspend" not in repr(status.output)
    assert status.output[1] == "after"


gathered: list[Any] = []


class GatherKeeper(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        results = await asyncio.gather(
            step.sleep("nap", "1 hour"),
            step.do("beside", lambda: "b"),
            step.do("flaky", {"retries": {"limit": 1, "delay": "1 hour"}}, flaky),
            return_exceptions=True,
        )
        gathered.append(results)
        return results


def flaky(ctx: Any) -> str:
    if ctx.attempt == 1:
        raise RuntimeError("first attempt fails")
    return "second"


def test_run_never_holds_a_suspension_as_a_gathered_value() -> None:
    gathered.clear()
    env = WorkflowTestEnv({"keep": GatherKeeper})
    inst = env.create("keep", id="k")
    env.run_until_idle()
    assert inst.status().output == [None, "b", "second"]
    # gather returned once only, after the sleep and the retry delay: never with a Suspend
    assert gathered == [[None, "b", "second"]]


def test_gather_with_return_exceptions_returns_the_sleeps_real_value_after_it() -> None:
    holder: list[WorkflowTestEnv] = []
    env = WorkflowTestEnv({"swallow": make_workflow(gather_returning_exceptions, holder)})
    holder.append(env)
    inst = env.create("swallow", id="g")
    env.run_until_idle()
    assert inst.status().output == [[None, "b"], "after"]


class CatchesForever(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for i in range(1_000):
            try:
                await step.sleep(f"nap {i}", "1 hour")
            except BaseException:  # the point of the test
                continue
        return "never"


def test_run_that_keeps_catching_suspensions_fails_at_the_first_naming_the_rule() -> None:
    env = WorkflowTestEnv({"forever": CatchesForever})
    inst = env.create("forever", id="f")
    env.run_once("forever", "f")
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None
    assert status.error.name == "SuspensionCaughtError"
    assert "step 'nap 0'" in status.error.message
    assert "CancelledError" in status.error.message
    assert "rules of Workflows" in status.error.message
    assert [row.name for row in status.steps] == ["nap 0"]


crashed_once: list[bool] = []


class GatherCrash(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def dies() -> str:
            if not crashed_once:
                crashed_once.append(True)
                raise Crash("the invocation dies here")
            return "survived"

        results = await asyncio.gather(
            step.do("dies", dies), step.do("beside", lambda: "b"), return_exceptions=True
        )
        gathered.append(results)
        return results


def test_a_crash_inside_a_gathered_step_kills_the_invocation_not_a_value_for_run() -> None:
    gathered.clear()
    crashed_once.clear()
    env = WorkflowTestEnv({"crash": GatherCrash})
    inst = env.create("crash", id="c")
    env.run_until_idle()
    assert env.crashes == 1
    assert inst.status().output == ["survived", "b"]
    assert gathered == [["survived", "b"]]


# --- constructs that catch the cancellation and pass it on: they sleep, never error ----------


@contextlib.asynccontextmanager
async def held() -> AsyncIterator[None]:
    try:
        yield
    finally:
        pass  # cleanup, without returning


def nap(step: WorkflowStep) -> Awaitable[None]:
    return step.sleep("nap", "1 hour")


async def in_gather(step: WorkflowStep) -> Any:
    return await asyncio.gather(nap(step), step.do("beside", lambda: "b"))


async def in_timeout(step: WorkflowStep) -> Any:
    async with asyncio.timeout(600):
        await nap(step)
    return "timeout"


async def in_wait_for(step: WorkflowStep) -> Any:
    await asyncio.wait_for(nap(step), 600)
    return "wait_for"


async def in_shield(step: WorkflowStep) -> Any:
    await asyncio.shield(nap(step))
    return "shield"


async def in_context_manager(step: WorkflowStep) -> Any:
    async with held():
        await nap(step)
    return "context manager"


async def in_try_finally(step: WorkflowStep) -> Any:
    cleaned = []
    try:
        await nap(step)
    finally:
        cleaned.append(True)
    return cleaned


async def with_a_cleanup_step_in_finally(step: WorkflowStep) -> Any:
    try:
        await nap(step)
    finally:
        await step.do("cleanup", lambda: "cleaned")
    return "finally step"


async def in_except_that_reraises(step: WorkflowStep) -> Any:
    try:
        await nap(step)
    except BaseException:
        await step.do("note", lambda: "noted")
        raise
    return "re-raised"


async def in_except_exception(step: WorkflowStep) -> Any:
    try:
        await nap(step)
    except Exception:
        return "caught"
    return "except Exception"


async def in_suppress_exception(step: WorkflowStep) -> Any:
    with contextlib.suppress(Exception):
        await nap(step)
    return "suppress"


async def nested_in_gather(step: WorkflowStep) -> Any:
    async def callback() -> Any:
        return await asyncio.gather(step.sleep("inner nap", "1 hour"), step.do("x", lambda: 2))

    return await step.do("outer", callback)


async def nested_in_try_finally(step: WorkflowStep) -> Any:
    async def callback() -> Any:
        try:
            await step.sleep("inner nap", "1 hour")
        finally:
            pass
        return 3

    return await step.do("outer", callback)


PASSING_ON: dict[str, tuple[Callable[[WorkflowStep], Awaitable[Any]], Any]] = {
    "gather": (in_gather, [None, "b"]),
    "gather(return_exceptions=True)": (gather_returning_exceptions, [None, "b"]),
    "TaskGroup": (task_group, ["grouped"]),
    "asyncio.wait": (wait_without_looking, ["waited"]),
    "asyncio.timeout": (in_timeout, "timeout"),
    "asyncio.wait_for": (in_wait_for, "wait_for"),
    "asyncio.shield": (in_shield, "shield"),
    "asynccontextmanager": (in_context_manager, "context manager"),
    "try/finally": (in_try_finally, [True]),
    "a step in finally": (with_a_cleanup_step_in_finally, "finally step"),
    "except BaseException that re-raises": (in_except_that_reraises, "re-raised"),
    "except Exception": (in_except_exception, "except Exception"),
    "contextlib.suppress(Exception)": (in_suppress_exception, "suppress"),
    "gather in a callback": (nested_in_gather, [None, 2]),
    "try/finally in a callback": (nested_in_try_finally, 3),
}


def running(shape: Callable[[WorkflowStep], Awaitable[Any]]) -> type[WorkflowEntrypoint]:
    class Shaped(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            return await shape(step)

    return Shaped


@pytest.mark.parametrize("shape", list(PASSING_ON))
def test_a_construct_that_passes_the_cancellation_on_sleeps_and_never_errors(
    make_env: EnvFactory, shape: str
) -> None:
    workflow, output = PASSING_ON[shape]
    env = make_env({"shaped": running(workflow)})
    inst = env.create("shaped", id="s")
    env.run_once("shaped", "s")
    assert inst.status().status == "waiting"
    env.run_until_idle()
    status = inst.status()
    assert status.status == "complete", status.error
    assert status.output == output


def fails() -> str:
    raise RuntimeError("fails for good")


NO_RETRY = {"retries": {"limit": 0}}


async def gather_failing(step: WorkflowStep) -> Any:
    return await asyncio.gather(nap(step), step.do("fails", NO_RETRY, fails))


async def gather_failing_caught(step: WorkflowStep) -> Any:
    try:
        return await asyncio.gather(nap(step), step.do("fails", NO_RETRY, fails))
    except StepFailedError:
        return "handled"


async def task_group_failing(step: WorkflowStep) -> Any:
    async with asyncio.TaskGroup() as group:
        group.create_task(nap(step))
        group.create_task(step.do("fails", NO_RETRY, fails))
    return "never"


FAILING_BESIDE: dict[str, tuple[Callable[[WorkflowStep], Awaitable[Any]], str, Any]] = {
    "gather": (gather_failing, "errored", "RuntimeError"),
    "gather, failure caught": (gather_failing_caught, "complete", "handled"),
    "TaskGroup": (task_group_failing, "errored", "ExceptionGroup"),
}


@pytest.mark.parametrize("shape", list(FAILING_BESIDE))
def test_a_step_failing_for_good_beside_a_sleep_ends_run_after_the_sleep(
    make_env: EnvFactory, shape: str
) -> None:
    # GIVEN a gathered step fails for good while the other sleeps: run() ends on its own
    workflow, ends, outcome = FAILING_BESIDE[shape]
    env = make_env({"shaped": running(workflow)})
    inst = env.create("shaped", id="s")
    start = env.clock.time()
    env.run_once("shaped", "s")
    # THEN the pass is suspended (not a caught suspension), and run()'s ending counts after it
    assert inst.status().status == "waiting"
    env.run_until_idle()
    status = inst.status()
    assert status.status == ends
    assert env.clock.time() == start + HOUR
    if ends == "errored":
        assert status.error is not None and status.error.name == outcome
    else:
        assert status.output == outcome
