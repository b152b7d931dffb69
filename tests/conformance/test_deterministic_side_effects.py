"""Rules of Workflows: "Avoid doing side effects outside of a step".

Side effects and randomness only inside steps.

✅ ``DeterministicSideEffectsWorkflow``: the random number and the other workflow's instance
are made in steps, so replays reuse them; the "successfully did stuff" line is logged in a
step; the run()-level line uses ``self.logger``, which does not repeat it on replay.
🔴 ``BadDeterministicSideEffectsWorkflow``: an instance created outside a step is created again
by every replay, and a branch on a random number drawn outside a step changes path on replay
(the engine stops that with ``NonDeterminismError``). ⚠️ A ``print`` in run() repeats.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

import lambda_workflows.examples.deterministic_side_effects as module
from lambda_workflows import WorkflowEvent, WorkflowStep
from lambda_workflows.examples._fakes import create_db_connection, example_env
from lambda_workflows.examples.deterministic_side_effects import (
    AnotherWorkflow,
    BadDeterministicSideEffectsWorkflow,
    DeterministicSideEffectsWorkflow,
)
from lambda_workflows.testing import Crash, WorkflowTestEnv

from ._support import FakeRandom, crash_after, instances_of, step_rows

RANDOM_STEP = "create a random number"
INSTANCE_STEP = "good step that returns state"
RUN_LINE = "This might be logged more than once"
STEP_LINE = "successfully did stuff"


def _env(workflow: type[Any]) -> WorkflowTestEnv:
    return WorkflowTestEnv(
        {"side-effects": workflow, "another-workflow": AnotherWorkflow}, env=example_env()
    )


def _crash_once_between_random_and_instance(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The invocation dies after the random step, before the instance step (while run()
    builds its db connection, the only code between the two)."""
    crashes: list[int] = []

    def dying_connection(url: str, token: str) -> Any:
        if not crashes:
            crashes.append(1)
            raise Crash("the invocation dies between two steps")
        return create_db_connection(url, token)

    monkeypatch.setattr(module, "create_db_connection", dying_connection)
    return crashes


def test_random_number_and_created_instance_are_made_once_across_replays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a random source that would give a new number on every draw
    dice = FakeRandom(0.25, 0.75)
    monkeypatch.setattr(module, "random", dice)
    # AND invocations that die after the random step and after the instance step
    between = _crash_once_between_random_and_instance(monkeypatch)
    workflow = crash_after(DeterministicSideEffectsWorkflow, INSTANCE_STEP)
    env = _env(workflow)
    inst = env.create("side-effects", id="fx-1")

    # WHEN it runs to the end through both crashes
    env.run_until_idle()

    # THEN the number was drawn once and the other workflow got exactly one instance,
    # the one the step recorded
    assert between == [1] and workflow.crash_plan.crashed == [INSTANCE_STEP]
    assert env.crashes == 2
    status = inst.status()
    assert status.status == "complete"
    assert dice.draws == 1
    assert status.output["random"] == 0.25
    created = instances_of(env, "another-workflow")
    assert created == [status.output["instance"]]
    assert env.get("another-workflow", created[0]).status().status == "complete"
    assert [row[4] for row in step_rows(inst)] == [1, 1, 1]


def test_run_level_log_line_is_not_repeated_by_replays_and_step_line_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN the invocation dies after the random step, so run() is replayed
    caplog.set_level(logging.INFO, logger="lambda_workflows")
    workflow = crash_after(DeterministicSideEffectsWorkflow, RANDOM_STEP)
    env = _env(workflow)
    env.create("side-effects", id="fx-2")
    # WHEN it runs to the end
    env.run_until_idle()
    # THEN run() ran twice, yet each line was logged once
    assert env.crashes == 1
    messages = [r.getMessage() for r in caplog.records if r.name.endswith("CrashingAfter")]
    assert messages.count(RUN_LINE) == 1
    assert messages.count(STEP_LINE) == 1


class PrintingWorkflow(DeterministicSideEffectsWorkflow):
    """Test-local: Cloudflare's ``console.log`` in run() as a ``print``, next to self.logger."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        print(RUN_LINE)
        return await super().run(event, step)


def test_warning_a_print_in_run_repeats_on_every_replay_but_self_logger_does_not(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN run() prints a line and logs the same line with self.logger; it crashes twice
    caplog.set_level(logging.INFO, logger="lambda_workflows")
    workflow = crash_after(PrintingWorkflow, RANDOM_STEP, INSTANCE_STEP)
    env = _env(workflow)
    env.create("side-effects", id="fx-3")
    # WHEN it runs to the end (three passes of run())
    env.run_until_idle()
    # THEN the print came out three times, the logger line once
    assert env.crashes == 2
    printed = capsys.readouterr().out.splitlines()
    assert printed.count(RUN_LINE) == 3  # print's own lines (log records are JSON lines)
    logged = [r.getMessage() for r in caplog.records if r.name.endswith("CrashingAfter")]
    assert logged.count(RUN_LINE) == 1


class BadThenSleeps(BadDeterministicSideEffectsWorkflow):
    """Test-local: the bad example followed by a sleep and a step, so that run() is replayed
    (Cloudflare's bad code sits at the top of a longer workflow)."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        result = await super().run(event, step)
        await step.sleep("hibernate", "1 hour")
        await step.do("after the sleep", lambda: "done")
        return result


def test_bad_instance_created_outside_a_step_is_created_again_on_every_replay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the bad workflow (coin always low, so the random branch takes no step), with a
    # sleep after it and a crash after the sleep: run() is executed three times
    monkeypatch.setattr(module, "random", FakeRandom(0.1))
    workflow = crash_after(BadThenSleeps, "hibernate")
    env = _env(workflow)
    inst = env.create("side-effects", id="fx-4")
    # WHEN it runs to the end
    env.run_until_idle()
    # THEN it completed, but each of the three passes created another instance
    assert env.crashes == 1
    status = inst.status()
    assert status.status == "complete"
    created = instances_of(env, "another-workflow")
    assert len(created) == 3
    assert status.output["instance"] in created  # only the last one is known to the workflow


@pytest.mark.parametrize(
    ("first_draw", "replay_draw"),
    [(0.9, 0.1), (0.1, 0.9)],
    ids=["step-then-no-step", "no-step-then-step"],
)
def test_bad_branch_on_random_outside_a_step_fails_replay_when_the_coin_flips(
    monkeypatch: pytest.MonkeyPatch, first_draw: float, replay_draw: float
) -> None:
    # GIVEN the coin outside the step lands differently on the replay after the sleep
    dice = FakeRandom(first_draw, replay_draw)
    monkeypatch.setattr(module, "random", dice)
    env = _env(BadThenSleeps)
    inst = env.create("side-effects", id="fx-5")
    # WHEN it runs
    env.run_until_idle()
    # THEN the replay took another path and the engine refused it
    assert dice.draws == 2
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None and status.error.name == "NonDeterminismError"
    assert "do some stuff" in status.error.message and "hibernate" in status.error.message


def test_bad_branch_on_random_replays_fine_when_the_coin_happens_to_agree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the same workflow, with a coin that lands the same way both times (the control
    # case of the test above: the error comes from the flip, not from the sleep)
    monkeypatch.setattr(module, "random", FakeRandom(0.9, 0.9))
    env = _env(BadThenSleeps)
    inst = env.create("side-effects", id="fx-6")
    env.run_until_idle()
    assert inst.status().status == "complete"
    assert [row[0] for row in step_rows(inst)] == ["do some stuff", "hibernate", "after the sleep"]
