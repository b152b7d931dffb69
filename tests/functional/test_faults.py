"""An AWS error is never a step failure: throttled, unreachable and ambiguous calls, dropped
messages and schedules, and runners that fail — each recovered without losing or repeating a
recorded result. Faults are injected into the real adapters through botocore's event hooks."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.instance_listing import LEGACY_INDEX
from lambda_workflows.aws.tombstones import DELETED_SHARDS
from lambda_workflows.engine.instances.recovery import DUE_SHARDS, SWEEP_MARGIN
from lambda_workflows.engine.model import EntryKind, InstanceRef
from lambda_workflows.entrypoints import sweep
from tests.aws_faults import Faults

from .workflows_under_test import ThreeSteps, calls, count


class Guarded(WorkflowEntrypoint):
    """Three steps, each behind an ``except Exception`` fallback that would hide a failure."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        key = event.instance_id
        seen = []
        for name in ("a", "b", "c"):
            try:
                seen.append(
                    await step.do(name, lambda name=name: f"{name} ok {count(f'{key} {name}')}")
                )
            except Exception as exc:
                seen.append(f"caught {type(exc).__name__}")
        return seen


def journal_put_of(step_name: str) -> Any:
    def match(params: dict[str, Any]) -> bool:
        sk = params.get("Item", {}).get("sk", {}).get("S", "")
        return sk.startswith("J#") and sk.split("#", 2)[2].startswith(f"{step_name}\x1f")

    return match


def steps_recorded(inst: Any) -> list[str]:
    return [e.name for e in inst.journal() if e.kind is EntryKind.STEP]


@pytest.mark.parametrize("kind", ["throttle", "unreachable", "timeout"])
def test_a_failed_journal_write_never_reaches_run_and_the_step_is_recorded_once(
    aws_env: Any, kind: str
) -> None:
    # GIVEN the journal write of step "b" fails once (for "timeout": after it happened)
    calls.clear()
    env = aws_env({"guarded": Guarded})
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.PutItem", kind, match=journal_put_of("b"))
    inst = env.create("guarded", id=f"w-{kind}")
    # WHEN it runs to the end
    env.run_until_idle()
    # THEN run() never saw the AWS error: no fallback ran, the instance completed
    assert faults.fired("dynamodb.PutItem") == 1
    status = inst.status()
    assert status.status == "complete", status.error
    assert all(not value.startswith("caught") for value in status.output), status.output
    assert steps_recorded(inst) == ["a", "b", "c"]
    # a write that happened (timeout) is read back, not redone; one that did not is redone
    assert calls[f"w-{kind} b"] == (1 if kind == "timeout" else 2)
    assert calls[f"w-{kind} a"] == 1


def test_a_throttled_lease_renewal_is_not_a_step_failure(aws_env: Any) -> None:
    env = aws_env({"guarded": Guarded})
    faults = Faults.on(env.aws.runtime)

    def renewal(params: dict[str, Any]) -> bool:
        return str(params.get("UpdateExpression", "")).startswith("SET lease_expires_at")

    faults.arm("dynamodb.UpdateItem", "throttle", match=renewal)
    inst = env.create("guarded", id="renew")
    env.run_until_idle()
    assert faults.fired("dynamodb.UpdateItem") == 1
    assert inst.status().status == "complete"
    assert steps_recorded(inst) == ["a", "b", "c"]


def test_a_runner_that_fails_gives_its_lease_back_and_its_message_back(aws_env: Any) -> None:
    # GIVEN step "b"'s journal write is throttled
    env = aws_env({"guarded": Guarded})
    env.aws.queue_only()  # the work message's path
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.PutItem", "throttle", match=journal_put_of("b"))
    inst = env.create("guarded", id="lease")
    ref = InstanceRef("guarded", "lease")
    # WHEN the runner handles the message
    messages = env.aws.receive(1)
    response = env.aws.invoke_runner(messages)
    # THEN the message is reported failed, the lease is free and the instance due now
    assert response["batchItemFailures"] == [{"itemIdentifier": messages[0]["MessageId"]}]
    record = env.store.get(ref)
    assert record.status == "running"
    assert record.lease_owner is None
    assert record.due_at == env.clock.time()
    # AND the redelivered message finishes it without waiting for any lease to expire
    env.run_until_idle()
    assert inst.status().status == "complete"
    assert env.clock.time() == record.due_at


def test_a_redelivered_message_takes_back_a_lease_it_could_not_release(aws_env: Any) -> None:
    # GIVEN the journal write fails AND giving the lease back fails too
    env = aws_env({"guarded": Guarded})
    env.aws.queue_only()  # the work message's path
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.PutItem", "throttle", match=journal_put_of("b"))

    def release(params: dict[str, Any]) -> bool:
        return str(params.get("UpdateExpression", "")).startswith("REMOVE lease_owner")

    faults.arm("dynamodb.UpdateItem", "unreachable", match=release)
    inst = env.create("guarded", id="stuck")
    ref = InstanceRef("guarded", "stuck")
    messages = env.aws.receive(1)
    env.aws.invoke_runner(messages)
    assert env.store.get(ref).lease_owner == messages[0]["MessageId"]
    # WHEN the same message comes back (its visibility ran out) while the lease is still live
    env.run_until_idle()
    # THEN it takes back its own lease and completes the instance at once
    assert inst.status().status == "complete"
    assert env.clock.time() < env.store.get(ref).created_at + 60


