"""No lost work: duplicates, concurrent runners, crashes at every I/O boundary, events that
arrive mid-run, and a first message that was never sent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.model import EntryKind, InstanceRef
from lambda_workflows.entrypoints import sweep
from lambda_workflows.testing import Crash

from .workflows_under_test import ThreeSteps, calls, count


def fault_free_output(aws_env: Any) -> Any:
    env = aws_env({"three": ThreeSteps})
    inst = env.create("three", id="reference")
    env.run_until_idle()
    return inst.status().output


def test_a_message_delivered_twice_records_each_step_once(aws_env: Any) -> None:
    calls.clear()
    env = aws_env({"three": ThreeSteps})
    inst = env.create("three", id="dup")
    env.aws.send(InstanceRef("three", "dup"))  # a duplicate of the create message
    env.run_until_idle()
    status = inst.status()
    assert status.status == "complete"
    assert status.output == ["one done", "two done", "three done"]
    assert [calls[f"dup {name}"] for name in ("one", "two", "three")] == [1, 1, 1]
    step_entries = [e for e in inst.journal() if e.kind is EntryKind.STEP]
    assert [e.name for e in step_entries] == ["one", "two", "three"]


class SlowFirstStep(WorkflowEntrypoint):
    """Step "one" lets a second runner in (lease taken over) while it is still running."""

    second_runner: Callable[[], None] | None = None

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def one() -> str:
            n = count("race one")
            if n == 1 and SlowFirstStep.second_runner is not None:
                hook, SlowFirstStep.second_runner = SlowFirstStep.second_runner, None
                hook()  # runner B runs the whole instance meanwhile
            return f"run {n}"

        first = await step.do("one", one)
        second = await step.do("two", lambda: count("race two"))
        return [first, second]


def test_two_runners_at_once_first_writer_wins_and_the_instance_completes_once(
    aws_env: Any,
) -> None:
    # GIVEN runner A is inside step "one" when its lease expires and runner B takes over
    calls.clear()
    env = aws_env({"race": SlowFirstStep})
    inst = env.create("race", id="r")
    ref = InstanceRef("race", "r")
    env.aws.receive()  # the create message: we drive both runners by hand
    finished: list[Any] = []

    def runner_b() -> None:
        env.clock.advance(env.runner.settings.lease_seconds + 1)  # A's lease expired
        finished.append(asyncio.run(env.runner.advance(ref)))

    SlowFirstStep.second_runner = runner_b
    # WHEN runner A finishes its callback after B completed the instance
    result_a = asyncio.run(env.runner.advance(ref))
    # THEN B's results are the recorded ones, A adopted them, and nothing was recorded twice
    status = inst.status()
    assert status.status == "complete"
    assert status.output == ["run 2", 1]  # B's "one" (run 2) won: it was written first
    assert finished[0].status == "complete"
    assert result_a.status is None  # A lost its lease and wrote no ending
    assert [e.name for e in inst.journal() if e.kind is EntryKind.STEP] == ["one", "two"]
    assert calls["race two"] == 1


BOUNDARIES = [
    # (what dies, botocore event to crash on, which occurrence)
    ("after a step callback ran, before its write", "before-call.dynamodb.PutItem", 3),
    ("after a step's write", "after-call.dynamodb.PutItem", 2),
    ("after the schedule, before the status update", "after-call.scheduler.CreateSchedule", 1),
    ("after the status update and lease release", "after-call.dynamodb.UpdateItem", 2),
    ("after taking the lease", "after-call.dynamodb.UpdateItem", 1),
    ("after loading the journal", "after-call.dynamodb.Query", 1),
]


@pytest.mark.parametrize(("label", "event_name", "nth"), BOUNDARIES, ids=[b[0] for b in BOUNDARIES])
def test_a_runner_killed_at_an_io_boundary_still_completes_with_the_same_output(
    aws_env: Any, label: str, event_name: str, nth: int
) -> None:
    expected = fault_free_output(aws_env)
    env = aws_env({"three": ThreeSteps})
    seen = 0

    def die(**_: Any) -> None:
        nonlocal seen
        seen += 1
        if seen == nth:
            raise Crash(label)

    service = event_name.split(".")[1]
    client = {
        "dynamodb": env.store.client,
        "scheduler": env.aws.runtime.wakeups.client,
    }[service]
    client.meta.events.register(event_name, die)
    inst = env.create("three", id="crashy")
    env.run_until_idle()
    assert env.crashes == 1, f"the fault at '{label}' was never hit"
    assert inst.status().status == "complete"
    assert inst.status().output == expected
    # one recorded result per step, whatever was re-run
    assert [e.name for e in inst.journal() if e.kind is EntryKind.STEP] == ["one", "two", "three"]


class EventMidRun(WorkflowEntrypoint):
    """Sends itself an event while a step runs (the runner holds the lease), then waits."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def send() -> str:
            self.env.workflow("mid").get(event.instance_id).send_event(
                type="go", payload={"sent": "mid-run"}
            )
            return "sent"

        await step.do("send to myself", send)
        got = await step.wait_for_event("receive", type="go", timeout="1 hour")
        return got.payload


def test_an_event_sent_while_the_runner_is_active_is_not_missed(aws_env: Any) -> None:
    env = aws_env({"mid": EventMidRun})
    inst = env.create("mid", id="m")
    env.run_until_idle()  # no clock jump needed: the event is found on the spot
    assert inst.status().status == "complete"
    assert inst.status().output == {"sent": "mid-run"}


def test_an_instance_whose_first_message_was_lost_is_run_by_the_recovery_sweep(
    aws_env: Any,
) -> None:
    # GIVEN an instance was written but its first work message never reached the queue
    env = aws_env({"three": ThreeSteps})
    inst = env.create("three", id="lost")
    assert env.aws.take_invoke() is not None  # take the direct invoke away: it is lost
    env.run_until_idle()
    assert inst.status().status == "queued"
    # WHEN the scheduled sweep runs after the grace period
    env.clock.advance(sweep.GRACE_SECONDS + 1)
    assert sweep.make_handler(env.aws.runtime)({}, None) == {"requeued": 1}
    env.run_until_idle()
    # THEN the instance ran to completion
    assert inst.status().status == "complete"


def test_a_runner_that_died_is_recovered_once_its_lease_expires(aws_env: Any) -> None:
    env = aws_env({"three": ThreeSteps})
    inst = env.create("three", id="dead")
    ref = InstanceRef("three", "dead")
    env.aws.receive()
    # a runner took the lease and died without a trace (no message left to redeliver)
    now = env.clock.time()
    assert env.store.acquire_lease(ref, "dead-runner", now, now + 960) is not None
    env.clock.advance(sweep.GRACE_SECONDS + 1)
    sweep_handler = sweep.make_handler(env.aws.runtime)
    assert sweep_handler({}, None) == {"requeued": 0}  # the lease is still live
    env.clock.advance(960)
    assert sweep_handler({}, None) == {"requeued": 1}
    env.run_until_idle()
    assert inst.status().status == "complete"
