"""pause / resume / terminate / restart with Cloudflare's semantics."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from lambda_workflows import InvalidTransition, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.testing import WorkflowTestEnv

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

ran: Counter[str] = Counter()
ENVS: dict[str, WorkflowTestEnv] = {}


class PausesItself(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def first() -> str:
            ran["first"] += 1
            # A pause requested while this step runs takes effect when it finishes.
            ENVS["env"].get("p", event.instance_id).pause()
            return "first done"

        def second() -> str:
            ran["second"] += 1
            return "second done"

        a = await step.do("first", first)
        b = await step.do("second", second)
        return [a, b]


def test_pause_stops_at_the_next_step_boundary_and_resume_continues(make_env: EnvFactory) -> None:
    ran.clear()
    env = ENVS["env"] = make_env({"p": PausesItself})
    inst = env.create("p", id="p")
    env.run_until_idle()
    # the running step finished and was recorded; the next one did not start
    assert inst.status().status == "paused"
    assert ran == Counter(first=1)
    assert [s.name for s in inst.status().steps] == ["first"]
    inst.resume()
    env.run_until_idle()
    assert inst.status().status == "complete"
    assert inst.status().output == ["first done", "second done"]
    assert ran == Counter(first=1, second=1)


class SleepsAnHour(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", "1 hour")
        return await step.do("after", lambda: "awake")


def test_resume_shifts_a_pending_sleep_by_the_time_spent_paused(make_env: EnvFactory) -> None:
    env = make_env({"s": SleepsAnHour})
    start = env.clock.time()
    inst = env.create("s", id="s")
    env.run_once("s", "s")  # starts the 1 hour sleep
    env.clock.advance("30 minutes")
    inst.pause()
    assert inst.status().status == "paused"
    env.clock.advance("2 hours")  # paused for 2 hours; the original wake-up comes and goes
    env.run_until_idle()
    assert inst.status().status == "paused"
    inst.resume()
    env.run_until_idle()
    status = inst.status()
    assert status.status == "complete"
    nap, after = status.steps
    assert nap.end == start + 3 * 3600  # 1 hour of sleep + 2 hours paused
    assert after.start is not None and after.start >= start + 3 * 3600


def test_terminate_stops_the_instance_and_cancels_its_wake_up(make_env: EnvFactory) -> None:
    env = make_env({"s": SleepsAnHour})
    inst = env.create("s", id="s")
    env.run_once("s", "s")
    assert env.pending_wake_ups()
    inst.terminate()
    assert env.pending_wake_ups() == []
    env.clock.advance("2 hours")
    env.run_until_idle()
    assert inst.status().status == "terminated"
    assert [(s.name, s.status) for s in inst.status().steps] == [("nap", "cancelled")]


def test_terminating_a_finished_instance_is_a_clear_error(make_env: EnvFactory) -> None:
    env = make_env({"s": SleepsAnHour})
    inst = env.create("s", id="s")
    env.run_until_idle()
    with pytest.raises(InvalidTransition, match="already complete"):
        inst.terminate()
    with pytest.raises(InvalidTransition, match="already complete"):
        inst.send_event(type="late", payload=1)


class CountsRuns(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def once() -> int:
            ran["restartable"] += 1
            return ran["restartable"]

        return await step.do("count", once)


def test_restart_reruns_from_the_top(make_env: EnvFactory) -> None:
    ran.clear()
    env = make_env({"c": CountsRuns})
    inst = env.create("c", id="c", params={"same": "params"})
    env.run_until_idle()
    assert inst.status().output == 1
    inst.restart()
    assert inst.status().status == "queued"
    env.run_until_idle()
    assert inst.status().status == "complete"
    assert inst.status().output == 2  # the step ran again: a fresh journal


def test_pause_then_terminate_while_paused(make_env: EnvFactory) -> None:
    env = make_env({"s": SleepsAnHour})
    inst = env.create("s", id="s")
    env.run_once("s", "s")
    inst.pause()
    inst.terminate()
    env.run_until_idle()
    assert inst.status().status == "terminated"
