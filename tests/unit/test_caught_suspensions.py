"""A suspension that run() catches fails the instance at once, naming the rule and the lines.

``except BaseException``, ``except asyncio.CancelledError``, a bare ``except:`` or a ``return``
in ``finally`` around a step that must wait (a sleep, an event, a retry delay, a child, a
pause, a yield) would let ``run()`` go on as if the step had finished. The instance errors with
:class:`SuspensionCaughtError` instead, in the invocation that caught it, and is never complete;
the message names the rule, the step's line and the handler's. On both test-kit backends; the
legitimate constructs that catch the cancellation and pass it on are in
test_suspension_safety.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import linecache
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows import (
    InstanceFailedError,
    SuspensionCaughtError,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
)
from lambda_workflows.engine.instances.advance import RunnerSettings
from lambda_workflows.engine.model import EntryKind, InstanceStatusView
from lambda_workflows.testing import TestInstance, WorkflowTestEnv

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

THIS = Path(__file__).name
RULE = "do not catch BaseException / asyncio.CancelledError, use a bare except:, or return from"
ran_after: list[str] = []  # what ran after a caught suspension (nothing may)
LAMBDA_LIKE = RunnerSettings(inline_wait=2.0, margin_seconds=20.0, signal_interval=2.0)


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran_after.clear()


def line(marker: str) -> int:
    """The line of this file that ends with ``# <marker>``."""
    for number, text in enumerate(linecache.getlines(__file__), start=1):
        if text.rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(f"no line marked {marker}")


def fails_once(ctx: Any) -> str:
    if ctx.attempt == 1:
        raise RuntimeError("first attempt fails")
    return "second"


Waiting = Callable[[WorkflowStep], Awaitable[Any]]

# Each way a step makes run() wait, awaited on the line marked `step`.
WAITS: dict[str, Waiting] = {
    "step.sleep": lambda step: step.sleep("wait", "1 hour"),
    "step.sleep_until": lambda step: step.sleep_until("wait", 1_735_693_200.0),
    "step.wait_for_event": lambda step: step.wait_for_event("wait", type="go"),
    "step.wait_for_event(timeout)": lambda step: step.wait_for_event(
        "wait", type="go", timeout="1 minute"
    ),
    "step.do retry delay": lambda step: step.do(
        "wait", {"retries": {"limit": 1, "delay": "1 hour"}}, fails_once
    ),
    "step.run_workflow": lambda step: step.run_workflow("wait", workflow="child"),
    "gather": lambda step: asyncio.gather(
        step.sleep("wait", "1 hour"), step.do("beside", lambda: "b")
    ),
}


async def bare_except(wait: Waiting, step: WorkflowStep) -> Any:
    try:  # noqa: SIM105
        await wait(step)  # step
    except:  # noqa: E722  # handler
        pass
    return "done"


async def except_base_exception(wait: Waiting, step: WorkflowStep) -> Any:
    try:  # noqa: SIM105
        await wait(step)  # step
    except BaseException:  # handler
        pass
    return "done"


async def except_cancelled_error(wait: Waiting, step: WorkflowStep) -> Any:
    try:  # noqa: SIM105
        await wait(step)  # step
    except asyncio.CancelledError:  # handler
        pass
    return "done"


async def finally_returns(wait: Waiting, step: WorkflowStep) -> Any:
    try:
        await wait(step)  # step
    finally:
        return "done"  # noqa: B012  # handler


async def except_returns(wait: Waiting, step: WorkflowStep) -> Any:
    try:
        await wait(step)  # step
    except BaseException:  # handler
        return "x"
    return "done"


async def except_raises_another(wait: Waiting, step: WorkflowStep) -> Any:
    try:
        await wait(step)  # step
    except BaseException:  # handler
        raise ValueError("something else") from None
    return "done"


async def except_then_next_step(wait: Waiting, step: WorkflowStep) -> Any:
    try:  # noqa: SIM105
        await wait(step)  # step
    except BaseException:  # handler
        pass
    return await step.do("next", lambda: ran_after.append("next") or "next")


async def suppressed(wait: Waiting, step: WorkflowStep) -> Any:
    with contextlib.suppress(BaseException):  # handler
        await wait(step)  # step
    return "done"


Catching = Callable[[Waiting, WorkflowStep], Awaitable[Any]]
HANDLERS: dict[str, Catching] = {
    "bare except:": bare_except,
    "except BaseException": except_base_exception,
    "except asyncio.CancelledError": except_cancelled_error,
    "finally: return": finally_returns,
    "except BaseException: return": except_returns,
    "except BaseException: raise ValueError": except_raises_another,
    "except BaseException, then another step": except_then_next_step,
    "contextlib.suppress(BaseException)": suppressed,
}


