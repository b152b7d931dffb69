"""run() cannot swallow the engine's suspension: a sleep inside asyncio.gather(...,
return_exceptions=True), asyncio.wait, a TaskGroup or ``except BaseException`` still sleeps,
no step after it runs early, and run() never holds the suspension as a value (a suspended
step parks until the pass ends; see lambda_workflows.engine.parking)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.testing import Crash, WorkflowTestEnv

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


async def catch_base_exception(step: WorkflowStep) -> Any:
    try:
        await step.sleep("nap", "1 hour")
    except BaseException:  # the point of the test: run() swallows everything
        return ["caught"]
    return ["slept"]


async def task_group(step: WorkflowStep) -> Any:
    async with asyncio.TaskGroup() as group:
        group.create_task(step.sleep("nap", "1 hour"))
    return ["grouped"]


SHAPES: dict[str, Callable[[WorkflowStep], Awaitable[Any]]] = {
    "gather(return_exceptions=True)": gather_returning_exceptions,
    "asyncio.wait": wait_without_looking,
    "except BaseException": catch_base_exception,
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


def test_run_that_keeps_catching_suspensions_fails_naming_the_rule() -> None:
    env = WorkflowTestEnv({"forever": CatchesForever})
    inst = env.create("forever", id="f")
    env.run_once("forever", "f")
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None
    assert "CancelledError" in status.error.message
    assert "rules of Workflows" in status.error.message


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
