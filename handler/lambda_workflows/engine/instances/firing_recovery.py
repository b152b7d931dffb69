"""Firings of recurring schedules that started no instance, started late by the sweep.

A firing travels EventBridge Scheduler → the trigger queue → TriggerFunction, which creates
``<workflow>-<UTC time>[-<key>]`` (:func:`~lambda_workflows.engine.instances.schedules.firing_id`):
a firing delivered twice finds its id taken. But a firing can also never arrive. Scheduler gives up
on a delivery after its retries (24 hours; the schedules have no dead-letter queue). A trigger
message that failed 5 receives (a throttled table, a TriggerFunction that crashed each time) is
dead-lettered. Someone can purge the queue. Without this module, nothing would ever start that
firing's instance; only an operator's redrive of the dead-letter queue could.

**The rule: one instance per firing time, whoever creates it.** Each sweep run
(:meth:`FiringRecovery.recover`) computes each declared schedule's firing times since its
**watermark**: the latest firing time up to which every firing has its instance. It asks the
store which of those instances exist, and creates each missing one with the trigger's own id,
params and create. Two creates of one id make one instance (the store's conditional put), so a
firing that is recovered and then delivered, delivered twice, or recovered by two overlapping
sweeps, still starts once. The watermark moves only over firings whose instance exists now: a
create that failed (throttled) is tried again by the next run.

- **A new schedule is not backfilled.** A schedule the ledger has never seen (new, changed:
  another expression or time zone is another schedule, or no longer its workflow's first) gets
  the current time as its watermark. The sweep creates the Scheduler schedule in the same run
  (:mod:`lambda_workflows.aws.recurring`), so only its own firings count. A removed schedule
  leaves the ledger at the next run, so adding it again later starts it afresh.
- **Late by at most a sweep interval.** A firing is left to its own delivery for
  :data:`FIRING_GRACE`; the first run after that starts it, so a lost firing's instance starts
  between 2 and about 7 minutes late (the sweep runs every 5 minutes).
- **A deleted instance stays deleted.** Deleting an instance leaves a tombstone
  (:mod:`lambda_workflows.aws.items`) that outlives the look-back; a tombstone counts as
  started, and the firing is never recreated.
- **An expired instance is never recreated.** A finished instance is kept for its workflow's
  retention from the time it finished, so the instance of a firing at ``T`` cannot have expired
  before ``T`` + the shortest retention. Firings older than that, and older than
  :data:`FIRING_LOOKBACK` (Scheduler's own retry window), are not recovered: a sweep that has
  not run for a day loses the firings of that day it did not recover.
- **Cost is bounded.** At most :data:`~lambda_workflows.engine.instances.schedules.MAX_FIRINGS`
firings
  of one schedule are looked at per run, and :data:`RECOVERY_LIMIT` instances are created per
  run at most; the next run goes on from the watermarks.

The watermarks live in one ledger, the schedule store
(:class:`~lambda_workflows.engine.instances.ports.ScheduleStore`, a port the runtime builds: one
item on AWS), read once per run and written only when something moved, on condition that nobody
wrote it meanwhile.

Pure: no clock reads (the sweep passes the time), no AWS (the ledger is a port).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from lambda_workflows.engine.errors import InfrastructureError, InstanceAlreadyExists, WorkflowError
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.engine.retention import retention_of

from .ports import FiringWatermarks, ScheduleStore
from .schedules import (
    MAX_FIRINGS,
    Schedule,
    firing,
    firing_keys,
    scheduled_time,
    schedules_of,
)
from .service import InstanceService

__all__ = [
    "FIRING_GRACE",
    "FIRING_LOOKBACK",
    "RECOVERY_LIMIT",
    "FiringLedger",
    "FiringRecovery",
    "FiringSeries",
    "FiringWatermarks",
    "RecoveredFirings",
    "declared_series",
]

log = logging.getLogger("lambda_workflows.firings")

FIRING_GRACE = 120.0
"""Seconds a firing is left to its own delivery before the sweep starts it."""
FIRING_LOOKBACK = 86_400.0
"""Firings older than this are not recovered (Scheduler itself retries a delivery 24 hours)."""
RECOVERY_LIMIT = 500
"""Instances one sweep run creates at most; the next run goes on."""


@immutable
class FiringSeries:
    """The firings of one of a workflow's schedules: ``key`` is the one its ids carry (None
    for the workflow's first schedule, see
    :func:`~lambda_workflows.engine.instances.schedules.firing_keys`)."""

    workflow: str
    schedule: Schedule
    key: str | None

    @property
    def name(self) -> str:
        """The series' name in the ledger: it changes when the expression, the time zone or
        the ids change."""
        return f"{self.workflow}|{self.schedule.key}|{self.key or '-'}"

    def ref(self, at: float) -> InstanceRef:
        """The instance the firing at ``at`` starts."""
        return InstanceRef(self.workflow, self.firing(at)[0])

    def firing(self, at: float) -> tuple[str, dict[str, str]]:
        """The id and params of the firing at ``at``, as TriggerFunction makes them."""
        return firing(self.workflow, scheduled_time(at), self.key)


FiringLedger = ScheduleStore
"""The firing ledger: the :class:`~lambda_workflows.engine.instances.ports.ScheduleStore` port, by
the
name this module gave it first."""


@dataclass
class RecoveredFirings:
    """What one run did: the ids of the instances it started, and of those it could not."""

    started: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        """Counts, for the sweep's answer and log line."""
        return {"started": len(self.started), "failed": len(self.failed)}


