"""restart(from_step=...) after the instance rolled back, matched against Cloudflare's engine.

The scenario was run on Cloudflare's own engine (miniflare 4.20260730.0) and its output
recorded in ``tests/cloudflare/restart_after_rollback/``: a saga of three steps with
rollbacks whose third step fails, so it rolls back; then a restart from its second step. There,
the first step keeps its result although its rollback ran (its callback does not run again),
and when the restarted run fails again its rollback does not run a second time: an effect is
not undone twice. The steps that ran again are rolled back again here (Cloudflare's local
engine skips them too, leaving their new effects in place: see docs/semantics.md).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows import InstanceFailedError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

RECORDED = Path(__file__).parents[1] / "cloudflare" / "restart_after_rollback"

calls: list[dict[str, Any]] = []  # what ran, as the recording's "calls" list it
failing: set[str] = set()  # holds "three" while the third step must fail
serial = itertools.count(1)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    calls.clear()
    failing.clear()


def trace(what: str, step: str, **extra: Any) -> None:
    calls.append({"what": what, "step": step, **extra})


def undo(name: str) -> Any:
    def rollback(ctx: Any, output: Any, error: InstanceFailedError) -> None:
        trace("rollback", name, output=output, error=error.message)

    return rollback


def made(name: str) -> Any:
    def callback() -> str:
        value = f"{name}@{next(serial)}"
        trace("callback", name, value=value)
        return value

    return callback


def three() -> str:
    trace("callback", "three", failing="three" in failing)
    if "three" in failing:
        raise RuntimeError("three failed")
    return "three"


class Saga(WorkflowEntrypoint):
    """worker.mjs's saga: three steps, each with a rollback; no retries."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        no_retry = {"retries": {"limit": 0, "delay": 0}}
        one = await step.do("one", no_retry, made("one"), rollback=undo("one"))
        two = await step.do("two", no_retry, made("two"), rollback=undo("two"))
        last = await step.do("three", no_retry, three, rollback=undo("three"))
        return {"one": one, "two": two, "three": last}


def recorded(scenario: str) -> list[dict[str, Any]]:
    """The phases Cloudflare's engine went through in ``scenario`` (see run.mjs)."""
    document = json.loads((RECORDED / f"{scenario}.json").read_text())
    phases: list[dict[str, Any]] = document["phases"]
    return phases


def ran(phase_calls: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Which callbacks and rollbacks ran, in order."""
    return [(c["what"], c["step"]) for c in phase_calls]


def test_a_step_whose_rollback_ran_keeps_its_result_when_restarted_after_it(
    make_env: EnvFactory,
) -> None:
    first, restarted = recorded("passes-after-restart")
    # GIVEN a saga whose third step failed: every step was rolled back
    env = make_env({"saga": Saga})
    failing.add("three")
    inst = env.create("saga", id="saga-1")
    env.run_until_idle()
    assert inst.status().status == first["status"] == "errored"
    assert ran(calls) == ran(first["calls"])
    kept = calls[0]["value"]
    # WHEN it restarts from its second step, and the third step passes now
    calls.clear()
    failing.clear()
    inst.restart(from_step={"name": "two"})
    env.run_until_idle()
    # THEN as on Cloudflare: the first step's callback does not run again, its result is kept
    # (its rollback ran: the effect it stands for was undone); the second and third run again
    status = inst.status()
    assert status.status == restarted["status"] == "complete"
    assert ran(calls) == ran(restarted["calls"]) == [("callback", "two"), ("callback", "three")]
    assert status.output["one"] == kept
    assert restarted["output"]["one"] == first["calls"][0]["value"]  # Cloudflare's, the same


def test_a_kept_step_is_not_rolled_back_twice_when_the_restarted_run_fails_again(
    make_env: EnvFactory,
) -> None:
    first, restarted = recorded("fails-again-after-restart")
    # GIVEN a saga rolled back, restarted from its second step
    env = make_env({"saga": Saga})
    failing.add("three")
    inst = env.create("saga", id="saga-2")
    env.run_until_idle()
    assert ran(calls) == ran(first["calls"])
    calls.clear()
    inst.restart(from_step={"name": "two"})
    # WHEN the third step fails again
    env.run_until_idle()
    # THEN as on Cloudflare, the first step's rollback does not run again: the rollback it had
    # is kept with its result (the step shows it)
    status = inst.status()
    assert status.status == restarted["status"] == "errored"
    assert ("rollback", "one") not in ran(calls)
    assert ("rollback", "one") not in ran(restarted["calls"])
    assert [s.name for s in status.steps if s.type == "rollback"] == ["three", "two", "one"]
    # AND the steps that ran again are rolled back again (their new effects are undone), where
    # Cloudflare's local engine runs no rollback at all (the difference docs/semantics.md states)
    assert ran(restarted["calls"]) == [("callback", "two"), ("callback", "three")]
    assert ran(calls) == [
        ("callback", "two"),
        ("callback", "three"),
        ("rollback", "three"),
        ("rollback", "two"),
    ]
    assert calls[-1]["output"] == calls[0]["value"]  # the second step's new output


def test_a_rollback_that_failed_is_not_kept_and_runs_again_on_the_next_failure(
    make_env: EnvFactory,
) -> None:
    # GIVEN a saga whose first step's rollback failed for good when it rolled back
    class BrittleUndo(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            no_retry = {"retries": {"limit": 0, "delay": 0}}
            await step.do("one", made("one"), rollback=brittle, rollback_config=no_retry)
            await step.do("two", made("two"))
            await step.do("three", no_retry, three)

    def brittle(ctx: Any, output: Any, error: InstanceFailedError) -> None:
        trace("rollback", "one", output=output)
        if "one" in failing:
            raise RuntimeError("the refund service is down")

    env = make_env({"saga": BrittleUndo})
    failing.update({"one", "three"})
    inst = env.create("saga", id="saga-3")
    env.run_until_idle()
    rollback = inst.status().rollback
    assert rollback is not None and rollback.status == "failed"
    # WHEN it restarts from its second step and fails again, the refund service back
    failing.discard("one")
    calls.clear()
    inst.restart(from_step={"name": "two"})
    env.run_until_idle()
    # THEN the first step's result is kept, and its rollback (whose effect was never undone)
    # runs again, this time to its end
    assert ran(calls) == [("callback", "two"), ("callback", "three"), ("rollback", "one")]
    rollback = inst.status().rollback
    assert rollback is not None and rollback.status == "complete"
