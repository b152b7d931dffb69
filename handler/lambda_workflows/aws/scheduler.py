"""Wake-ups at a given time: SQS DelaySeconds up to 15 minutes, EventBridge Scheduler beyond.

Scheduler wake-ups are one-time ``at(...)`` schedules in the stack's schedule group, with
``ActionAfterCompletion=DELETE``. Their target is the RunnerFunction itself (asynchronous
invoke, see :mod:`lambda_workflows.aws.wake_events`): a wake-up costs the Scheduler invocation
and the Lambda request, no SQS request. Nothing is lost on the way: Scheduler retries a failed
invoke for up to a day, then sends the wake-up to its dead-letter queue, which is the work queue
(an ordinary work message); and the due index (``engine.recovery``) remains the last net.
Until the runner knows its own ARN (``runner_arn``, from its first invocation's context), and in
processes that never ran one, schedules target the work queue as before the upgrade.

Schedule names derive from the instance and the time, so scheduling the same wake-up twice is a
no-op (ConflictException), ``unschedule`` deletes one by name (an event-wait's timeout once the
event came first) and ``cancel`` finds an instance's schedules by name prefix.
"""

from __future__ import annotations

import hashlib
import logging
import math
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from lambda_workflows.engine.clock import Clock, to_datetime
from lambda_workflows.engine.errors import SuspendReason
from lambda_workflows.engine.model import InstanceRef

from .errors import error_code, translate
from .sqs import MAX_DELAY, SqsWorkQueue, work_message
from .wake_events import wake_input

if TYPE_CHECKING:
    from mypy_boto3_scheduler import EventBridgeSchedulerClient

_SERVICE = "EventBridge Scheduler"
RETRY_POLICY = {"MaximumEventAgeInSeconds": 86_400, "MaximumRetryAttempts": 185}
"""Scheduler's longest: retry a failed invoke for a day before the dead-letter queue."""
log = logging.getLogger("lambda_workflows.scheduler")


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
    """:class:`~lambda_workflows.engine.instances.ports.WakeUpScheduler` on SQS delays and
    EventBridge
    Scheduler.

    Args:
        client: a boto3 ``scheduler`` client.
        group: the schedule group name.
        queue: the work queue (target of schedules, and used directly for short delays).
        queue_arn: the work queue's ARN (the schedules' target).
        role_arn: the role EventBridge Scheduler assumes to send to the queue.
        clock: the time source.
        sqs_max_delay: delays up to this many seconds use SQS DelaySeconds (≤ 900).
        runner_arn: the RunnerFunction's ARN, the target of new schedules (None: the queue).
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
        runner_arn: str | None = None,
    ) -> None:
        self.client = client
        self.group = group
        self.queue = queue
        self.queue_arn = queue_arn
        self.role_arn = role_arn
        self.clock = clock
        self.sqs_max_delay = min(sqs_max_delay, MAX_DELAY)
        self.runner_arn = runner_arn

    def target(self, ref: InstanceRef, reason: SuspendReason) -> dict[str, object]:
        """The target of a new wake-up schedule: the runner (with retries and the work queue
        as dead-letter queue), or the work queue while the runner's ARN is unknown."""
        if self.runner_arn is None:
            return {
                "Arn": self.queue_arn,
                "RoleArn": self.role_arn,
                "Input": work_message(ref, reason),
            }
        return {
            "Arn": self.runner_arn,
            "RoleArn": self.role_arn,
            "Input": wake_input(ref, reason),
            "RetryPolicy": RETRY_POLICY,
            "DeadLetterConfig": {"Arn": self.queue_arn},
        }

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
                Target=self.target(ref, reason),  # type: ignore[arg-type]
            )
        except ClientError as exc:
            if error_code(exc) == "ConflictException":
                return  # the same wake-up is already scheduled
            raise translate(exc, _SERVICE, f"CreateSchedule for {ref}") from exc
        except BotoCoreError as exc:
            raise translate(exc, _SERVICE, f"CreateSchedule for {ref}") from exc

    def unschedule(self, ref: InstanceRef, at: float) -> None:
        """Delete the wake-up of ``ref`` at ``at`` if it is a pending schedule (best effort:
        a delete that fails leaves a wake-up the runner finds nothing to do for)."""
        name = schedule_name(ref, at)
        try:
            self.client.delete_schedule(Name=name, GroupName=self.group)
        except ClientError as exc:
            if error_code(exc) != "ResourceNotFoundException":  # else: fired, or never one
                log.warning("could not delete the wake-up %s of %s: %s", name, ref, exc)
        except BotoCoreError as exc:
            log.warning("could not delete the wake-up %s of %s: %s", name, ref, exc)

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