def declared_series(workflows: Mapping[str, Any]) -> list[FiringSeries]:
    """Every schedule the registered workflows declare (pinned older versions, ``name@v``,
    have none: schedules start the newest version)."""
    return [
        FiringSeries(name, schedule, key)
        for name, cls in sorted(workflows.items())
        if "@" not in name
        for schedule, key in firing_keys(schedules_of(cls))
    ]


class FiringRecovery:
    """Starts the firings that started no instance (see the module's docstring).

    Args:
        workflows: the registry.
        ledger: the schedule store: the watermarks, and which instances exist.
        service: creates the instances, as TriggerFunction does.
        retention_seconds: the runtime's retention (a workflow's own ``retention`` wins).
    """

    def __init__(
        self,
        workflows: Mapping[str, Any],
        ledger: ScheduleStore,
        service: InstanceService,
        retention_seconds: float,
    ) -> None:
        self.workflows = workflows
        self.ledger = ledger
        self.service = service
        self.retention_seconds = retention_seconds

    def recover(self, now: float, limit: int = RECOVERY_LIMIT) -> RecoveredFirings:
        """Create the instance of every firing due by ``now`` less the grace that has none,
        then move the watermarks over the firings whose instance exists.

        Raises:
            InfrastructureError: the ledger could not be read or asked which firings started
                (nothing was created; the next run tries again).
        """
        held = self.ledger.read()
        series = declared_series(self.workflows)
        through = {one.name: held.through.get(one.name, now) for one in series}  # new: now on
        due = {
            one: self._due(one, held.through[one.name], now)
            for one in series
            if one.name in held.through
        }
        refs = [one.ref(at) for one, times in due.items() for at in times]
        started = self.ledger.started(refs) if refs else set()
        done = RecoveredFirings()
        for one, times in due.items():
            for at in times:
                if one.ref(at) not in started and not self._start(one, at, done, limit):
                    break  # the watermark stays before it: the next run tries again
                through[one.name] = at
        if through != dict(held.through):
            self._save(through, held)
        return done

    def _save(self, through: Mapping[str, float], held: FiringWatermarks) -> None:
        """Write the watermarks; when that fails the instances created stay, and the next run
        finds them and moves the watermarks itself."""
        try:
            if not self.ledger.write(through, held):
                log.info("firing watermarks: another sweep wrote them first; the next run goes on")
        except InfrastructureError as exc:
            log.warning("firing watermarks not saved (%s); the next sweep moves them", exc)

    def _due(self, series: FiringSeries, watermark: float, now: float) -> list[float]:
        """The firings after ``watermark`` old enough to be owed (past the grace) and young
        enough to be recovered (within the look-back and the workflow's shortest retention)."""
        kept = retention_of(self.workflows, series.workflow, self.retention_seconds)
        floor = now - min(FIRING_LOOKBACK, kept.success, kept.error)
        firings = series.schedule.firings(max(watermark, floor), now - FIRING_GRACE)
        return list(islice(firings, MAX_FIRINGS))

    def _start(self, series: FiringSeries, at: float, done: RecoveredFirings, limit: int) -> bool:
        """Create the instance of the firing at ``at``; False when it is still owed."""
        if len(done.started) >= limit:
            return False
        id, params = series.firing(at)
        try:
            self.service.create(series.workflow, id, params)
        except InstanceAlreadyExists:
            return True  # its delivery came meanwhile
        except InfrastructureError as exc:
            done.failed.append(id)
            log.warning("lost firing %s not started (%s); the next sweep retries", id, exc)
            return False
        except WorkflowError as exc:  # refused for good (as its trigger message would be)
            done.failed.append(id)
            log.error("lost firing %s cannot be started: %s", id, exc)
            return True
        done.started.append(id)
        log.info("lost firing started: %s", id)
        return True
