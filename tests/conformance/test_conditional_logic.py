"""Rules of Workflows: "Use conditional logic carefully".

Branch only on values that are the same on every replay.

✅ ``ConditionalLogicWorkflow``: branches on a step result (feature flags), on the event
payload, and on a random draw made inside a step; a crash and a replay take the same branches
and record the same steps.
🔴 ``BadConditionalLogicWorkflow``: a branch on ``random.random()`` outside a step; when the
coin lands differently on a replay the engine fails the instance with ``NonDeterminismError``.
The random source is a controllable fake patched into the example's module.
"""

from __future__ import annotations

from typing import Any

import pytest

import lambda_workflows.examples.conditional_logic as module
from lambda_workflows import WorkflowEvent, WorkflowStep
from lambda_workflows.examples._fakes import example_env
from lambda_workflows.examples.conditional_logic import (
    BadConditionalLogicWorkflow,
    ConditionalLogicWorkflow,
)
from lambda_workflows.testing import WorkflowTestEnv

from ._support import FakeRandom, crash_after, step_rows


@pytest.mark.parametrize(
    ("emails", "user_type", "coin", "expected_steps"),
    [
        (
            True,
            "premium",
            0.9,
            ["send email", "premium processing", "decide randomly", "conditionally do something"],
        ),
        (False, "free", 0.9, ["decide randomly", "conditionally do something"]),
        (True, "free", 0.1, ["send email", "decide randomly"]),
    ],
)
def test_branch_decisions_survive_crashes_and_record_the_same_steps(
    monkeypatch: pytest.MonkeyPatch,
    emails: bool,
    user_type: str,
    coin: float,
    expected_steps: list[str],
) -> None:
    # GIVEN flags, a payload and a coin, where a second draw would land the other way
    dice = FakeRandom(coin, 1.0 - coin)
    monkeypatch.setattr(module, "random", dice)
    fakes = example_env()
    fakes["KV"].put("feature-flags", {"enable_email_notifications": emails})
    # AND invocations that die right after the config step and after the random decision
    workflow = crash_after(ConditionalLogicWorkflow, "fetch config", "decide randomly")
    env = WorkflowTestEnv({"branches": workflow}, env=fakes)
    inst = env.create("branches", id="b-1", params={"user_type": user_type})
    # WHEN it runs to the end through both crashes
    env.run_until_idle()
    # THEN every replay took the branches of the first run: the steps recorded are exactly
    # the ones the first decisions call for, once each
    assert env.crashes == 2
    status = inst.status()
    assert status.status == "complete", status.error
    assert step_rows(inst) == [
        (name, 1, "do", "complete", 1) for name in ["fetch config", *expected_steps]
    ]
    assert dice.draws == 1
    assert fakes["KV"].reads["feature-flags"] == 1
    assert len(status.output) == len(expected_steps) - 1  # every branch step but the draw


class BadThenSleeps(BadConditionalLogicWorkflow):
    """Test-local: the bad example followed by a sleep, so that run() is replayed."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await super().run(event, step)
        await step.sleep("later", "1 hour")
        return await step.do("after the sleep", lambda: "done")


@pytest.mark.parametrize(
    ("first_draw", "replay_draw"),
    [(0.9, 0.1), (0.1, 0.9)],
    ids=["step-then-no-step", "no-step-then-step"],
)
def test_bad_branch_on_random_outside_a_step_fails_replay_when_the_coin_flips(
    monkeypatch: pytest.MonkeyPatch, first_draw: float, replay_draw: float
) -> None:
    # GIVEN the coin drawn outside any step lands differently on the replay after the sleep
    dice = FakeRandom(first_draw, replay_draw)
    monkeypatch.setattr(module, "random", dice)
    env = WorkflowTestEnv({"branches": BadThenSleeps}, env=example_env())
    inst = env.create("branches", id="b-2")
    # WHEN it runs
    env.run_until_idle()
    # THEN the replay called other steps than the journal recorded, and the engine refused
    assert dice.draws == 2
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None and status.error.name == "NonDeterminismError"
    assert "'maybe do something'" in status.error.message
    assert "'later'" in status.error.message


def test_bad_branch_on_random_completes_when_the_coin_happens_to_agree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the same coin on both passes (the control case: the flip causes the error)
    monkeypatch.setattr(module, "random", FakeRandom(0.9, 0.9))
    env = WorkflowTestEnv({"branches": BadThenSleeps}, env=example_env())
    inst = env.create("branches", id="b-3")
    env.run_until_idle()
    assert inst.status().status == "complete"
    assert [row[0] for row in step_rows(inst)] == ["maybe do something", "later", "after the sleep"]
