"""In-memory implementations of the ports, for the test kit and quick experiments.

They follow the same contracts as the AWS adapters (first writer wins, version checks, lease
rules) so the engine behaves the same on both. Thread-safe: sync step callbacks run in worker
threads and may use a workflow client.
"""

from __future__ import annotations

import dataclasses
import functools
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lambda_workflows.engine import cursors
from lambda_workflows.engine.errors import (
    InstanceAlreadyExists,
    InstanceNotFound,
    InvalidInput,
)
from lambda_workflows.engine.instances.ports import (
    CLAIM_SPAN,
    BatchCreateResult,
    InstancePage,
    InstanceState,
)
from lambda_workflows.engine.instances.transitions import Change
from lambda_workflows.engine.instances.usage import schedules_in
from lambda_workflows.engine.model import (
    FINISHED,
    RUNNABLE,
    EventRecord,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    JournalEntry,
)

if TYPE_CHECKING:
    from lambda_workflows.memory.slots import MemorySlots


@dataclass
class _Stored:
    record: InstanceRecord
    journal: dict[tuple[int, str], JournalEntry] = field(default_factory=dict)
    events: list[EventRecord] = field(default_factory=list)
    keys: dict[str, EventRecord] = field(default_factory=dict)  # idempotency key → event
    claims: dict[int, str] = field(default_factory=dict)  # generation → restart token


@dataclass(frozen=True)
class _Deleted:
    """What is left of a deleted instance: where a new one with its id starts (its version
    and journal generation), so a late writer of the deleted one is never read."""

    version: int
    generation: int


