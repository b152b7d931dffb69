"""Rules of Workflows: "Take care with Promise.race() and Promise.any()".

Wrap a race between steps in a ``step.do``.

✅ ``RaceInsideStepWorkflow``: the race runs inside the "Promise step" step, so its winner is
recorded once; later invocations (after the sleep, after a crash) get that winner back even
if the race would now come out differently.
🔴 ``BadRaceInsideStepWorkflow``: the race is decided again on every replay. The ported bad
example cancels its loser (``first_completed``), so its loser is never recorded and runs again
in every invocation. Cloudflare's exact failure ("returns `first` even though the race first
returned `second`") needs JavaScript semantics, where ``Promise.race`` does not cancel the
loser: ``NonCancellingBadRace`` below is that variant (test-local).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, ClassVar, TypeVar

import pytest

import lambda_workflows.examples.race_inside_step as module
from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.examples._fakes import example_env
from lambda_workflows.examples.race_inside_step import (
    BadRaceInsideStepWorkflow,
    RaceInsideStepWorkflow,
)
from lambda_workflows.testing import WorkflowTestEnv

from ._support import crash_after, step_rows

T = TypeVar("T")


def _start(workflow: type[WorkflowEntrypoint]) -> tuple[WorkflowTestEnv, Any]:
    env = WorkflowTestEnv({"race": workflow}, env=example_env())
    return env, env.create("race", id="race-1")


class Contenders:
    """Counting stand-ins for the example's ``_first`` / ``_second``; speeds are settable."""

    def __init__(self, first_delay: float, second_delay: float) -> None:
        self.delays = {"first": first_delay, "second": second_delay}
        self.calls = {"first": 0, "second": 0}

    def make(self, name: str) -> Any:
        async def contender() -> str:
            self.calls[name] += 1
            await asyncio.sleep(self.delays[name])
            return name

        return contender

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(module, "_first", self.make("first"))
        monkeypatch.setattr(module, "_second", self.make("second"))


def test_race_wrapped_in_a_step_keeps_its_winner_after_the_sleep_and_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN Cloudflare's race: "second" is the faster contender
    contenders = Contenders(first_delay=0.05, second_delay=0.0)
    contenders.install(monkeypatch)
    workflow = crash_after(RaceInsideStepWorkflow, "Sleep step")
    env, inst = _start(workflow)

    # WHEN the first invocation runs the race and ends at the 2-hour sleep
    env.run_once("race", "race-1")
    assert inst.status().status == "waiting"
    recorded = {row[0]: row for row in step_rows(inst)}
    assert recorded["Promise step"][3] == "complete"

    # AND from now on the race would go the other way if it were run again
    contenders.delays.update(first=0.0, second=0.05)
    calls_before = dict(contenders.calls)
    # AND the invocation after the sleep dies right after the sleep, and is replayed
    env.run_until_idle()

    # THEN the workflow went on with the recorded winner, and the race was never re-run
    assert workflow.crash_plan.crashed == ["Sleep step"] and env.crashes == 1
    status = inst.status()
    assert status.status == "complete"
    assert status.output == "second"
    assert contenders.calls == calls_before
    rows = step_rows(inst)
    assert [row[0] for row in rows if row[0] != "Promise second race"] == [
        "Promise step",
        "Sleep step",
        "Another step",
    ]
    assert all(row[4] == 1 for row in rows)


def test_bad_race_outside_a_step_reruns_its_cancelled_loser_in_every_invocation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the ported bad example (its race cancels the loser), with counting contenders
    contenders = Contenders(first_delay=0.05, second_delay=0.0)
    contenders.install(monkeypatch)
    env, inst = _start(crash_after(BadRaceInsideStepWorkflow, "Sleep step"))
    # WHEN it runs: before the sleep, after it, and again after a crash
    env.run_until_idle()
    # THEN the race was decided anew in each of the three invocations: the loser's step body
    # ran three times and was never recorded (the race result itself is not recorded either)
    assert env.invocations == 3 and env.crashes == 1
    assert inst.status().status == "complete"
    assert contenders.calls["first"] == 3
    names = [row[0] for row in step_rows(inst)]
    assert "Promise first race" not in names
    assert "Promise step" not in names


async def race_without_cancel(*contenders: Awaitable[T]) -> T:
    """Test-local ``Promise.race``: the first settled result; the losers keep running."""
    tasks = [asyncio.ensure_future(contender) for contender in contenders]
    done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    return next(task for task in tasks if task in done).result()  # ties: argument order


class NonCancellingBadRace(WorkflowEntrypoint):
    """Test-local: ``BadRaceInsideStepWorkflow`` with a JavaScript-like race that lets the
    loser finish (the ported example cancels it). ``winners`` logs each pass's race result."""

    winners: ClassVar[list[str]] = []

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        race_return = await race_without_cancel(  # the 🔴 pattern: no step.do around it
            step.do("Promise first race", module._first),
            step.do("Promise second race", module._second),
        )
        type(self).winners.append(race_return)

        await step.sleep("Sleep step", "2 hours")

        return await step.do("Another step", lambda: race_return)


def test_bad_race_outside_a_step_changes_its_winner_on_replay_when_the_loser_finishes() -> None:
    # GIVEN the non-cancelling bad race: "second" wins the first time, "first" still finishes
    NonCancellingBadRace.winners = []
    env, inst = _start(NonCancellingBadRace)
    # WHEN it runs past the 2-hour sleep (a new invocation replays run())
    env.run_until_idle()
    # THEN the first pass saw "second" win, but the replay, where both contenders return
    # their recorded results at once, saw "first": "Another step" returned "first"
    assert NonCancellingBadRace.winners == ["second", "first"]
    status = inst.status()
    assert status.status == "complete"
    assert status.output == "first"
    # (the loser was allowed to finish and was recorded before the invocation ended)
    assert {"Promise first race", "Promise second race"} <= {row[0] for row in step_rows(inst)}