def run_sweep(env: Any) -> int:
    return int(sweep.make_handler(env.aws.runtime)({}, None)["requeued"])


class ShortNap(WorkflowEntrypoint):
    """Sleeps ten minutes (an SQS delayed message on AWS), then finishes."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", "10 minutes")
        return await step.do("after", lambda: "done")


@pytest.mark.parametrize("dropped", ["scheduler.CreateSchedule", "sqs.SendMessage"])
def test_a_sleeping_instance_whose_wake_up_was_lost_is_found_by_the_sweep(
    aws_env: Any, dropped: str
) -> None:
    # GIVEN a sleeping instance's wake-up never reached AWS (the call "succeeded"): an hour's
    # schedule, or ten minutes' delayed message
    env = aws_env({"nap": ShortNap if dropped == "sqs.SendMessage" else ThreeSteps})
    faults = Faults.on(env.aws.runtime)
    if dropped == "sqs.SendMessage":
        env.aws.runtime.wakeups.sqs_max_delay = 900.0
    faults.arm(dropped, "drop", match=lambda p: int(p.get("DelaySeconds", 1)) > 0)
    inst = env.create("nap", id="nap-" + dropped.split(".")[1])
    env.run_until_idle()
    assert faults.fired(dropped) == 1
    status = inst.status()
    assert status.status == "waiting"
    assert env.pending_wake_ups() == []
    # WHEN the sweep runs once the wake-up is overdue by its margin
    env.clock.set(status.wake_at + SWEEP_MARGIN + 1)
    queries = faults.count("dynamodb.Query")
    assert run_sweep(env) == 1
    # THEN it asked the due index, shard by shard (no scan): for instances, for deleted
    # instances still owed a cleanup (lambda_workflows.aws.deletes), and for the reaper's
    # parked partitions (one, lambda_workflows.aws.reaper); the instance completes. The one
    # Scan allowed reads the sparse legacy listing index, for the items an upgrade still has to
    # move (lambda_workflows.aws.instance_listing): never the table
    assert faults.count("dynamodb.Scan", match=lambda p: "IndexName" not in p) == 0
    legacy = faults.count("dynamodb.Scan", match=lambda p: p.get("IndexName") == LEGACY_INDEX)
    assert legacy == faults.count("dynamodb.Scan") <= 1
    assert faults.count("dynamodb.Query") - queries == DUE_SHARDS + DELETED_SHARDS + 1
    env.run_until_idle()
    assert inst.status().status == "complete"


def test_a_sweep_before_the_wake_up_is_due_finds_nothing(aws_env: Any) -> None:
    env = aws_env({"three": ThreeSteps})
    inst = env.create("three", id="early")
    assert env.aws.invoke_wake_up(env.aws.take_invoke()) is None
    assert inst.status().status == "waiting"
    env.clock.advance(3600 + SWEEP_MARGIN - 1)  # the wake-up is due, but not overdue yet
    assert run_sweep(env) == 0


class RetryLater(WorkflowEntrypoint):
    """A step that fails once, then waits an hour before its retry."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def flaky() -> str:
            if count(f"{event.instance_id} flaky") == 1:
                raise RuntimeError("first attempt fails")
            return "second attempt"

        return await step.do("flaky", {"retries": {"limit": 2, "delay": "1 hour"}}, flaky)


def test_a_retry_whose_schedule_was_dropped_is_found_by_the_sweep(aws_env: Any) -> None:
    calls.clear()
    env = aws_env({"retry": RetryLater})
    faults = Faults.on(env.aws.runtime)
    faults.arm("scheduler.CreateSchedule", "drop")
    inst = env.create("retry", id="r")
    env.run_until_idle()
    assert inst.status().status == "waiting"
    env.clock.advance(3600 + SWEEP_MARGIN + 1)
    assert run_sweep(env) == 1
    env.run_until_idle()
    assert inst.status().status == "complete"
    assert inst.status().output == "second attempt"


def test_a_pause_whose_runner_died_completes_after_the_lease_expires(aws_env: Any) -> None:
    # GIVEN a runner holds the lease and dies; the instance is asked to pause meanwhile
    env = aws_env({"three": ThreeSteps})
    inst = env.create("three", id="wfp")
    ref = InstanceRef("three", "wfp")
    env.aws.receive()
    now = env.clock.time()
    assert env.store.acquire_lease(ref, "dead-runner", now, now + 960) is not None
    inst.pause()
    assert inst.status().status == "waitingForPause"
    # WHEN the sweep runs after the dead runner's lease expired
    env.clock.advance(960 + SWEEP_MARGIN + 1)
    assert run_sweep(env) == 1
    env.run_until_idle()
    # THEN the pause takes effect, and the paused instance is no longer swept
    assert inst.status().status == "paused"
    assert env.store.get(ref).due_at is None
    env.clock.advance(3600)
    assert run_sweep(env) == 0


class HugeError(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def boom() -> None:
            raise ValueError("x" * 2_000_000)

        return await step.do("boom", {"retries": {"limit": 0}}, boom)


def test_a_huge_error_message_is_cut_so_its_journal_write_cannot_fail(aws_env: Any) -> None:
    # a 2 MB message would make the journal item larger than DynamoDB's 400 KB item limit
    env = aws_env({"huge": HugeError})
    inst = env.create("huge", id="h")
    env.run_until_idle()
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None
    assert status.error.name == "ValueError"
    assert len(status.error.message) < 10_000
    assert status.error.message.endswith("more characters)")
