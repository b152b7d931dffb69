"""Failures you can debug: each attempt of a step is kept with its own start, end, error and the
user's traceback (library frames cut, capped at 8 KiB, no variable values); a wait row shows the
event type it awaits and the payload it got; a sleep row shows when it wakes. On every store."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest

from lambda_workflows import (
    InstanceStatusView,
    StepInfo,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
)
from lambda_workflows.engine.clock import iso
from lambda_workflows.engine.model import EntryKind
from lambda_workflows.engine.tracebacks import MAX_TRACEBACK_BYTES
from lambda_workflows.text_timeline import render

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

THREE_ATTEMPTS = {"retries": {"limit": 2, "delay": "10 seconds", "backoff": "constant"}}
SECRET = "tok-5f1e-never-shown"


def charge_card(attempt: int) -> None:
    raise ConnectionError(f"card service unreachable (attempt {attempt})")


class AlwaysFails(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def charge(ctx: Any) -> None:
            charge_card(ctx.attempt)

        return await step.do("charge", THREE_ATTEMPTS, charge)


def test_a_step_that_fails_three_times_keeps_each_attempt(make_env: EnvFactory) -> None:
    # GIVEN a step that fails on each of its three attempts, 10 s apart
    env = make_env({"pay": AlwaysFails})
    began = env.clock.time()
    inst = env.create("pay", id="p")
    # WHEN it has run out of retries
    env.run_until_idle()
    status = inst.status()
    # THEN the row keeps its count and lists the three attempts with their own times
    assert status.status == "errored"
    [row] = status.steps
    assert row.attempts == 3
    assert [a.attempt for a in row.attempt_history] == [1, 2, 3]
    assert [a.start for a in row.attempt_history] == [began, began + 10, began + 20]
    assert [a.end for a in row.attempt_history] == [began, began + 10, began + 20]
    assert [a.success for a in row.attempt_history] == [False, False, False]
    for n, attempt in enumerate(row.attempt_history, start=1):
        assert attempt.error == {
            "name": "ConnectionError",
            "message": f"card service unreachable (attempt {n})",
        }
        # AND each traceback is the user's: this file's frames, none of the library's
        trace = attempt.error.traceback or ""
        assert trace.startswith("Traceback (most recent call last):")
        assert f'File "{__file__}"' in trace
        assert "in charge_card" in trace and "charge_card(ctx.attempt)" in trace
        assert "workflows/engine" not in trace and "asyncio" not in trace
        assert trace.rstrip().endswith(f"card service unreachable (attempt {n})")
    # AND the row's error keeps Cloudflare's two-key shape
    assert row.to_dict()["error"] == {
        "name": "ConnectionError",
        "message": "card service unreachable (attempt 3)",
    }
    shown = row.to_dict()["attempt_history"][0]
    assert shown["start"] == iso(began) and shown["end"] == iso(began)
    assert set(shown["error"]) == {"name", "message", "traceback"}


def test_the_store_keeps_each_attempts_start_and_traceback(make_env: EnvFactory) -> None:
    # GIVEN the same failing step, run to the end
    env = make_env({"pay": AlwaysFails})
    began = env.clock.time()
    inst = env.create("pay", id="p")
    env.run_until_idle()
    # WHEN its journal is read back from the store
    journal = inst.journal()
    # THEN every entry carries its attempt's own start, and its error its traceback
    assert [(e.kind, e.attempt) for e in journal] == [
        (EntryKind.ATTEMPT, 1),
        (EntryKind.ATTEMPT, 2),
        (EntryKind.STEP, 3),
    ]
    assert [e.attempt_started_at for e in journal] == [began, began + 10, began + 20]
    assert all(e.started_at == began for e in journal)  # the step's start is unchanged
    for entry in journal:
        assert entry.error is not None and "in charge_card" in (entry.error.traceback or "")


class FailsThenWorks(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def flaky(ctx: Any) -> int:
            if ctx.attempt < 3:
                raise ValueError(f"not yet ({ctx.attempt})")
            return 7

        return await step.do("flaky", THREE_ATTEMPTS, flaky)


def test_a_step_that_succeeds_after_retries_lists_the_failures_then_the_success(
    make_env: EnvFactory,
) -> None:
    env = make_env({"f": FailsThenWorks})
    inst = env.create("f", id="f")
    env.run_until_idle()
    [row] = inst.status().steps
    assert (row.status, row.output, row.error) == ("complete", 7, None)
    assert [(a.attempt, a.success) for a in row.attempt_history] == [
        (1, False),
        (2, False),
        (3, True),
    ]
    assert row.attempt_history[2].error is None
    assert row.to_dict()["attempt_history"][2]["error"] is None


def recurse(depth: int) -> None:
    if depth == 0:
        raise RecursionError("too deep on purpose")
    return bounce(depth - 1)


def bounce(depth: int) -> None:
    return recurse(depth)


class DeepFailure(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("deep", {"retries": {"limit": 0}}, lambda: recurse(300))


def test_a_long_traceback_keeps_its_head_and_tail_with_a_marker(make_env: EnvFactory) -> None:
    # GIVEN a step failing 600 distinct frames deep
    env = make_env({"d": DeepFailure})
    inst = env.create("d", id="d")
    # WHEN it has failed and its journal is read back
    env.run_until_idle()
    [entry] = inst.journal()
    trace = entry.error.traceback if entry.error else ""
    assert trace
    # THEN the traceback fits the cap; its head starts where run() called the step, one line
    # says what was cut, and its tail ends where the error was raised
    assert len(trace.encode()) <= MAX_TRACEBACK_BYTES
    head, _, tail = trace.partition("  ... ")
    assert head.startswith("Traceback (most recent call last):\n")
    assert "lambda: recurse(300))" in head and "in recurse" in head
    assert re.fullmatch(
        r"\d+ frame\(s\) cut here \([\d,]+ bytes\): a traceback is kept to 8 KiB, its first "
        r"and last frames",
        tail.split("\n", 1)[0],
    )
    assert "frame(s) cut here" not in tail.split("\n", 1)[1]
    assert tail.rstrip().endswith("RecursionError: too deep on purpose")
    assert 'raise RecursionError("too deep on purpose")' in tail
    assert inst.status().steps[0].attempt_history[0].error == entry.error


class RunFailsDeep(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("read order", lambda: 1)
        recurse(300)  # run() itself fails, 600 frames deep


def test_a_long_run_traceback_keeps_its_head_and_tail_too(make_env: EnvFactory) -> None:
    # GIVEN run() itself failing 600 frames deep WHEN the instance has errored
    env = make_env({"r": RunFailsDeep})
    inst = env.create("r", id="r")
    env.run_until_idle()
    error = inst.status().error
    assert error is not None and error.traceback is not None
    # THEN the instance's traceback is capped as an attempt's is: head, marker, tail
    trace = error.traceback
    assert len(trace.encode()) <= MAX_TRACEBACK_BYTES
    head, _, tail = trace.partition("frame(s) cut here")
    assert "recurse(300)  # run() itself fails" in head
    assert tail.rstrip().endswith("RecursionError: too deep on purpose")


class SensitiveFailure(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def issue(ctx: Any) -> str:
            token = SECRET[:-1] + SECRET[-1]  # a local variable holding the secret
            if ctx.attempt == 1:
                raise PermissionError("token service said no")
            return token

        return await step.do("issue", {"sensitive": "output", "retries": {"delay": 1}}, issue)


def test_a_sensitive_steps_traceback_shows_no_variable_values(make_env: EnvFactory) -> None:
    env = make_env({"s": SensitiveFailure})
    inst = env.create("s", id="s")
    env.run_until_idle()
    shown = inst.status().to_dict()
    [row] = shown["steps"]
    assert row["output"] == "[REDACTED]"
    assert "in issue" in row["attempt_history"][0]["error"]["traceback"]
    assert SECRET not in json.dumps(row)


class WaitsAndSleeps(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", "2 hours")
        approval = await step.wait_for_event("approval", type="approved", timeout="1 day")
        await step.wait_for_event("late", type="never", timeout="1 hour")
        return approval.payload


def test_a_wait_row_shows_its_event_type_then_the_payload(make_env: EnvFactory) -> None:
    # GIVEN an instance past its sleep, waiting for "approved"
    env = make_env({"w": WaitsAndSleeps})
    began = env.clock.time()
    inst = env.create("w", id="w")
    env.run_until_idle()
    nap, approval = inst.status().steps
    # THEN the sleep shows when it woke, the wait what it awaits and no output yet
    assert (nap.type, nap.status, nap.wake_at) == ("sleep", "complete", began + 2 * 3600)
    assert nap.to_dict()["wake_at"] == iso(began + 2 * 3600)
    assert (approval.status, approval.event_type, approval.output) == ("waiting", "approved", None)
    # WHEN the event arrives, and the next wait times out
    inst.send_event(type="approved", payload={"user": "ana"})
    env.run_until_idle()
    env.clock.advance(timedelta(hours=1))  # run_until_idle never skips an event timeout
    env.run_until_idle()
    nap, approval, late = inst.status().steps
    # THEN the wait shows the payload it received; the timed-out one its type and error
    assert (approval.status, approval.event_type) == ("complete", "approved")
    assert approval.output == {"user": "ana"}
    assert approval.to_dict()["output"] == {"user": "ana"}
    assert (late.status, late.event_type) == ("errored", "never")
    assert late.error is not None and late.error.name == "WorkflowTimeoutError"
    assert late.attempt_history == () and nap.attempt_history == ()


def test_a_pending_sleep_shows_when_it_wakes(make_env: EnvFactory) -> None:
    env = make_env({"w": WaitsAndSleeps})
    began = env.clock.time()
    inst = env.create("w", id="w")
    env.run_once("w", "w")
    [nap] = inst.status().steps
    assert (nap.status, nap.wake_at) == ("waiting", began + 2 * 3600)
    assert "wakes at " + str(iso(began + 2 * 3600)) in render(inst.status().to_dict())


def test_from_dict_rebuilds_the_view_that_to_dict_shows(make_env: EnvFactory) -> None:
    # GIVEN views with every kind of row: failed attempts, a sleep, waits
    env = make_env({"pay": AlwaysFails, "w": WaitsAndSleeps})
    failed = env.create("pay", id="p")
    waiting = env.create("w", id="w")
    env.run_until_idle()
    waiting.send_event(type="approved", payload={"user": "ana"})
    env.run_until_idle()
    env.clock.advance(timedelta(hours=1))
    env.run_until_idle()
    for inst in (failed, waiting):
        shown = inst.status().to_dict()
        # WHEN a client rebuilds them from JSON with a key it does not know
        wire = json.loads(json.dumps(shown))
        wire["added_later"] = 1
        wire["steps"][0]["added_later"] = 1
        rebuilt = InstanceStatusView.from_dict(wire)
        # THEN they show the same thing, tracebacks included
        assert rebuilt.to_dict() == shown
        assert all(isinstance(step, StepInfo) for step in rebuilt.steps)
    rebuilt_row = InstanceStatusView.from_dict(failed.status().to_dict()).steps[0]
    assert rebuilt_row.attempt_history[-1].error is not None
    assert "in charge_card" in (rebuilt_row.attempt_history[-1].error.traceback or "")


def test_the_text_timeline_shows_attempts_traceback_wait_and_sleep(
    make_env: EnvFactory,
) -> None:
    env = make_env({"pay": AlwaysFails, "w": WaitsAndSleeps})
    failed = env.create("pay", id="p")
    waiting = env.create("w", id="w")
    env.run_until_idle()
    waiting.send_event(type="approved", payload={"user": "ana"})
    env.run_until_idle()
    env.clock.advance(timedelta(hours=1))
    env.run_until_idle()

    text = render(failed.status().to_dict())
    assert text.splitlines()[0] == "pay/p: errored"
    for n in (1, 2, 3):
        assert f"attempt {n}  " in text
        assert f"ConnectionError: card service unreachable (attempt {n})" in text
    assert text.count("Traceback (most recent call last):") == 1  # the last attempt's
    assert "charge_card(ctx.attempt)" in text and "in charge_card" in text

    text = render(waiting.status().to_dict())
    assert 'awaits \'approved\' -> {"user": "ana"}' in text
    assert "awaits 'never'" in text and "WorkflowTimeoutError" in text
    assert "wakes at " in text


class RetriedAtOnce(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def flaky(ctx: Any) -> str:
            if ctx.attempt < 3:
                raise ConnectionError(f"down (attempt {ctx.attempt})")
            return "up"

        return await step.do("flaky", {"retries": {"limit": 3, "delay": 0}}, flaky)


def test_attempts_recorded_at_the_same_instant_show_in_order(make_env: EnvFactory) -> None:
    """A retry without delay on a clock that stands still records every attempt and the
    outcome at one instant: the row still ends as the step ended, its attempts in order."""
    env = make_env({"w": RetriedAtOnce})
    inst = env.create("w", id="same-instant")
    env.run_until_idle()

    row = inst.status().steps[0]
    assert (row.status, row.output, row.attempts) == ("complete", "up", 3)
    history = inst.status().to_dict()["steps"][0]["attempt_history"]
    assert [(a["attempt"], a["success"]) for a in history] == [(1, False), (2, False), (3, True)]


class RunFails(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("read order", lambda: {"total": -1})
        raise ValueError("a negative total")  # where run() itself fails


def test_an_uncaught_run_error_keeps_its_traceback_on_the_instance(make_env: EnvFactory) -> None:
    # GIVEN run() raising after its step WHEN the instance runs
    env = make_env({"r": RunFails})
    inst = env.create("r", id="r")
    env.run_until_idle()
    # THEN the instance's error is Cloudflare's {name, message}, and keeps where run() failed:
    # the user's frame, none of the library's, and nothing the engine handled on its own
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None
    assert dict(status.error) == {"name": "ValueError", "message": "a negative total"}
    traceback = status.error.traceback
    assert traceback is not None
    assert traceback.startswith("Traceback (most recent call last):")
    assert 'raise ValueError("a negative total")  # where run() itself fails' in traceback
    assert traceback.endswith("ValueError: a negative total\n")
    assert "lambda_workflows" not in traceback and "During handling" not in traceback
    assert len(traceback.encode()) <= MAX_TRACEBACK_BYTES


def test_the_bundled_examples_frames_are_the_users_not_the_librarys(make_env: EnvFactory) -> None:
    # GIVEN an example workflow (it lives inside the lambda_workflows package) whose step fails
    from lambda_workflows.examples import showcase

    env = make_env({"flaky": showcase.FlakyFetchWorkflow})
    inst = env.create("flaky", id="f")
    env.run_until_idle()
    # THEN each failed attempt's traceback shows the example's own frame
    first = inst.status().steps[0].attempt_history[0]
    assert first.error is not None
    trace = first.error.traceback or ""
    assert f'File "{showcase.__file__}"' in trace and "in fetch" in trace
    assert "engine" not in trace and "asyncio" not in trace
