"""Workflows' recurring schedules on the embedded AWS: reconciled as the sweep does after a
deploy, and fired on the clock, since moto's Scheduler stores schedules but never fires them.

A firing does what EventBridge Scheduler does: it puts the scheduled time into the schedule's
input (``<aws.scheduler.scheduled-time>``) and sends it to the target, the trigger queue; the
real TriggerFunction handler then takes the message off the queue and creates the instance
``<name>-<UTC time>``. Ids are therefore the same as on AWS.

Only the time the clock is *moved* fires schedules (``POST /_dev/clock/advance``, a test's
``env.clock.advance``, real time passing); the idle time the local runtime and the test kit
skip over sleeps does not (:meth:`RecurringEmulator.skip`). Otherwise a schedule whose
instances sleep would feed itself: each firing's sleep is skipped to, the skip makes more
firings due, and virtual time would race ahead for ever.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lambda_workflows.aws.recurring import (
    RECURRING_PREFIX,
    SCHEDULED_TIME,
    Reconciliation,
    RecurringSchedules,
    firing_input,
)
from lambda_workflows.engine.instances.schedules import (
    MAX_FIRINGS,
    Firing,
    Schedule,
    firing_id,
    scheduled_time,
)

if TYPE_CHECKING:
    from .embedded import EmbeddedAws


class RecurringEmulator:
    """Reconciles and fires the recurring schedules of an :class:`EmbeddedAws`.

    Args:
        aws: the embedded AWS (its runtime's workflows are the registry).
    """

    def __init__(self, aws: EmbeddedAws) -> None:
        self.aws = aws
        self.trigger_queue_arn = aws.resources.environment("SweepFunction")["TRIGGER_QUEUE_ARN"]
        self.trigger_queue_url = aws.resources.trigger_queue_url
        self._fired_through = aws.clock.time()
        self._since: dict[str, float] = {}  # schedule name → when it was first seen
        self._deployed = False  # any recurring schedule created: else no call is made
        self._next_due = 0.0  # no firing before this (0: unknown, look)

    @functools.cached_property
    def _trigger(self) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
        """The real TriggerFunction handler (imported on the first firing)."""
        from lambda_workflows.entrypoints.trigger import make_handler

        return make_handler(self.aws.runtime)

    def reconcile(self) -> Reconciliation:
        """What the sweep does after a deploy: bring the schedules in line with the registry.

        Makes no AWS call when no workflow declares schedules and none were ever created.
        """
        runtime = self.aws.runtime
        declared = any(getattr(c, "schedules", None) for c in runtime.workflows.values())
        if not declared and not self._deployed:
            return Reconciliation()
        done = RecurringSchedules(
            self.aws.scheduler,
            self.aws.settings.schedule_group,
            self.trigger_queue_arn,
            self.aws.settings.scheduler_role_arn,
            self.aws.clock,
        ).reconcile(runtime.workflows)
        self._deployed = bool(done.created or done.kept or done.failed)
        if done.created or done.deleted:
            self._next_due = 0.0
        for name in done.created:
            self._since[name] = self.aws.clock.time()
        return done

    def fire(self, until: float | None = None) -> list[Firing]:
        """Deliver every firing due after the last call and at or before ``until`` (default:
        now), earliest first; each is created by the real TriggerFunction handler."""
        until = self.aws.clock.time() if until is None else until
        after, self._fired_through = self._fired_through, max(self._fired_through, until)
        if not self._deployed or until <= after or until < self._next_due:
            return []  # the worker asks every 50 ms: no listing before the next firing
        due: list[tuple[float, str, dict[str, Any]]] = []
        self._next_due = float("inf")
        for name, detail in self._schedules():
            since = max(after, self._since.setdefault(name, after))
            schedule = _schedule_of(detail)
            times = list(schedule.firings(since, until))[-MAX_FIRINGS:]
            due.extend((at, name, detail) for at in times)
            self._next_due = min([self._next_due, *schedule.next_firings(until, 1)])
        return [self._deliver(at, detail) for at, _, detail in sorted(due, key=lambda d: d[:2])]

    def skip(self, to: float) -> None:
        """Move past idle time skipped over a sleep without firing what fell in it."""
        self._fired_through = max(self._fired_through, to)

    def described(self, names: list[str]) -> list[tuple[str, Schedule]]:
        """The workflow and the schedule of each of the recurring schedules ``names``."""
        group = self.aws.settings.schedule_group
        found = []
        for name in names:
            detail = self.aws.scheduler.get_schedule(Name=name, GroupName=group)
            workflow = str(json.loads(detail["Target"].get("Input", "{}")).get("workflow"))
            found.append((workflow, _schedule_of(dict(detail))))
        return found

    def _schedules(self) -> list[tuple[str, dict[str, Any]]]:
        group = self.aws.settings.schedule_group
        pages = self.aws.scheduler.get_paginator("list_schedules").paginate(
            GroupName=group, NamePrefix=RECURRING_PREFIX
        )
        names = [s["Name"] for page in pages for s in page.get("Schedules", [])]
        return [
            (name, dict(self.aws.scheduler.get_schedule(Name=name, GroupName=group)))
            for name in names
        ]

    def _deliver(self, at: float, detail: dict[str, Any]) -> Firing:
        body = str(detail["Target"]["Input"]).replace(SCHEDULED_TIME, scheduled_time(at))
        self._send(body)
        message = json.loads(body)
        workflow, key = str(message.get("workflow", "")), message.get("schedule")
        return Firing(workflow, firing_id(workflow, at, key), at, detail["ScheduleExpression"])

    def deliver(self, workflow: str, at: float, key: str | None = None) -> None:
        """Deliver the firing of ``workflow``'s schedule ``key`` (default: its first) at ``at``
        as Scheduler would (again, for a duplicate delivery)."""
        self._send(firing_input(workflow, key).replace(SCHEDULED_TIME, scheduled_time(at)))

    def _send(self, body: str) -> None:
        self.aws.sqs.send_message(QueueUrl=self.trigger_queue_url, MessageBody=body)
        self.drain_trigger_queue()

    def drain_trigger_queue(self) -> int:
        """Feed the trigger queue's messages to the real TriggerFunction handler and delete
        them; how many it refused (a malformed message is not retried here)."""
        from .embedded import LambdaContext, sqs_event

        failed = 0
        while True:
            response = self.aws.sqs.receive_message(
                QueueUrl=self.trigger_queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            )
            messages = [dict(m) for m in response.get("Messages", [])]
            if not messages:
                return failed
            event = sqs_event(messages, self.trigger_queue_arn)
            answer = self._trigger(event, LambdaContext("TriggerFunction", 60_000))
            failed += len(answer.get("batchItemFailures", []))
            for message in messages:
                self.aws.sqs.delete_message(
                    QueueUrl=self.trigger_queue_url, ReceiptHandle=str(message["ReceiptHandle"])
                )


def _schedule_of(detail: dict[str, Any]) -> Schedule:
    return Schedule(detail["ScheduleExpression"], detail.get("ScheduleExpressionTimezone", "UTC"))
