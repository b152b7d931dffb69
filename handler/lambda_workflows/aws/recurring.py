"""Workflows' recurring schedules as EventBridge Scheduler schedules, reconciled by the sweep.

Each ``schedules`` entry of a registered workflow (its newest version: see
:mod:`lambda_workflows.engine.instances.schedules`) is one recurring schedule in the stack's
schedule group, whose target is the **trigger queue** with the input ``{"workflow": name,
"scheduled_time": "<aws.scheduler.scheduled-time>"}``: Scheduler puts the firing's scheduled time
in, and TriggerFunction creates the instance ``<name>-<UTC time>``
(:func:`~lambda_workflows.engine.instances.schedules.firing_id`) with a conditional put, so a firing
delivered twice creates one instance. A firing that never arrives is started by the sweep
(:mod:`lambda_workflows.engine.instances.firing_recovery`).

**Names.** ``wfcron-<workflow>-<digest>``, the digest covering everything the schedule says
(workflow, expression, time zone, target, role, input). A changed schedule is therefore a new
name: reconciling is creating the names wanted and missing, then deleting the names present
and not wanted (a changed expression, a removed workflow), and a steady state costs one
ListSchedules and nothing else — no GetSchedule per schedule to compare. The new schedule is
created before the old one is deleted, so a change leaves no gap (a firing both would make
has one id, so one instance). The ``wfcron-`` prefix never matches the one-time wake-ups'
``wf-<hex>-`` names, and only names with that prefix are ever deleted: other schedules in the
group are never touched.

**Why the sweep, not a CloudFormation custom resource.** The sweep already runs every 5
minutes, with the deployed code and ``WORKFLOWS``: after a deploy it brings the schedules in
line within 5 minutes, with no extra function, no custom-resource protocol whose failure
(or a timeout) blocks or rolls back a deploy, and it repairs drift too — a schedule deleted by
hand or a reconciliation cut short by throttling is put right on the next run. Each call is
idempotent (a create that finds the name taken, a delete that finds it gone, are done), and an
AWS error is logged and counted, never raised: the rest of the sweep goes on and the next run
retries.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lambda_workflows.engine.clock import Clock, to_datetime
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.instances.schedules import Schedule, firing_keys, schedules_of

from .errors import error_code

if TYPE_CHECKING:
    from mypy_boto3_scheduler import EventBridgeSchedulerClient

RECURRING_PREFIX = "wfcron-"
SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"
_NAME_ROOM = 64 - len(RECURRING_PREFIX) - 1 - 16  # Scheduler names are at most 64 characters


@immutable
class RecurringSchedule:
    """One schedule as deployed: its name, the workflow it starts and when."""

    name: str
    workflow: str
    schedule: Schedule
    input: str


@dataclass
class Reconciliation:
    """What one reconciliation did: schedule names created, deleted and kept, and the
    operations that failed (retried on the next run)."""

    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        """Counts, for the log line and the sweep's answer."""
        return {
            "created": len(self.created),
            "deleted": len(self.deleted),
            "kept": len(self.kept),
            "failed": len(self.failed),
        }


def firing_input(workflow: str, key: str | None = None) -> str:
    """The target input of one of ``workflow``'s schedules: a trigger message whose scheduled
    time Scheduler fills in, naming the schedule by its key unless it is the workflow's first
    (:func:`~lambda_workflows.engine.instances.schedules.firing_keys`)."""
    message = {"workflow": workflow, "scheduled_time": SCHEDULED_TIME}
    if key is not None:
        message["schedule"] = key
    return json.dumps(message)


def wanted_schedules(
    workflows: Mapping[str, Any], target_arn: str, role_arn: str
) -> dict[str, RecurringSchedule]:
    """The schedules the registered workflows declare, by name (pinned older versions,
    ``name@version``, have none: only the newest version is started by a schedule)."""
    wanted: dict[str, RecurringSchedule] = {}
    for key, cls in sorted(workflows.items()):
        if "@" in key:
            continue
        for schedule, firing_key in firing_keys(schedules_of(cls)):
            body = firing_input(key, firing_key)
            identity = json.dumps(
                [key, schedule.expression, schedule.timezone, target_arn, role_arn, body]
            )
            digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
            name = f"{RECURRING_PREFIX}{key[:_NAME_ROOM]}-{digest}"
            wanted[name] = RecurringSchedule(name, key, schedule, body)
    return wanted


