"""Wake-up schedules invoke the RunnerFunction directly (moto): the direct event, its retries
and dead letters through the work queue, schedules made before the upgrade, and the event-wait
timeout deleted once the event came first."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lambda_workflows.aws.wake_events import LeaseHeldByThisWakeUp
from lambda_workflows.engine.errors import InfrastructureError, SuspendReason
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.local.embedded import LambdaContext, invocation_record, scheduler_input
from tests.aws_faults import Faults

from .workflows_under_test import Lifecycle

REF = InstanceRef("lifecycle", "order-1")


def sleeping(aws_env: Any) -> Any:
    """An env whose instance ran its first step and sleeps an hour on a Lambda schedule."""
    env = aws_env({"lifecycle": Lifecycle})
    env.create("lifecycle", id=REF.id, params={"amount": 10})
    assert env.aws.invoke_wake_up(env.aws.take_invoke()) is None  # created: invoked directly
    assert env.aws.receive() == []
    return env


def test_a_due_wake_up_invokes_the_runner_with_no_work_message(aws_env: Any) -> None:
    # GIVEN a sleeping instance whose wake-up targets the runner
    env = sleeping(aws_env)
    [schedule] = env.aws.schedules()
    assert schedule.invokes_lambda
    # WHEN the schedule fires: the runner's handler gets the input, attributes filled in
    env.clock.set(schedule.at)
    payload = scheduler_input(schedule.body, attempt=1)
    env.aws.scheduler.delete_schedule(Name=schedule.name, GroupName=env.aws.settings.schedule_group)
    answer = env.aws._runner_handler(payload, LambdaContext())
    # THEN it advanced the instance to its event wait, and no SQS message was involved
    assert answer == {"status": "waiting"}
    assert env.aws.receive() == []
    assert [s.reason for s in env.aws.schedules()] == ["event"]


def test_a_retry_of_a_wake_up_that_died_holding_the_lease_comes_back_through_the_queue(
    aws_env: Any,
) -> None:
    # GIVEN a wake-up whose first invocation died holding the lease (as its delivery)
    env = sleeping(aws_env)
    [schedule] = env.aws.schedules()
    env.clock.set(schedule.at)
    env.aws.scheduler.delete_schedule(Name=schedule.name, GroupName=env.aws.settings.schedule_group)
    payload = scheduler_input(schedule.body, attempt=1)
    owner = f"wake:{payload['wake']['execution']}"
    now = env.clock.time()
    assert env.store.acquire_lease(REF, owner, now, now + 960, delivery=1000) is not None
    # WHEN Lambda retries the same event: it is turned away, and fails so as to be retried
    with pytest.raises(LeaseHeldByThisWakeUp):
        env.aws._runner_handler(payload, LambdaContext())
    # WHEN its retries are spent, Lambda's record reaches the work queue (OnFailure)
    env.aws.sqs.send_message(
        QueueUrl=env.aws.settings.work_queue_url,
        MessageBody=invocation_record(payload, LambdaContext().invoked_function_arn, "Crash"),
    )
    [message] = env.aws.receive()
    env.aws.invoke_runner([message])
    # THEN that later delivery took the lease back and advanced the instance, long before the
    # dead lease would have expired
    record = env.store.get(REF)
    assert record.status.value == "waiting" and record.lease_owner is None
    assert [s.reason for s in env.aws.schedules()] == ["event"]


def test_a_wake_up_failing_on_a_throttled_scheduler_goes_to_the_queue(aws_env: Any) -> None:
    # GIVEN a due wake-up, and CreateSchedule throttled (the event wait's timeout)
    env = sleeping(aws_env)
    faults = Faults.on(env.aws.runtime)
    faults.arm("scheduler.CreateSchedule", "throttle")
    [schedule] = env.aws.schedules()
    env.clock.set(schedule.at)
    # WHEN it fires: the invocation fails (InfrastructureError), so its record goes to the queue
    died = env.aws.fire(schedule)
    assert isinstance(died, InfrastructureError)
    assert faults.fired("scheduler.CreateSchedule") == 1
    [message] = env.aws.receive()
    assert "requestPayload" in json.loads(message["Body"])
    # THEN the queued record advances it (the lease was given back after the failure)
    env.aws.invoke_runner([message])
    assert env.store.get(REF).status.value == "waiting"
    assert [s.reason for s in env.aws.schedules()] == ["event"]


def test_a_schedule_made_before_the_upgrade_still_sends_to_the_queue(aws_env: Any) -> None:
    # GIVEN a wake-up scheduled as before the upgrade: its target the work queue
    env = sleeping(aws_env)
    [schedule] = env.aws.schedules()
    wakeups = env.aws.runtime.wakeups
    wakeups.cancel(REF)
    arn, wakeups.runner_arn = wakeups.runner_arn, None
    wakeups.schedule(REF, schedule.at, SuspendReason.SLEEP)
    wakeups.runner_arn = arn
    [old] = env.aws.schedules()
    assert not old.invokes_lambda
    # WHEN it fires: a work message, which the runner handles as any other
    env.clock.set(old.at)
    assert env.aws.fire_due_schedules() == 1
    [message] = env.aws.receive()
    assert json.loads(message["Body"]) == {
        "workflow": "lifecycle",
        "id": "order-1",
        "reason": "sleep",
    }
    env.aws.invoke_runner([message])
    # THEN the instance woke; its next wake-up targets the runner
    assert env.store.get(REF).status.value == "waiting"
    [timeout] = env.aws.schedules()
    assert timeout.reason == "event" and timeout.invokes_lambda


def test_the_event_wait_timeout_is_deleted_when_the_event_comes_first(aws_env: Any) -> None:
    # GIVEN an instance waiting for an event, its timeout a pending schedule
    env = aws_env({"lifecycle": Lifecycle})
    inst = env.create("lifecycle", id=REF.id, params={"amount": 10})
    env.run_until_idle()
    env.clock.advance(3600)
    env.run_until_idle()
    assert [s.reason for s in env.aws.schedules()] == ["event"]
    faults = Faults.on(env.aws.runtime)
    # WHEN the event comes
    inst.send_event(type="approved", payload={"user": "ana"})
    env.run_until_idle()
    # THEN the instance completes, and the timeout's schedule is gone: one DeleteSchedule
    assert inst.status().status == "complete"
    assert faults.count("scheduler.DeleteSchedule") == 1
    assert env.aws.schedules() == []


def test_a_failed_delete_of_the_timeout_leaves_a_harmless_wake_up(aws_env: Any) -> None:
    # GIVEN an instance waiting for an event, and DeleteSchedule throttled
    env = aws_env({"lifecycle": Lifecycle})
    inst = env.create("lifecycle", id=REF.id, params={"amount": 10})
    env.run_until_idle()
    env.clock.advance(3600)
    env.run_until_idle()
    faults = Faults.on(env.aws.runtime)
    faults.arm("scheduler.DeleteSchedule", "throttle")
    # WHEN the event comes: the instance still completes (the delete is best effort)
    inst.send_event(type="approved", payload={"user": "ana"})
    env.run_until_idle()
    assert faults.fired("scheduler.DeleteSchedule") == 1
    status = inst.status()
    assert status.status == "complete"
    [left] = env.aws.schedules()
    # THEN the schedule left behind fires a day on, and the runner finds nothing to do
    env.clock.set(left.at)
    env.run_until_idle()
    assert env.aws.schedules() == []
    after = inst.status()
    assert after.status == "complete" and after.output == status.output
