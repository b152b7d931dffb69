"""Saga rollbacks: ``step.do(..., rollback=undo, rollback_config=...)``.

When an instance fails (an uncaught error from ``run()``), the rollbacks of the steps it started
run newest first, each once, as durable steps of their own; ``terminate(rollback=True)`` runs
them too before the instance becomes terminated. On both test-kit backends.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, ClassVar

import pytest

from lambda_workflows import (
    InstanceFailedError,
    InvalidStepError,
    NonRetryableError,
    StepFailedError,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
)
from lambda_workflows.engine.model import EntryKind, InstanceStatusView, JournalEntry
from lambda_workflows.testing import Crash, TestInstance
from lambda_workflows.text_timeline import render

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

# (rollback of step, output it got, error name, error message), in the order they ran.
undone: list[tuple[str, Any, str, str]] = []
# How many times each step's callback ran.
ran: dict[str, int] = {}


@pytest.fixture(autouse=True)
def _reset() -> None:
    undone.clear()
    ran.clear()


def undo(ctx: Any, output: Any, error: InstanceFailedError) -> None:
    """A rollback that notes what it undid."""
    undone.append((ctx.step.name, output, error.name, error.message))


def work(name: str, value: Any = None) -> Any:
    """A step callback that counts its runs and returns ``value``."""

    def callback() -> Any:
        ran[name] = ran.get(name, 0) + 1
        return value

    return callback


def fail(name: str, message: str) -> Any:
    def callback() -> Any:
        ran[name] = ran.get(name, 0) + 1
        raise NonRetryableError(message)

    return callback


def rollback_entries(inst: TestInstance) -> list[JournalEntry]:
    """The recorded final outcomes of the rollbacks."""
    return [e for e in inst.journal() if e.kind is EntryKind.ROLLBACK]


def rollback_rows(inst: TestInstance) -> list[tuple[str, str, int]]:
    steps = inst.status().steps
    return [(s.name, str(s.status), s.attempts) for s in steps if s.type == "rollback"]


# --- order --------------------------------------------------------------------------------


class ThreeThenFail(WorkflowEntrypoint):
    """Three steps with rollbacks (one without between), then run() raises."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("reserve", work("reserve", {"hold": 1}), rollback=undo)
        await step.do("look up", work("look up", 7))  # no rollback: skipped
        await step.do("charge", work("charge", {"charge": 2}), rollback=undo)
        await step.do("ship", work("ship", "s-3"), rollback=undo)
        raise RuntimeError("the warehouse refused the order")


def test_rollbacks_run_in_reverse_step_start_order_once_each(make_env: EnvFactory) -> None:
    env = make_env({"order": ThreeThenFail})
    inst = env.create("order", id="lifo")
    # WHEN run() fails after three undoable steps
    env.run_until_idle()
    # THEN their rollbacks ran newest first, each once, with each step's output and the failure
    assert undone == [
        ("ship", "s-3", "RuntimeError", "the warehouse refused the order"),
        ("charge", {"charge": 2}, "RuntimeError", "the warehouse refused the order"),
        ("reserve", {"hold": 1}, "RuntimeError", "the warehouse refused the order"),
    ]
    # AND the instance is errored with the forward failure, its rollbacks complete
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None and status.error.name == "RuntimeError"
    assert status.rollback is not None and status.rollback.status == "complete"
    assert status.rollback.failed_step is None and status.rollback.error is None
    # AND each rollback is a row after the steps, in the order they ran; the step without a
    # rollback has none
    assert [s.type for s in status.steps] == ["do"] * 4 + ["rollback"] * 3
    assert rollback_rows(inst) == [
        ("ship", "complete", 1),
        ("charge", "complete", 1),
        ("reserve", "complete", 1),
    ]
    assert ran == {"reserve": 1, "look up": 1, "charge": 1, "ship": 1}