class RecurringSchedules:
    """The group's recurring schedules, reconciled with the registered workflows.

    Args:
        client: a boto3 ``scheduler`` client.
        group: the schedule group name.
        target_arn: the trigger queue's ARN.
        role_arn: the role EventBridge Scheduler assumes to send to it.
        clock: the time source (a rate schedule starts at its next aligned firing).
    """

    def __init__(
        self,
        client: EventBridgeSchedulerClient,
        group: str,
        target_arn: str,
        role_arn: str,
        clock: Clock,
    ) -> None:
        self.client = client
        self.group = group
        self.target_arn = target_arn
        self.role_arn = role_arn
        self.clock = clock

    def reconcile(self, workflows: Mapping[str, Any]) -> Reconciliation:
        """Create the missing schedules, then delete the stale ones. Never raises an AWS
        error: a failed call is listed in ``failed`` (and logged) and retried next run."""
        done = Reconciliation()
        wanted = wanted_schedules(workflows, self.target_arn, self.role_arn)
        present = self.deployed_names(done)
        if present is None:
            return done  # cannot tell what is stale: touch nothing
        for name in sorted(set(wanted) - present):
            if self._create(wanted[name], done):
                done.created.append(name)
        for name in sorted(present - set(wanted)):
            if self._delete(name, done):
                done.deleted.append(name)
        done.kept = sorted(present & set(wanted))
        return done

    def deployed_names(self, done: Reconciliation | None = None) -> set[str] | None:
        """The names of the group's recurring schedules; None when listing failed."""
        try:
            pages = self.client.get_paginator("list_schedules").paginate(
                GroupName=self.group, NamePrefix=RECURRING_PREFIX
            )
            return {s["Name"] for page in pages for s in page.get("Schedules", [])}
        except (ClientError, BotoCoreError) as exc:
            _failed(done, "ListSchedules", exc)
            return None

    def _create(self, wanted: RecurringSchedule, done: Reconciliation) -> bool:
        schedule = wanted.schedule
        request: dict[str, Any] = {
            "Name": wanted.name,
            "GroupName": self.group,
            "Description": f"Starts an instance of workflow {wanted.workflow} per firing",
            "ScheduleExpression": schedule.expression,
            "ScheduleExpressionTimezone": schedule.timezone,
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "State": "ENABLED",
            "Target": {"Arn": self.target_arn, "RoleArn": self.role_arn, "Input": wanted.input},
        }
        if schedule.is_rate:  # aligned firings (engine.schedules): start at the next one
            request["StartDate"] = to_datetime(schedule.next_firing(self.clock.time()))
        try:
            self.client.create_schedule(**request)
        except ClientError as exc:
            if error_code(exc) == "ConflictException":
                return True  # created by a run that timed out before it heard back
            _failed(done, f"CreateSchedule {wanted.name}", exc)
            return False
        except BotoCoreError as exc:
            _failed(done, f"CreateSchedule {wanted.name}", exc)
            return False
        return True

    def _delete(self, name: str, done: Reconciliation) -> bool:
        try:
            self.client.delete_schedule(Name=name, GroupName=self.group)
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                return True  # deleted by an earlier run meanwhile
            _failed(done, f"DeleteSchedule {name}", exc)
            return False
        except BotoCoreError as exc:
            _failed(done, f"DeleteSchedule {name}", exc)
            return False
        return True


def _failed(done: Reconciliation | None, what: str, exc: Exception) -> None:
    from lambda_workflows.observability import logger

    if done is not None:
        done.failed.append(what)
    logger().warning(
        "recurring schedules: call failed; the next sweep retries it",
        extra={"call": what, "error": f"{type(exc).__name__}: {exc}"},
    )