class MemoryStore:
    """An :class:`~lambda_workflows.engine.instances.ports.InstanceStore` in a dict."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._instances: dict[InstanceRef, _Stored] = {}
        self._deleted: dict[InstanceRef, _Deleted] = {}
        self.writes = 0
        self._cursor_key = secrets.token_bytes(32)  # this store's cursors only

    def create(self, record: InstanceRecord) -> None:
        with self._lock:
            if record.ref in self._instances:
                raise InstanceAlreadyExists(record.workflow, record.id)
            self._instances[record.ref] = _Stored(_created(self._reborn(record)))
            self.writes += 1

    def _reborn(self, record: InstanceRecord) -> InstanceRecord:
        """``record``, started above a deleted instance of the same id, if there was one."""
        deleted = self._deleted.pop(record.ref, None)
        if deleted is None:
            return record
        generation = max(record.generation, deleted.generation)
        return dataclasses.replace(record, version=deleted.version + 1, generation=generation)

    def create_many(self, records: Sequence[InstanceRecord]) -> BatchCreateResult:
        result = BatchCreateResult()
        with self._lock:
            for record in records:
                if record.ref in self._instances:
                    result.existing.append(record.id)
                else:
                    self._instances[record.ref] = _Stored(_created(self._reborn(record)))
                    result.created.append(record.id)
            self.writes += 1
        return result

    def recorded(self, refs: Sequence[InstanceRef]) -> set[InstanceRef]:
        """Which of ``refs`` were created: live instances, and deleted ones (their tombstone)."""
        with self._lock:
            return {ref for ref in refs if ref in self._instances or ref in self._deleted}

    def _stored(self, ref: InstanceRef) -> _Stored:
        try:
            return self._instances[ref]
        except KeyError:
            raise InstanceNotFound(
                f"no instance '{ref.id}' of workflow '{ref.workflow}'; check the id, or list "
                "the workflow's instances"
            ) from None

    def get(self, ref: InstanceRef) -> InstanceRecord:
        with self._lock:
            return self._stored(ref).record

    def load(self, ref: InstanceRef) -> InstanceState:
        with self._lock:
            stored = self._stored(ref)
            generation = stored.record.generation
            entries = [e for (g, _), e in stored.journal.items() if g == generation]
            events = [e for e in stored.events if e.generation == generation]
            return InstanceState(stored.record, entries, events)

    def record(self, ref: InstanceRef, generation: int, entry: JournalEntry) -> JournalEntry:
        with self._lock:
            stored = self._instances.get(ref)
            if stored is None:  # deleted while a runner was mid-step: the write lands nowhere
                return entry
            journal = stored.journal
            existing = journal.get((generation, entry.key))
            if existing is not None:  # first writer wins
                return existing
            journal[(generation, entry.key)] = entry
            self.writes += 1
            return entry

    async def record_async(
        self, ref: InstanceRef, generation: int, entry: JournalEntry
    ) -> JournalEntry:
        # A dict answers at once: inline, without a hop to a thread.
        return self.record(ref, generation, entry)

    def record_child_wait(
        self,
        parent: InstanceRef,
        generation: int,
        wait: JournalEntry,
        child: InstanceRecord | None = None,
    ) -> JournalEntry | None:
        with self._lock:
            stored = self._instances.get(parent)
            if stored is None or not _runs_forward(stored.record, generation):
                return None  # the parent moved on (terminated, restarted, deleted...)
            existing = stored.journal.get((generation, wait.key))
            if existing is not None:  # first writer wins (it created the child)
                return existing
            if child is not None:
                if child.ref in self._instances:
                    raise InstanceAlreadyExists(child.workflow, child.id)
                self._instances[child.ref] = _Stored(_created(self._reborn(child)))
            stored.journal[(generation, wait.key)] = wait
            self.writes += 1
            return wait

    def add_event(
        self, ref: InstanceRef, event: EventRecord, expected_version: int, due_at: float | None
    ) -> EventRecord | None:
        with self._lock:
            stored = self._stored(ref)
            if event.key is not None and event.key in stored.keys:
                return stored.keys[event.key]
            record = stored.record
            if record.version != expected_version or record.status in FINISHED:
                return None
            stored.events.append(event)
            if event.key is not None:
                stored.keys[event.key] = event
            stored.record = dataclasses.replace(
                record,
                version=record.version + 1,
                updated_at=event.timestamp,
                due_at=record.due_at if due_at is None else due_at,
                # the event, its key's marker and the instance item (as on DynamoDB)
                item_writes=record.item_writes + 2 + (event.key is not None),
            )
            self.writes += 1
            return event

    def find_event(self, ref: InstanceRef, key: str) -> EventRecord | None:
        with self._lock:
            return self._stored(ref).keys.get(key)

    def update(
        self,
        ref: InstanceRef,
        expected_version: int,
        change: Change,
        *,
        lease_free_at: float | None = None,
    ) -> InstanceRecord | None:
        with self._lock:
            stored = self._instances.get(ref)
            if stored is None or stored.record.version != expected_version:
                return None  # changed, or deleted (a runner mid-advance then reloads)
            if lease_free_at is not None and stored.record.leased(lease_free_at):
                return None  # a runner holds it (as on DynamoDB: see its adapter)
            changed = change.applied(stored.record)
            stored.record = (
                dataclasses.replace(  # what it used (see lambda_workflows.engine.instances.usage)
                    changed,
                    item_writes=changed.item_writes + 1,
                    schedules=changed.schedules + schedules_in(change),
                )
            )
            self.writes += 1
            return stored.record

    def claim_generation(self, ref: InstanceRef, generation: int, token: str) -> bool:
        with self._lock:
            claims = self._stored(ref).claims
            holder = claims.setdefault(generation, token)
            self.writes += holder == token
            return holder == token

    def seed_generation(
        self,
        ref: InstanceRef,
        generation: int,
        entries: Sequence[JournalEntry],
        events: Sequence[EventRecord],
    ) -> None:
        with self._lock:
            stored = self._stored(ref)
            for entry in entries:
                stored.journal[(generation, entry.key)] = entry
            seeded = {e.id for e in stored.events}
            stored.events.extend(e for e in events if e.id not in seeded)
            self.writes += len(entries) + len(events)

    def delete(self, record: InstanceRecord) -> bool:
        ref = record.ref
        with self._lock:
            stored = self._stored(ref)
            if stored.record.version != record.version:
                return False
            highest = max([stored.record.generation, *stored.claims])
            del self._instances[ref]
            self._deleted[ref] = _Deleted(record.version + 1, highest + CLAIM_SPAN + 1)
            self.writes += 1
            return True

    def finish_delete(self, ref: InstanceRef) -> bool:
        # A delete here removes everything at once, and a late write lands nowhere (see
        # record): no delete is ever owed anything.
        return False

    def finish_deletes(self, before: float, limit: int = 1000) -> int:
        return 0

    def upgrade_listing(self, limit: int = 1000) -> int:
        return 0  # one layout only

    def acquire_lease(
        self,
        ref: InstanceRef,
        owner: str,
        now: float,
        expires_at: float,
        *,
        needs_slot: bool = False,
        delivery: int = 1,
    ) -> InstanceRecord | None:
        with self._lock:
            stored = self._instances.get(ref)
            if stored is None:
                return None
            record = stored.record
            earlier = record.lease_owner == owner and (record.lease_delivery or 0) < delivery
            lease_free = not record.leased(now) or earlier  # as on DynamoDB: see its adapter
            if record.status not in RUNNABLE or not lease_free:
                return None
            if needs_slot and record.slot is None:
                return None
            status = record.status
            if status in (InstanceStatus.QUEUED, InstanceStatus.WAITING):
                status = InstanceStatus.RUNNING
            stored.record = dataclasses.replace(
                record,
                status=status,
                lease_owner=owner,
                lease_delivery=delivery,
                lease_expires_at=expires_at,
                version=record.version + 1,
                started_at=record.started_at or now,
                updated_at=now,
                due_at=expires_at,
                invocations=record.invocations + 1,  # see lambda_workflows.engine.instances.usage
                item_writes=record.item_writes + 1,
            )
            self.writes += 1
            return stored.record

    def release_lease(
        self, ref: InstanceRef, owner: str, due_at: float, *, delivery: int = 1
    ) -> None:
        with self._lock:
            stored = self._instances.get(ref)
            if stored is None or not stored.record.held_by(owner, delivery):
                return
            stored.record = dataclasses.replace(
                stored.record,
                lease_owner=None,
                lease_expires_at=None,
                lease_delivery=None,
                due_at=due_at,
                item_writes=stored.record.item_writes + 1,
            )

    def renew_lease(
        self, ref: InstanceRef, owner: str, expires_at: float, *, delivery: int = 1
    ) -> InstanceRecord | None:
        with self._lock:
            stored = self._instances.get(ref)
            if stored is None or not stored.record.held_by(owner, delivery):
                return None
            # a write even under a still clock, as on DynamoDB (see
            # lambda_workflows.engine.instances.usage)
            stored.record = dataclasses.replace(
                stored.record,
                lease_expires_at=expires_at,
                item_writes=stored.record.item_writes + 1,
            )
            return stored.record

    def list_instances(
        self,
        workflow: str,
        status: InstanceStatus | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> InstancePage:
        with self._lock:
            records = [
                s.record
                for ref, s in self._instances.items()
                if ref.workflow == workflow and (status is None or s.record.status == status)
            ]
        records.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        start = _start_of(cursor) if cursor else 0
        page = records[start : start + limit]
        more = start + limit < len(records)
        return InstancePage(page, str(start + limit) if more else None)

    def seal_cursor(self, position: Mapping[str, Any]) -> str:
        return cursors.seal(self._cursor_key, position)

    def open_cursor(self, cursor: str) -> Any:
        return cursors.unseal(lambda: self._cursor_key, cursor)

    def overdue(self, before: float, limit: int = 1000) -> list[InstanceRef]:
        with self._lock:
            due = [
                (s.record.due_at, ref)
                for ref, s in self._instances.items()
                if s.record.due_at is not None and s.record.due_at < before
            ]
        return [ref for _, ref in sorted(due, key=lambda d: d[0])][:limit]

    @functools.cached_property
    def slots(self) -> MemorySlots:
        """The slots of workflows with a concurrency limit (see
        :mod:`lambda_workflows.engine.instances.slots`)."""
        from lambda_workflows.memory.slots import MemorySlots

        return MemorySlots(self._instances, self._lock)

    # --- for the test kit -----------------------------------------------------------------

    def journal(self, ref: InstanceRef) -> list[JournalEntry]:
        """The current generation's journal entries in recording order."""
        return sorted(self.load(ref).entries, key=lambda e: (e.at, e.key))


def _runs_forward(record: InstanceRecord, generation: int) -> bool:
    """True while ``record``'s instance runs journal ``generation`` forward (what a child's
    creation is conditional on: see :meth:`MemoryStore.record_child_wait`)."""
    return (
        record.generation == generation
        and record.status not in FINISHED
        and record.rollback is None
    )


def _created(record: InstanceRecord) -> InstanceRecord:
    """``record`` as created: its creation is its first write (see
    lambda_workflows.engine.instances.usage)."""
    return dataclasses.replace(record, item_writes=record.item_writes + 1)


def _start_of(cursor: str) -> int:
    """The offset a cursor of this store carries; anything else is InvalidInput, never a 500."""
    if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 9):
        raise InvalidInput(
            "cursor is not valid: pass back, unchanged, the cursor of the previous page, or "
            "start again without one"
        )
    return int(cursor)