class Child(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("child nap", "1 hour")
        return "child"


def catching(handler: Catching, wait: Waiting) -> type[WorkflowEntrypoint]:
    class Catches(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            return await handler(wait, step)

    return Catches


def start(
    make_env: EnvFactory,
    workflow: type[WorkflowEntrypoint],
    settings: RunnerSettings | None = None,
) -> tuple[WorkflowTestEnv, TestInstance]:
    env = make_env({"catches": workflow, "child": Child}, settings=settings)
    return env, env.create("catches", id="c")


def assert_caught(status: InstanceStatusView, *lines: int) -> str:
    """The instance errored with SuspensionCaughtError naming the rule and ``lines``."""
    assert status.status == "errored", status
    assert status.output is None
    assert status.error is not None
    assert status.error.name == "SuspensionCaughtError", status.error
    message = status.error.message
    assert RULE in message and "rules of Workflows: always await your steps" in message
    for number in lines:
        assert f"{THIS}:{number}" in message, message
    return message


@pytest.mark.parametrize("handler", list(HANDLERS))
def test_a_caught_sleep_errors_the_instance_at_once_naming_the_step_and_handler_lines(
    make_env: EnvFactory, handler: str
) -> None:
    # GIVEN run() catches the suspension of a sleep with `handler`
    env, inst = start(make_env, catching(HANDLERS[handler], WAITS["step.sleep"]))
    # WHEN one invocation runs it
    env.run_once("catches", "c")
    # THEN the instance errored at once, naming the rule, the step's line and the handler's
    lines = marked(HANDLERS[handler], "step"), marked(HANDLERS[handler], "handler")
    message = assert_caught(inst.status(), *lines)
    assert "'wait'" in message and "its sleep is not over" in message
    # AND it never completes: time passing changes nothing, and nothing after the catch ran
    env.run_until_idle()
    env.clock.advance("2 hours")
    env.run_until_idle()
    assert inst.status().status == "errored"
    assert ran_after == []


def marked(function: Callable[..., Any], marker: str) -> int:
    """The line of ``function`` that ends with ``# <marker>``."""
    source = linecache.getlines(__file__)
    first = function.__code__.co_firstlineno
    for number in range(first, first + 10):
        if source[number - 1].rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(f"{function.__name__} has no line marked {marker}")


@pytest.mark.parametrize("wait", [w for w in WAITS if w != "step.sleep"])
def test_every_kind_of_wait_caught_by_except_base_exception_errors_the_instance(
    make_env: EnvFactory, wait: str
) -> None:
    env, inst = start(make_env, catching(except_base_exception, WAITS[wait]))
    env.run_once("catches", "c")
    lines = marked(except_base_exception, "step"), marked(except_base_exception, "handler")
    assert_caught(inst.status(), *lines)
    env.clock.advance("2 days")
    env.run_until_idle()
    assert inst.status().status == "errored"


@pytest.mark.parametrize("wait", ["1 second sleep", "1 second retry delay"])
def test_a_caught_wait_short_enough_to_sleep_in_process_errors_too(
    make_env: EnvFactory, wait: str
) -> None:
    # GIVEN the deployed runner's settings, which sleep waits of up to 2 s in-process
    waits: dict[str, Waiting] = {
        "1 second sleep": lambda step: step.sleep("wait", "1 second"),
        "1 second retry delay": lambda step: step.do(
            "wait", {"retries": {"limit": 1, "delay": "1 second"}}, fails_once
        ),
    }
    env, inst = start(make_env, catching(except_base_exception, waits[wait]), LAMBDA_LIKE)
    # WHEN one invocation runs it (it used to complete in that invocation)
    env.run_once("catches", "c")
    # THEN it errored, before any time passed
    assert_caught(inst.status(), marked(except_base_exception, "step"))
    assert [row.name for row in inst.status().steps] == ["wait"]


class CatchesOnReplay(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("first nap", "1 hour")
        try:  # noqa: SIM105
            await step.sleep("second nap", "1 hour")  # replayed step
        except BaseException:  # replayed handler
            pass
        return "done"


def test_a_suspension_caught_on_a_later_replay_errors_that_pass(make_env: EnvFactory) -> None:
    env = make_env({"catches": CatchesOnReplay})
    inst = env.create("catches", id="c")
    env.run_once("catches", "c")
    assert inst.status().status == "waiting"  # the first sleep is not caught
    env.run_until_idle()
    assert_caught(inst.status(), line("replayed step"), line("replayed handler"))


class NestedCatch(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def callback() -> str:
            try:  # noqa: SIM105
                await NESTED[event.payload["wait"]](step)  # nested step
            except BaseException:  # nested handler
                pass
            return "callback's value"

        return await step.do("outer", callback)


NESTED: dict[str, Waiting] = {
    "sleep": lambda step: step.sleep("inner", "1 hour"),
    "retry delay": lambda step: step.do(
        "inner", {"retries": {"limit": 1, "delay": "1 hour"}}, fails_once
    ),
    "event": lambda step: step.wait_for_event("inner", type="go"),
    "gather(return_exceptions=True)": lambda step: asyncio.gather(
        step.sleep("inner", "1 hour"), return_exceptions=True
    ),
}


@pytest.mark.parametrize("wait", list(NESTED))
def test_a_step_callback_that_catches_a_nested_steps_suspension_errors_the_instance(
    make_env: EnvFactory, wait: str
) -> None:
    # GIVEN a step callback that catches the suspension of a step nested in it
    env = make_env({"catches": NestedCatch})
    inst = env.create("catches", id="c", params={"wait": wait})
    env.run_once("catches", "c")
    # THEN the instance errored, naming the callback's step, and the outer step recorded nothing
    if wait == "gather(return_exceptions=True)":  # the step ran in a task of its own: no line
        message = assert_caught(inst.status())
        assert "step 'inner'" in message
    else:
        message = assert_caught(inst.status(), line("nested step"), line("nested handler"))
    assert "the callback of step 'outer'" in message
    outer = [e for e in inst.journal() if e.name == "outer" and e.kind is EntryKind.STEP]
    assert outer == []
    env.clock.advance("2 days")
    env.run_until_idle()
    assert inst.status().status == "errored"


undone: list[str] = []


class CatchesThenFails(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("charge", lambda: 1, rollback=lambda ctx, out, err: undone.append(err.name))
        try:  # noqa: SIM105
            await step.sleep("nap", "1 hour")
        except BaseException:
            pass
        raise ValueError("fails after the nap")


def test_a_caught_suspension_starts_the_rollbacks_with_it_as_the_cause(
    make_env: EnvFactory,
) -> None:
    undone.clear()
    env = make_env({"catches": CatchesThenFails})
    inst = env.create("catches", id="c")
    env.run_until_idle()
    # the rollbacks ran (in rollback mode, where run() catches the suspension again) once
    status = inst.status()
    assert_caught(status)
    assert undone == ["SuspensionCaughtError"]
    assert status.rollback is not None and status.rollback.status == "complete"


class UndoCatches(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def undo(ctx: Any, output: Any, error: InstanceFailedError) -> None:
            try:  # noqa: SIM105
                await step.sleep("undo nap", "1 hour")  # rollback's step
            except BaseException:  # rollback's handler
                pass
            undone.append("undo went on")

        await step.do("charge", lambda: 1, rollback=undo)
        raise ValueError("fails")


def test_a_rollback_that_catches_a_nested_steps_suspension_fails_naming_the_rule(
    make_env: EnvFactory,
) -> None:
    undone.clear()
    env = make_env({"catches": UndoCatches})
    inst = env.create("catches", id="c")
    env.run_until_idle()
    status = inst.status()
    # the instance ends as it would have (errored with run()'s error), its rollback failed
    assert status.status == "errored" and status.error is not None
    assert status.error.name == "ValueError"
    assert status.rollback is not None and status.rollback.status == "failed"
    assert status.rollback.error is not None
    assert status.rollback.error.name == "SuspensionCaughtError"
    message = status.rollback.error.message
    assert "the rollback of step 'charge'" in message and RULE in message
    assert f"{THIS}:{line('rollback' + chr(39) + 's step')}" in message
    assert f"{THIS}:{line('rollback' + chr(39) + 's handler')}" in message
    assert undone == ["undo went on"]  # what it did after the catch is not recorded as done


class ControlledWhileCaught(WorkflowEntrypoint):
    test_env: WorkflowTestEnv

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        action = event.payload["action"]

        def control() -> str:
            getattr(self.test_env.get("catches", "c"), action)()
            return "requested"

        try:
            await step.do("request", control)
            await step.do("next", lambda: ran_after.append("next") or "next")
        except BaseException:
            return "caught"
        return "done"


@pytest.mark.parametrize(("action", "ends"), [("pause", "paused"), ("terminate", "terminated")])
def test_a_pause_or_terminate_requested_meanwhile_wins_over_a_caught_suspension(
    make_env: EnvFactory, action: str, ends: str
) -> None:
    # GIVEN run() catches the suspension a pause (or terminate) request causes at the next step
    env = make_env({"catches": ControlledWhileCaught})
    ControlledWhileCaught.test_env = env
    inst = env.create("catches", id="c", params={"action": action})
    env.run_once("catches", "c")
    # THEN the request wins (nothing run() did after the catch is kept), never complete
    assert inst.status().status == ends
    assert ran_after == []
    if action == "pause":  # resumed, the step the pause stopped runs, and run() ends normally
        inst.resume()
        env.run_until_idle()
        assert inst.status().output == "done"
        assert ran_after == ["next"]


class CatchesAnything(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        try:
            await step.do("work", lambda: "w")  # yielded step
        except BaseException:  # yielded handler
            return "caught"
        return "done"


def test_a_yield_near_the_time_limit_that_run_catches_errors_the_instance(
    make_env: EnvFactory,
) -> None:
    # GIVEN an invocation with less time left than the runner's margin: it yields at the step
    env = make_env({"catches": CatchesAnything})
    inst = env.create("catches", id="c")
    asyncio.run(env.runner.advance(inst.ref, remaining=lambda: 1.0))
    message = assert_caught(inst.status(), line("yielded step"), line("yielded handler"))
    assert "near its time limit" in message


def test_suspension_caught_error_is_a_public_workflow_error() -> None:
    import lambda_workflows

    assert lambda_workflows.SuspensionCaughtError is SuspensionCaughtError
    assert SuspensionCaughtError.code == "suspension_caught"
