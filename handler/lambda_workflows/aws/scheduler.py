"""Wake-ups at a given time: SQS DelaySeconds up to 15 minutes, EventBridge Scheduler beyond.

Scheduler wake-ups are one-time ``at(...)`` schedules in the stack's schedule group, with
``ActionAfterCompletion=DELETE`` and the work queue as target (the message is the same as any
work message). Schedule names derive from the instance and the time, so scheduling the same
wake-up twice is a no-op (ConflictException), and ``cancel`` finds an instance's schedules by
name prefix.
"""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from lambda_workflows.engine.clock import Clock, to_datetime
from lambda_workflows.engine.errors import SuspendReason
from lambda_workflows.engine.model import InstanceRef

from .errors import error_code, translate
from .sqs import MAX_DELAY, SqsWorkQueue, work_message

if TYPE_CHECKING:
    from mypy_boto3_scheduler import EventBridgeSchedulerClient

_SERVICE = "EventBridge Scheduler"


def schedule_prefix(ref: InstanceRef) -> str:
    """The name prefix shared by every schedule of one instance (≤ 64 chars in all)."""
    digest = hashlib.sha256(f"{ref.workflow}/{ref.id}".encode()).hexdigest()[:24]
    return f"wf-{digest}-"


def schedule_name(ref: InstanceRef, at: float) -> str:
    """The schedule name of the wake-up of ``ref`` at ``at``."""
    return f"{schedule_prefix(ref)}{math.ceil(at)}"


def at_expression(at: float) -> str:
    """``at(yyyy-mm-ddThh:mm:ss)`` in UTC, rounded up so a wake-up is never early."""
    return f"at({to_datetime(math.ceil(at)).strftime('%Y-%m-%dT%H:%M:%S')})"


class SchedulerWakeUps:
    """:class:`~lambda_workflows.engine.ports.WakeUpScheduler` on SQS delays and EventBridge
    Scheduler.

    Args:
        client: a boto3 ``scheduler`` client.
        group: the schedule group name.
        queue: the work queue (target of schedules, and used directly for short delays).
        queue_arn: the work queue's ARN (the schedules' target).
        role_arn: the role EventBridge Scheduler assumes to send to the queue.
        clock: the time source.
        sqs_max_delay: delays up to this many seconds use SQS DelaySeconds (≤ 900).
    """

    def __init__(
        self,
        client: EventBridgeSchedulerClient,
        group: str,
        queue: SqsWorkQueue,
        queue_arn: str,
        role_arn: str,
        clock: Clock,
        sqs_max_delay: float = MAX_DELAY,
    ) -> None:
        self.client = client
        self.group = group
        self.queue = queue
        self.queue_arn = queue_arn
        self.role_arn = role_arn
        self.clock = clock
        self.sqs_max_delay = min(sqs_max_delay, MAX_DELAY)

    def schedule(self, ref: InstanceRef, at: float, reason: SuspendReason) -> None:
        delay = at - self.clock.time()
        if delay <= self.sqs_max_delay:
            self.queue.send(ref, delay)
            return
        try:
            self.client.create_schedule(
                Name=schedule_name(ref, at),
                GroupName=self.group,
                ScheduleExpression=at_expression(at),
                ScheduleExpressionTimezone="UTC",
                FlexibleTimeWindow={"Mode": "OFF"},
                ActionAfterCompletion="DELETE",
                Target={
                    "Arn": self.queue_arn,
                    "RoleArn": self.role_arn,
                    "Input": work_message(ref, reason),
                },
            )
        except ClientError as exc:
            if error_code(exc) == "ConflictException":
                return  # the same wake-up is already scheduled
            raise translate(exc, _SERVICE, f"CreateSchedule for {ref}") from exc
        except BotoCoreError as exc:
            raise translate(exc, _SERVICE, f"CreateSchedule for {ref}") from exc

    def cancel(self, ref: InstanceRef) -> None:
        prefix = schedule_prefix(ref)
        try:
            pages = self.client.get_paginator("list_schedules").paginate(
                GroupName=self.group, NamePrefix=prefix
            )
            names = [s["Name"] for page in pages for s in page.get("Schedules", [])]
        except (ClientError, BotoCoreError) as exc:
            raise translate(exc, _SERVICE, f"ListSchedules of {ref}") from exc
        for name in names:
            try:
                self.client.delete_schedule(Name=name, GroupName=self.group)
            except ClientError as exc:
                if error_code(exc) != "ResourceNotFoundException":  # else: fired meanwhile
                    raise translate(exc, _SERVICE, f"DeleteSchedule {name}") from exc
            except BotoCoreError as exc:
                raise translate(exc, _SERVICE, f"DeleteSchedule {name}") from exc
