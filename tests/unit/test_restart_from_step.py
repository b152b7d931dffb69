"""restart(from_step=...): the results recorded before the step are kept, that step and every
step after it run again; an unknown step changes nothing."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from lambda_workflows import InvalidInput, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.testing import WorkflowTestEnv

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

calls: Counter[str] = Counter()
ENVS: dict[str, WorkflowTestEnv] = {}
FIXED: set[str] = set()


def counted(name: str) -> int:
    """Count a callback's call; return how many times it ran (so a kept result shows)."""
    calls[name] += 1
    return calls[name]


class ThreeSteps(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        one = await step.do("one", lambda: counted("one"))
        two = await step.do("two", lambda: counted("two"))
        three = await step.do("three", lambda: counted("three"))
        return [one, two, three]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    calls.clear()
    FIXED.clear()


def test_restart_from_the_second_of_three_steps_keeps_the_first(make_env: EnvFactory) -> None:
    # GIVEN an instance that ran its three steps once
    env = make_env({"three": ThreeSteps})
    inst = env.create("three", id="t")
    env.run_until_idle()
    first = inst.status()
    assert first.output == [1, 1, 1]

    # WHEN it restarts from the second step
    inst.restart(from_step={"name": "two"})
    assert inst.status().status == "queued"
    env.run_until_idle()

    # THEN step 1 kept its result (its callback was not called again); 2 and 3 ran again
    assert calls == Counter(one=1, two=2, three=2)
    status = inst.status()
    assert status.status == "complete"
    assert status.output == [1, 2, 2]
    assert [s.name for s in status.steps] == ["one", "two", "three"]
    assert status.steps[0].start == first.steps[0].start  # the kept row is the recorded one


def test_count_and_type_select_one_occurrence(make_env: EnvFactory) -> None:
    class Repeats(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            return [await step.do("tick", lambda: counted("tick")) for _ in range(3)]

    env = make_env({"r": Repeats})
    inst = env.create("r", id="r")
    env.run_until_idle()
    assert inst.status().output == [1, 2, 3]

    inst.restart(from_step={"name": "tick", "count": 3, "type": "do"})
    env.run_until_idle()

    assert inst.status().output == [1, 2, 4]  # the first two occurrences were kept
    assert calls["tick"] == 4


class SleepsBetween(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        before = await step.do("before", lambda: counted("before"))
        await step.sleep("nap", "1 hour")
        after = await step.do("after", lambda: counted("after"))
        return [before, after]


def test_restart_from_a_sleep_sleeps_again(make_env: EnvFactory) -> None:
    env = make_env({"s": SleepsBetween})
    inst = env.create("s", id="s")
    env.run_until_idle()
    assert inst.status().output == [1, 1]

    # WHEN it restarts from the sleep
    restarted_at = env.clock.time()
    inst.restart(from_step={"name": "nap", "type": "sleep"})
    env.run_once("s", "s")

    # THEN the step before it is kept, and the sleep starts over: a new hour from now
    waiting = inst.status()
    assert waiting.status == "waiting"
    assert [(s.name, str(s.status)) for s in waiting.steps] == [
        ("before", "complete"),
        ("nap", "waiting"),
    ]
    assert waiting.steps[1].wake_at == restarted_at + 3600
    env.run_until_idle()
    assert inst.status().output == [1, 2]
    assert calls == Counter(before=1, after=2)


class FailsUntilFixed(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        setup = await step.do("setup", lambda: counted("setup"))

        def charge() -> str:
            counted("charge")
            if "charge" not in FIXED:
                raise RuntimeError("card declined")
            return "charged"

        charged = await step.do("charge", {"retries": {"limit": 1, "delay": 1}}, charge)
        return [setup, charged]


def test_restart_from_the_step_an_errored_instance_failed_at(make_env: EnvFactory) -> None:
    # GIVEN an instance errored at its second step
    env = make_env({"f": FailsUntilFixed})
    inst = env.create("f", id="f")
    env.run_until_idle()
    failed = inst.status()
    assert failed.status == "errored"
    assert failed.error is not None and failed.error.message == "card declined"
    assert calls == Counter(setup=1, charge=2)

    # WHEN the cause is fixed and it restarts from the failed step
    FIXED.add("charge")
    inst.restart(from_step={"name": "charge"})
    env.run_until_idle()

    # THEN only that step ran again, with fresh attempts
    status = inst.status()
    assert status.status == "complete"
    assert status.output == [1, "charged"]
    assert status.error is None
    assert calls == Counter(setup=1, charge=3)
    assert status.steps[1].attempts == 1


def test_an_unknown_step_is_invalid_input_naming_the_recorded_steps_and_changes_nothing(
    make_env: EnvFactory,
) -> None:
    env = make_env({"three": ThreeSteps})
    inst = env.create("three", id="t")
    env.run_until_idle()
    before = env.store.get(inst.ref)
    journal = inst.journal()

    for from_step, says in [
        ({"name": "four"}, "recorded steps: 'one' (do), 'two' (do), 'three' (do)"),
        ({"name": "two", "count": 2}, "'two' (occurrence 2)"),
        ({"name": "two", "type": "sleep"}, "type sleep"),
    ]:
        with pytest.raises(InvalidInput, match="no step") as refused:
            inst.restart(from_step=from_step)
        assert says in str(refused.value)

    after = env.store.get(inst.ref)
    assert (after.status, after.version, after.generation) == (
        before.status,
        before.version,
        before.generation,
    )
    assert inst.journal() == journal
    assert env.pending_wake_ups() == []
    env.run_until_idle()
    assert calls == Counter(one=1, two=1, three=1)  # nothing ran again


@pytest.mark.parametrize(
    ("from_step", "says"),
    [
        ("two", "must be an object"),
        ({"step": "two"}, "unknown key"),
        ({"name": ""}, "non-empty string"),
        ({"name": "two", "count": 0}, "whole number"),
        ({"name": "two", "count": True}, "whole number"),
        ({"name": "two", "type": "wait"}, "do, sleep, waitForEvent"),
    ],
)
def test_a_malformed_from_step_says_what_is_wrong(
    make_env: EnvFactory, from_step: Any, says: str
) -> None:
    env = make_env({"three": ThreeSteps})
    inst = env.create("three", id="t")
    env.run_until_idle()
    with pytest.raises(InvalidInput, match=says):
        inst.restart(from_step=from_step)
    assert inst.status().status == "complete"


class WaitsForApproval(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        approval = await step.wait_for_event("approval", type="approved", timeout="1 day")
        done = await step.do("ship", lambda: counted("ship"))
        return [approval.payload, done]


def test_a_kept_wait_returns_the_event_it_received(make_env: EnvFactory) -> None:
    env = make_env({"w": WaitsForApproval})
    inst = env.create("w", id="w")
    env.run_until_idle()
    inst.send_event(type="approved", payload={"by": "ana"})
    env.run_until_idle()
    assert inst.status().output == [{"by": "ana"}, 1]

    inst.restart(from_step={"name": "ship"})
    env.run_until_idle()

    status = inst.status()
    assert status.output == [{"by": "ana"}, 2]
    assert status.steps[0].output == {"by": "ana"}


class RestartsItselfMidStep(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        one = await step.do("one", lambda: counted("one"))
        two = await step.do("two", lambda: counted("two"))

        def three() -> int:
            if counted("three") == 1:
                # restarted from "two" while this runner is still busy with "three"
                ENVS["env"].get("busy", event.instance_id).restart(from_step={"name": "two"})
            return calls["three"]

        return [one, two, await step.do("three", three)]


def test_a_runner_busy_in_the_old_generation_does_not_leak_into_the_new_one(
    make_env: EnvFactory,
) -> None:
    # GIVEN a restart from step two while a runner is in step three's callback
    env = ENVS["env"] = make_env({"busy": RestartsItselfMidStep})
    inst = env.create("busy", id="b")
    env.run_until_idle()

    # THEN the result the busy runner recorded for three belongs to the old generation: the
    # new one ran two and three again, and kept one
    status = inst.status()
    assert status.status == "complete"
    assert status.output == [1, 2, 2]
    assert calls == Counter(one=1, two=2, three=2)


def test_restart_from_a_step_of_a_running_instance_twice_in_a_row(make_env: EnvFactory) -> None:
    env = make_env({"three": ThreeSteps})
    inst = env.create("three", id="t")
    env.run_until_idle()
    inst.restart(from_step={"name": "three"})
    inst.restart(from_step={"name": "two"})  # before any runner ran the first restart
    env.run_until_idle()
    assert inst.status().output == [1, 2, 2]
    inst.restart()  # and from the top: nothing is kept
    env.run_until_idle()
    assert inst.status().output == [2, 3, 3]
