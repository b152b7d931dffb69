"""The in-memory :class:`~lambda_workflows.engine.instances.ports.SlotStore`: slots and lines in
dicts,
changed under the memory store's lock, so each operation is as atomic as its DynamoDB
transaction.

It gets the store's records and lock, not the store: :mod:`.memory` imports this module, and
this one nothing of it."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from lambda_workflows.engine.instances.ports import Giver, Holder, Moved, Taker
from lambda_workflows.engine.instances.slots import line_key
from lambda_workflows.engine.instances.transitions import Change
from lambda_workflows.engine.model import InstanceRecord, InstanceRef, InstanceStatus

if TYPE_CHECKING:
    from contextlib import AbstractContextManager


class Stored(Protocol):
    """Where the memory store keeps an instance's record, which a slot's move changes."""

    record: InstanceRecord


class MemorySlots:
    """Slots of limited workflows beside a :class:`~lambda_workflows.memory.store.MemoryStore`.

    Args:
        instances: the store's instances, by reference (read and changed under ``lock``).
        lock: the store's lock.
    """

    def __init__(
        self, instances: Mapping[InstanceRef, Stored], lock: AbstractContextManager[Any]
    ) -> None:
        self._instances = instances
        self._lock = lock
        self._holders: dict[tuple[str, int], Holder] = {}
        self._lines: dict[tuple[str, int], list[str]] = {}  # sorted keys, oldest first
        self.writes = 0

    def _record(self, workflow: str, instance_id: str) -> InstanceRecord | None:
        stored = self._instances.get(InstanceRef(workflow, instance_id))
        return None if stored is None else stored.record

    def _set(self, record: InstanceRecord, change: Change) -> None:
        self._instances[record.ref].record = change.applied(record)

    def _join(self, workflow: str, group: int, key: str) -> None:
        line = self._lines.setdefault((workflow, group), [])
        at = bisect.bisect_left(line, key)
        if at == len(line) or line[at] != key:
            line.insert(at, key)

    def enqueue(self, record: InstanceRecord, group: int, change: Change) -> InstanceRecord | None:
        with self._lock:
            current = self._record(record.workflow, record.id)
            if current is None or current.version != record.version or current.slot is not None:
                return None
            self._set(current, change)
            self._join(record.workflow, group, line_key(record))
            self.writes += 1
            return self._record(record.workflow, record.id)

    def join(self, workflow: str, group: int, key: str) -> None:
        with self._lock:
            self._join(workflow, group, key)
            self.writes += 1

    def leave(self, workflow: str, group: int, key: str) -> None:
        with self._lock:
            line = self._lines.get((workflow, group), [])
            if key in line:
                line.remove(key)
            self.writes += 1

    def waiting(self, workflow: str, group: int, limit: int) -> list[str]:
        with self._lock:
            return list(self._lines.get((workflow, group), [])[:limit])

    def ahead(self, workflow: str, group: int, key: str) -> int:
        with self._lock:
            return bisect.bisect_left(self._lines.get((workflow, group), []), key)

    def holders(self, workflow: str, slots: Sequence[int]) -> list[Holder]:
        with self._lock:
            found = (self._holders.get((workflow, k)) for k in slots)
            return [h for h in found if h is not None]

    def move(
        self,
        workflow: str,
        slot: int,
        giver: Giver | None,
        taker: Taker | None,
        check_at: float,
    ) -> Moved:
        with self._lock:
            held = self._holders.get((workflow, slot))
            if (held.id if held else None) != (giver.id if giver else None):
                return Moved.SLOT_CHANGED
            given = None if giver is None else self._record(workflow, giver.id)
            if giver is not None and not _gives(given, giver, slot):
                return Moved.GIVER_CHANGED
            taken = None if taker is None else self._record(workflow, taker.id)
            if taker is not None and not _takes(taken):
                return Moved.TAKER_GONE
            if giver is not None and given is not None and giver.change is not None:
                self._set(given, giver.change)
                if giver.requeue is not None:
                    self._join(workflow, *giver.requeue)
            if taker is not None and taken is not None:
                self._set(taken, taker.change)
                line = self._lines.get((workflow, taker.group), [])
                if taker.key in line:
                    line.remove(taker.key)
                self._holders[(workflow, slot)] = Holder(slot, taker.id, check_at)
            else:
                self._holders.pop((workflow, slot), None)
            self.writes += 1
            return Moved.DONE

    def recheck(self, workflow: str, holder: Holder, check_at: float) -> None:
        with self._lock:
            if self._holders.get((workflow, holder.slot), holder).id == holder.id:
                self._holders[(workflow, holder.slot)] = Holder(holder.slot, holder.id, check_at)
                self.writes += 1


def _gives(record: InstanceRecord | None, giver: Giver, slot: int) -> bool:
    """The giver's condition: as it was read (or, without a change, not holding the slot)."""
    if giver.change is None:
        return record is None or record.slot != slot
    if record is None or record.slot != slot:
        return False
    return giver.version is None or record.version == giver.version


def _takes(record: InstanceRecord | None) -> bool:
    """The taker's condition: queued, holding no slot."""
    return record is not None and record.status is InstanceStatus.QUEUED and record.slot is None