class FailsAtCharge(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("reserve", work("reserve", "r-1"), rollback=undo)
        await step.do("charge", fail("charge", "card declined"), rollback=undo)
        await step.do("ship", work("ship"), rollback=undo)


def test_a_failed_steps_rollback_runs_first_with_output_none(make_env: EnvFactory) -> None:
    env = make_env({"order": FailsAtCharge})
    inst = env.create("order", id="failed-first")
    env.run_until_idle()
    # THEN the failed step's rollback ran first, with no output; the step never reached has none
    assert [(name, output) for name, output, _, _ in undone] == [
        ("charge", None),
        ("reserve", "r-1"),
    ]
    # AND the error they got is the step's failure, as run() let it out
    assert {(n, m) for _, _, n, m in undone} == {("NonRetryableError", "card declined")}
    assert inst.status().status == "errored"
    assert "ship" not in ran


# --- caught failures ----------------------------------------------------------------------


class CatchesThenSucceeds(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("reserve", work("reserve", "r-1"), rollback=undo)
        try:
            await step.do("charge", fail("charge", "card declined"), rollback=undo)
        except StepFailedError:
            await step.do("charge another way", work("fallback", "paid"), rollback=undo)
        return "done"


def test_a_caught_step_failure_then_success_runs_no_rollback(make_env: EnvFactory) -> None:
    env = make_env({"order": CatchesThenSucceeds})
    inst = env.create("order", id="caught")
    env.run_until_idle()
    status = inst.status()
    assert (status.status, status.output) == ("complete", "done")
    assert undone == []
    assert status.rollback is None
    assert rollback_entries(inst) == []


class CatchesThenFails(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("reserve", work("reserve", "r-1"), rollback=undo)
        with contextlib.suppress(StepFailedError):  # caught: nothing is rolled back for it now
            await step.do("charge", fail("charge", "card declined"), rollback=undo)
        await step.do("notify", work("notify", "sent"), rollback=undo)
        raise RuntimeError("later failure")


def test_a_caught_failed_steps_rollback_runs_when_the_instance_later_fails(
    make_env: EnvFactory,
) -> None:
    env = make_env({"order": CatchesThenFails})
    inst = env.create("order", id="caught-later")
    env.run_until_idle()
    # THEN every started step is rolled back, the caught one too (output None), newest first
    assert [(name, output, error) for name, output, error, _ in undone] == [
        ("notify", "sent", "RuntimeError"),
        ("charge", None, "RuntimeError"),
        ("reserve", "r-1", "RuntimeError"),
    ]
    assert inst.status().error == {"name": "RuntimeError", "message": "later failure"}


# --- durability ---------------------------------------------------------------------------


class CrashesInTheChain(WorkflowEntrypoint):
    """The middle rollback kills the invocation the first time it runs."""

    crashed = False

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def crashing_undo(ctx: Any, output: Any, error: Any) -> None:
            if not CrashesInTheChain.crashed:
                CrashesInTheChain.crashed = True
                raise Crash("the invocation dies in the middle of the chain")
            undo(ctx, output, error)

        await step.do("a", work("a", 1), rollback=undo)
        await step.do("b", work("b", 2), rollback=crashing_undo)
        await step.do("c", work("c", 3), rollback=undo)
        raise RuntimeError("boom")


def test_a_crash_in_the_middle_of_the_chain_records_each_rollback_once_in_order(
    make_env: EnvFactory,
) -> None:
    CrashesInTheChain.crashed = False
    env = make_env({"chain": CrashesInTheChain})
    inst = env.create("chain", id="crash")
    # WHEN the invocation dies inside b's rollback, after c's was recorded
    env.run_until_idle()
    # THEN the next invocation went on from the journal: c's rollback did not run again, b's
    # ran again (nothing of the dead attempt was recorded), then a's
    assert env.crashes == 1
    assert [name for name, *_ in undone] == ["c", "b", "a"]
    # AND each rollback is recorded once, in order, and no forward step ran twice
    assert sorted((e.name, e.error) for e in rollback_entries(inst)) == [
        ("a", None),
        ("b", None),
        ("c", None),
    ]
    assert rollback_rows(inst) == [("c", "complete", 1), ("b", "complete", 1), ("a", "complete", 1)]
    assert ran == {"a": 1, "b": 1, "c": 1}
    assert inst.status().rollback.status == "complete"  # type: ignore[union-attr]


class RollbackFailsOnce(WorkflowEntrypoint):
    attempts: ClassVar[list[int]] = []

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def flaky_undo(ctx: Any, output: Any, error: Any) -> None:
            RollbackFailsOnce.attempts.append(len(RollbackFailsOnce.attempts) + 1)
            if len(RollbackFailsOnce.attempts) == 1:
                raise ConnectionError("bank A unreachable")
            undo(ctx, output, error)

        await step.do("first", work("first", 1), rollback=undo)
        await step.do(
            "debit",
            work("debit", {"debit": 10}),
            rollback=flaky_undo,
            rollback_config={"retries": {"limit": 2, "delay": "30 seconds"}, "timeout": "1 minute"},
        )
        raise RuntimeError("credit failed")


def test_a_rollback_that_fails_once_then_succeeds_under_rollback_config(
    make_env: EnvFactory,
) -> None:
    RollbackFailsOnce.attempts = []
    env = make_env({"saga": RollbackFailsOnce})
    inst = env.create("saga", id="retry")
    env.run_until_idle()
    # THEN the rollback failed once, waited its 30 s retry delay, then succeeded; the chain
    # went on to the older step's rollback, and none ran twice once recorded
    assert RollbackFailsOnce.attempts == [1, 2]
    assert [name for name, *_ in undone] == ["debit", "first"]
    retried = [e for e in inst.journal() if e.kind is EntryKind.ROLLBACK_ATTEMPT]
    assert [(e.name, e.attempt, e.error and e.error.name) for e in retried] == [
        ("debit", 1, "ConnectionError")
    ]
    assert (retried[0].wake_at or 0) - retried[0].at == pytest.approx(30.0)
    status = inst.status()
    assert (status.status, status.rollback and status.rollback.status) == ("errored", "complete")
    assert rollback_rows(inst) == [("debit", "complete", 2), ("first", "complete", 1)]


class RollbackFailsForGood(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def broken_undo(ctx: Any, output: Any, error: Any) -> None:
            raise PermissionError("refund not allowed")

        await step.do("reserve", work("reserve", 1), rollback=undo)
        await step.do(
            "charge",
            work("charge", 2),
            rollback=broken_undo,
            rollback_config={"retries": {"limit": 1, "delay": 1}},
        )
        await step.do("ship", work("ship", 3), rollback=undo)
        raise RuntimeError("carrier lost the parcel")


def test_a_rollback_failing_for_good_stops_the_chain_and_status_says_where(
    make_env: EnvFactory,
) -> None:
    env = make_env({"saga": RollbackFailsForGood})
    inst = env.create("saga", id="stuck")
    env.run_until_idle()
    # THEN the rollbacks after the failed one did not run
    assert [name for name, *_ in undone] == ["ship"]
    # AND the instance stays errored with the forward failure, and the status tells the
    # rollback failure apart: which step's rollback failed, and with what
    status = inst.status()
    assert status.status == "errored"
    assert status.error == {"name": "RuntimeError", "message": "carrier lost the parcel"}
    rollback = status.rollback
    assert rollback is not None and rollback.status == "failed"
    assert rollback.failed_step == {"name": "charge", "count": 1}
    assert (rollback.failed_step.name, rollback.failed_step.count) == ("charge", 1)
    assert rollback.error == {"name": "PermissionError", "message": "refund not allowed"}
    assert rollback["status"] == "failed" and rollback["failed_step"]["name"] == "charge"
    assert rollback_rows(inst) == [("ship", "complete", 1), ("charge", "errored", 2)]
    shown = status.to_dict()["rollback"]
    assert shown["status"] == "failed"
    assert shown["failed_step"] == {"name": "charge", "count": 1}
    assert shown["error"]["name"] == "PermissionError"
    assert "refund not allowed" in shown["error"]["traceback"]
    assert InstanceStatusView.from_dict(status.to_dict()) == status


class FailsAfterASleep(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("provision", work("provision", {"vm": "i-1"}), rollback=undo)
        await step.sleep("let it boot", "1 hour")
        await step.do("configure", fail("configure", "image missing"))


def test_rollbacks_survive_a_failure_in_a_later_invocation(make_env: EnvFactory) -> None:
    env = make_env({"vm": FailsAfterASleep})
    inst = env.create("vm", id="later")
    # GIVEN the undoable step ran in an invocation that then slept
    env.run_until_idle()
    # WHEN a later invocation (after the sleep) fails
    # THEN the replayed step registered its rollback again, and it ran with the step's output
    assert env.invocations >= 2
    assert undone == [("provision", {"vm": "i-1"}, "NonRetryableError", "image missing")]
    assert ran == {"provision": 1, "configure": 1}
    assert inst.status().rollback.status == "complete"  # type: ignore[union-attr]


# --- terminate ----------------------------------------------------------------------------


class WaitsForApproval(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("debit", work("debit", {"debit": 5}), rollback=undo)
        await step.do("credit", work("credit", {"credit": 5}), rollback=undo)
        await step.wait_for_event("approval", type="approved", timeout="1 day")
        await step.do("notify", work("notify"), rollback=undo)


def test_terminate_with_rollback_on_a_waiting_instance(make_env: EnvFactory) -> None:
    env = make_env({"transfer": WaitsForApproval})
    inst = env.create("transfer", id="t-rb")
    env.run_until_idle()
    assert inst.status().status == "waiting"
    # WHEN it is terminated with rollback
    inst.terminate(rollback=True)
    assert inst.status().status == "running"  # rolling back
    env.run_until_idle()
    # THEN the rollbacks of the steps it ran ran newest first, their error naming the
    # termination, and then the instance became terminated; the step never reached did not run
    assert undone == [
        ("credit", {"credit": 5}, "Terminated", "Instance terminated during rollback"),
        ("debit", {"debit": 5}, "Terminated", "Instance terminated during rollback"),
    ]
    status = inst.status()
    assert status.status == "terminated"
    assert status.error is None
    assert status.rollback is not None and status.rollback.status == "complete"
    assert status.rollback.ends_as == "terminated"
    assert "notify" not in ran
    assert env.pending_wake_ups() == [] or all(
        w.at > env.clock.time() for w in env.pending_wake_ups()
    )


def test_a_plain_terminate_runs_no_rollback(make_env: EnvFactory) -> None:
    env = make_env({"transfer": WaitsForApproval})
    inst = env.create("transfer", id="t-plain")
    env.run_until_idle()
    inst.terminate()
    env.run_until_idle()
    assert inst.status().status == "terminated"
    assert inst.status().rollback is None
    assert undone == []
    assert rollback_entries(inst) == []


class TerminatedFromAStep(WorkflowEntrypoint):
    """Its second step asks for its own termination with rollback while it is running."""

    test_env: Any = None

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def ask_to_terminate() -> str:
            TerminatedFromAStep.test_env.get("self", event.instance_id).terminate(rollback=True)
            return "asked"

        await step.do("reserve", work("reserve", 1), rollback=undo)
        await step.do("ask", ask_to_terminate, rollback=undo)
        await step.do("after", work("after"), rollback=undo)
        return "never"


def test_terminate_with_rollback_stops_a_running_instance_before_its_next_step(
    make_env: EnvFactory,
) -> None:
    env = make_env({"self": TerminatedFromAStep})
    TerminatedFromAStep.test_env = env
    inst = env.create("self", id="running")
    env.run_until_idle()
    # THEN the step after the request never ran; the two that ran were rolled back
    assert "after" not in ran
    assert [(name, error) for name, _, error, _ in undone] == [
        ("ask", "Terminated"),
        ("reserve", "Terminated"),
    ]
    assert inst.status().status == "terminated"


class RollbackKeepsRetrying(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def never_works(ctx: Any, output: Any, error: Any) -> None:
            raise ConnectionError("still down")

        await step.do(
            "book",
            work("book", 1),
            rollback=never_works,
            rollback_config={"retries": {"limit": 3, "delay": "1 hour"}},
        )
        raise RuntimeError("boom")


def test_a_plain_terminate_stops_a_chain_waiting_on_a_retry(make_env: EnvFactory) -> None:
    env = make_env({"book": RollbackKeepsRetrying})
    inst = env.create("book", id="cut")
    # GIVEN a rollback waiting for its retry delay (the instance waits, still rolling back)
    env.run_once("book", "cut")
    waiting = inst.status()
    assert waiting.status == "waiting"
    assert waiting.rollback is not None and waiting.rollback.status == "running"
    assert rollback_rows(inst) == [("book", "retrying", 1)]
    # WHEN it is terminated plainly
    inst.terminate()
    env.run_until_idle()
    # THEN it is terminated at once and the rollback shows as cancelled
    status = inst.status()
    assert status.status == "terminated"
    assert status.rollback is not None and status.rollback.status == "cancelled"
    assert rollback_rows(inst) == [("book", "errored", 1)]


# --- the rollback's context and config ----------------------------------------------------


class ContextSeen(WorkflowEntrypoint):
    seen: ClassVar[list[Any]] = []

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def remember(ctx: Any, output: Any, error: Any) -> None:  # async works too
            ContextSeen.seen.append((ctx.step.name, ctx.step.count, ctx.attempt, ctx.config))

        def second_time_lucky(ctx: Any) -> str:
            if ctx.attempt == 1:
                raise ConnectionError("first attempt fails")
            return "ok"

        config = {"retries": {"limit": 2, "delay": 1, "backoff": "constant"}, "timeout": 30}
        await step.do("twice", lambda: 0)
        await step.do("twice", config, second_time_lucky, rollback=remember)
        raise RuntimeError("boom")


def test_a_rollback_gets_its_steps_context_and_config(make_env: EnvFactory) -> None:
    ContextSeen.seen = []
    env = make_env({"ctx": ContextSeen})
    env.create("ctx", id="ctx")
    env.run_until_idle()
    # THEN ctx is the step's: its name and count, the attempt it ended on and its own config
    assert ContextSeen.seen == [
        (
            "twice",
            2,
            2,
            {"retries": {"limit": 2, "delay": 1.0, "backoff": "constant"}, "timeout": 30.0},
        )
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rollback": "undo"}, "rollback must be a function"),
        ({"rollback": lambda: None}, "must take three arguments"),
        ({"rollback_config": {"retries": {"limit": 1}}}, "no rollback"),
        ({"rollback": undo, "rollback_config": {"sensitive": "output"}}, "unknown key"),
        ({"rollback": undo, "rollback_config": {"retries": {"limit": -1}}}, "retries.limit"),
        ({"rollback": undo, "rollback_config": "fast"}, "must be a dict"),
    ],
)
def test_a_bad_rollback_is_an_invalid_step_error(
    kwargs: dict[str, Any], message: str, make_env: EnvFactory
) -> None:
    class Bad(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            await step.do("bad", lambda: 1, **kwargs)

    env = make_env({"bad": Bad})
    inst = env.create("bad", id="bad")
    env.run_until_idle()
    error = inst.status().error
    assert error is not None and error.name == InvalidStepError.__name__
    assert message in error.message


class NestedRollback(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def outer() -> Any:
            return await step.do("inner", lambda: 1, rollback=undo)

        return await step.do("outer", {"retries": {"limit": 0}}, outer)


def test_a_nested_step_cannot_take_a_rollback(make_env: EnvFactory) -> None:
    env = make_env({"nested": NestedRollback})
    inst = env.create("nested", id="nested")
    env.run_until_idle()
    error = inst.status().error
    assert error is not None and "cannot take a rollback" in error.message


# --- shown as text ------------------------------------------------------------------------


def test_the_text_timeline_shows_rollback_rows_and_where_the_chain_failed(
    make_env: EnvFactory,
) -> None:
    env = make_env({"saga": RollbackFailsForGood})
    inst = env.create("saga", id="text")
    env.run_until_idle()
    text = render(inst.status().to_dict())
    lines = text.splitlines()
    assert [line.split()[0] for line in lines[1:6]] == ["do", "do", "do", "rollback", "rollback"]
    assert "'ship'" in lines[4] and "undone" in lines[4]
    assert "PermissionError: refund not allowed" in lines[5]
    assert lines[-1] == (
        "  rollback: failed at the rollback of 'charge' #1: PermissionError: refund not allowed"
    )


def test_an_instance_rolling_back_can_be_paused_and_resumed(make_env: EnvFactory) -> None:
    RollbackFailsOnce.attempts = []
    env = make_env({"saga": RollbackFailsOnce})
    inst = env.create("saga", id="pause")
    # GIVEN a rollback waiting out its retry delay
    env.run_once("saga", "pause")
    assert inst.status().status == "waiting"
    # WHEN the instance is paused, the delay passes, and it is resumed
    inst.pause()
    env.run_until_idle()
    assert inst.status().status == "paused"
    assert RollbackFailsOnce.attempts == [1]
    inst.resume()
    env.run_until_idle()
    # THEN the chain goes on where it was: the retry succeeds, then the older rollback runs
    assert RollbackFailsOnce.attempts == [1, 2]
    assert [name for name, *_ in undone] == ["debit", "first"]
    status = inst.status()
    assert status.status == "errored" and status.rollback is not None
    assert status.rollback.status == "complete"


class RollbackHangs(WorkflowEntrypoint):
    tries: ClassVar[list[int]] = []

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def hangs(ctx: Any, output: Any, error: Any) -> None:
            RollbackHangs.tries.append(len(RollbackHangs.tries) + 1)
            await asyncio.sleep(30)

        config = {"retries": {"limit": 1, "delay": "1 second"}, "timeout": 0.05}
        await step.do("lock", work("lock", 1), rollback=hangs, rollback_config=config)
        raise RuntimeError("boom")


def test_a_rollback_past_its_timeout_is_retried_and_says_which_timeout_to_raise(
    make_env: EnvFactory,
) -> None:
    RollbackHangs.tries = []
    env = make_env({"hang": RollbackHangs})
    inst = env.create("hang", id="hang")
    env.run_until_idle()
    assert RollbackHangs.tries == [1, 2]
    rollback = inst.status().rollback
    assert rollback is not None and rollback.status == "failed" and rollback.error is not None
    assert rollback.error.name == "WorkflowTimeoutError"
    assert "raise rollback_config's 'timeout' of step 'lock'" in rollback.error.message
