"""The full lifecycle on DynamoDB + SQS + EventBridge Scheduler (moto), through the real
RunnerFunction handler."""

from __future__ import annotations

import json
from typing import Any

from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.local.embedded import LambdaContext

from .workflows_under_test import Lifecycle


def test_create_run_sleep_schedule_fire_wait_event_complete(aws_env: Any) -> None:
    # GIVEN an instance of a workflow that charges, sleeps 1 hour and waits for approval
    env = aws_env({"lifecycle": Lifecycle})
    aws = env.aws
    start = env.clock.time()
    inst = env.create("lifecycle", id="order-1", params={"amount": 10})
    ref = InstanceRef("lifecycle", "order-1")

    # WHEN the runner handles the first work: invoked directly, no work message
    assert aws.receive() == []
    assert aws.invoke_wake_up(aws.take_invoke()) is None

    # THEN the step is recorded, the instance waits, and a one-time schedule exists
    assert inst.status().status == "waiting"
    [schedule] = aws.schedules()
    assert schedule.at == start + 3600
    detail = aws.scheduler.get_schedule(Name=schedule.name, GroupName=aws.settings.schedule_group)
    assert detail["ScheduleExpression"] == "at(2025-01-01T01:00:00)"
    assert detail["ScheduleExpressionTimezone"] == "UTC"
    assert detail["ActionAfterCompletion"] == "DELETE"
    # its target is the runner itself (no SQS request on the way), retried by Scheduler for a
    # day and dead-lettered to the work queue, where it becomes an ordinary work message
    target = detail["Target"]
    assert target["Arn"] == LambdaContext().invoked_function_arn
    assert target["RoleArn"] == aws.settings.scheduler_role_arn
    assert target["RetryPolicy"] == {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185}
    assert target["DeadLetterConfig"] == {"Arn": aws.settings.work_queue_arn}
    assert json.loads(target["Input"]) == {
        "workflow": "lifecycle",
        "id": "order-1",
        "reason": "sleep",
        "wake": {
            "execution": "<aws.scheduler.execution-id>",
            "attempt": "<aws.scheduler.attempt-number>",
        },
    }
    assert aws.receive() == []  # nothing else to do until the schedule fires

    # WHEN the schedule fires (moto never fires it: the runner is called with its input)
    env.clock.set(schedule.at)
    assert aws.fire_due_schedules() == 1
    assert aws.receive() == []  # it invoked the runner: no work message

    # THEN the instance waits for the event (a timeout wake-up is scheduled a day later)
    assert inst.status().status == "waiting"
    assert [s.reason for s in aws.schedules()] == ["event"]

    # WHEN the event is sent
    inst.send_event(type="approved", payload={"user": "ana"})
    assert aws.receive() == []  # the event's wake-up invokes the runner directly
    assert aws.invoke_wake_up(aws.take_invoke()) is None

    # THEN the instance completes with the event's payload, and its timeline shows each step
    status = inst.status()
    assert status.status == "complete"
    assert status.output == {"receipt": {"charged": 10}, "by": "ana"}
    assert [(s.name, s.type, s.status) for s in status.steps] == [
        ("charge", "do", "complete"),
        ("cool down", "sleep", "complete"),
        ("approval", "waitForEvent", "complete"),
    ]
    assert env.store.get(ref).lease_owner is None
    # and the event-wait's timeout schedule was deleted: it would have fired for nothing
    assert aws.schedules() == []


def test_ttl_is_set_when_an_instance_finishes(aws_env: Any) -> None:
    env = aws_env({"lifecycle": Lifecycle})
    inst = env.create("lifecycle", id="t", params={"amount": 1})
    env.run_until_idle()
    assert env.store.get(InstanceRef("lifecycle", "t")).expires_at is None  # still waiting
    inst.send_event(type="approved", payload={"user": "x"})
    env.run_until_idle()
    record = env.store.get(InstanceRef("lifecycle", "t"))
    assert record.status == "complete"
    assert record.finished_at is not None
    assert record.expires_at == record.finished_at + 30 * 86_400
    item = env.aws.session.client("dynamodb").get_item(
        TableName=env.aws.settings.table_name,
        Key={"pk": {"S": "I#lifecycle#t"}, "sk": {"S": "I"}},
    )["Item"]
    assert float(item["expires_at"]["N"]) == record.expires_at  # the table's TTL attribute


def test_terminate_cancels_the_pending_schedule(aws_env: Any) -> None:
    env = aws_env({"lifecycle": Lifecycle})
    inst = env.create("lifecycle", id="c", params={"amount": 1})
    env.run_once("lifecycle", "c")
    env.run_until_idle()
    assert env.aws.schedules()
    inst.terminate()
    assert env.aws.schedules() == []
    assert inst.status().status == "terminated"
