"""Recurring schedules on the in-memory backend: fired from the registry itself, since there
is nothing to deploy (see :mod:`lambda_workflows.local.recurring` for the embedded AWS).

Each firing creates ``<workflow>-<UTC time>`` as TriggerFunction does on AWS: a firing
delivered twice finds the id taken and creates nothing. A schedule added to the registry fires
from the time it is first seen (:meth:`MemoryRecurring.reconcile`), as a deployed one would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.errors import InstanceAlreadyExists
from lambda_workflows.engine.instances.ports import FiringWatermarks
from lambda_workflows.engine.instances.schedules import (
    MAX_FIRINGS,
    Firing,
    Schedule,
    firing,
    firing_id,
    firing_keys,
    scheduled_time,
    schedules_of,
)
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.memory.store import MemoryStore


class RecurringFirings(Protocol):
    """What fires a backend's recurring schedules on its clock."""

    def reconcile(self) -> object:
        """Bring the deployed schedules in line with the registry (as the sweep does)."""
        ...

    def fire(self, until: float | None = None) -> list[Firing]:
        """Deliver the firings due since the last call, up to ``until`` (default: now)."""
        ...

    def skip(self, to: float) -> None:
        """Move past skipped idle time without firing what fell in it."""
        ...

    def deliver(self, workflow: str, at: float, key: str | None = None) -> None:
        """Deliver one firing of ``workflow``'s schedule ``key`` (None: its first) at ``at``
        (again, for a duplicate)."""
        ...


class MemoryRecurring:
    """:class:`RecurringFirings` on an :class:`InstanceService` of the in-memory store.

    Args:
        workflows: the registry (read at each call: a test may change it).
        service: creates the instances.
        clock: the time source.
    """

    def __init__(
        self, workflows: Mapping[str, Any], service: InstanceService, clock: Clock
    ) -> None:
        self.workflows = workflows
        self.service = service
        self.clock = clock
        self._fired_through = clock.time()
        self._since: dict[tuple[str, Schedule], float] = {}  # when each was first seen

    def reconcile(self) -> None:
        now = self.clock.time()
        for key, cls in self.workflows.items():
            for schedule in schedules_of(cls):
                self._since.setdefault((key, schedule), now)

    def fire(self, until: float | None = None) -> list[Firing]:
        until = self.clock.time() if until is None else until
        after, self._fired_through = self._fired_through, max(self._fired_through, until)
        due: list[tuple[Firing, str | None]] = []
        for key, cls in self.workflows.items():
            if "@" in key:
                continue  # a pinned older version: only the newest is started by schedules
            for schedule, firing_key in firing_keys(schedules_of(cls)):
                since = max(after, self._since.setdefault((key, schedule), after))
                times = list(schedule.firings(since, until))[-MAX_FIRINGS:]
                due.extend(
                    (
                        Firing(key, firing_id(key, at, firing_key), at, schedule.expression),
                        firing_key,
                    )
                    for at in times
                )
        due.sort(key=lambda f: (f[0].at, f[0].workflow, f[0].id))
        for one, firing_key in due:
            self.deliver(one.workflow, one.at, firing_key)
        return [one for one, _ in due]

    def skip(self, to: float) -> None:
        self._fired_through = max(self._fired_through, to)

    def deliver(self, workflow: str, at: float, key: str | None = None) -> None:
        id, params = firing(workflow, scheduled_time(at), key)
        with contextlib.suppress(InstanceAlreadyExists):  # a duplicate starts nothing more
            self.service.create(workflow, id, params)


class MemoryFiringLedger:
    """:class:`~lambda_workflows.engine.instances.ports.ScheduleStore` on a :class:`MemoryStore`:
    the
    firing ledger.

    Args:
        store: the store whose instances (and tombstones) tell which firings started.
    """

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._held = FiringWatermarks({})

    def read(self) -> FiringWatermarks:
        return self._held

    def write(self, through: Mapping[str, float], read: FiringWatermarks) -> bool:
        if read.version != self._held.version:
            return False  # another run wrote meanwhile
        self._held = FiringWatermarks(dict(through), read.version + 1)
        return True

    def started(self, refs: Sequence[InstanceRef]) -> set[InstanceRef]:
        return self.store.recorded(refs)
