"""The engine's ports: what it needs from storage, the work queue and the wake-up scheduler.

Four stores, each a port of its own, built by the runtime and handed to the service and the
runner: the instances (:class:`InstanceStore`), the concurrency slots of limited workflows
(:class:`SlotStore`), the recurring schedules' firing watermarks (:class:`ScheduleStore`), and
the wake-ups (:class:`WorkQueue`, :class:`WakeUpScheduler`).

The core decides; adapters act. ``lambda_workflows.memory.store`` implements these in memory (test
kit); ``lambda_workflows.aws`` implements them on DynamoDB, SQS and EventBridge Scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from lambda_workflows.engine.errors import SuspendReason
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import (
    EventRecord,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    JournalEntry,
)

from .transitions import Change

CLAIM_SPAN = 100
"""A restart claims a journal generation at most this far above the instance's current one
(see :meth:`InstanceStore.claim_generation`). An instance created with the id of a deleted one
starts its journal above the deleted one's generation plus this span, so nothing a late writer
of the deleted instance (a runner mid-step, a restart under way) wrote is ever read."""


@immutable
class InstanceState:
    """Everything replay needs, loaded at once: the instance, its journal, its events.

    Only the current generation's journal and events are included (a restart starts a new
    generation).
    """

    record: InstanceRecord
    entries: Sequence[JournalEntry]
    events: Sequence[EventRecord]


@immutable
class InstancePage:
    """One page of a listing; pass ``cursor`` back to get the next one."""

    records: list[InstanceRecord]
    cursor: str | None = None


@dataclass(frozen=True, slots=True)
class BatchCreateResult:
    """Which records of a batch were written and which ids already existed."""

    created: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)


class InstanceStore(Protocol):
    """Durable instance state. Writes that matter are conditional; see each method."""

    def create(self, record: InstanceRecord) -> None:
        """Write a new instance. Raises InstanceAlreadyExists if the id is taken.

        The id of a deleted instance is free again: the new instance's version and journal
        generation then start above the deleted one's (see :data:`CLAIM_SPAN`), so a runner
        of the deleted instance still busy finds every conditional write refused.
        """
        ...

    def create_many(self, records: Sequence[InstanceRecord]) -> BatchCreateResult:
        """Write many new instances; ids already taken are skipped and reported."""
        ...

    def get(self, ref: InstanceRef) -> InstanceRecord:
        """The instance record. Raises InstanceNotFound."""
        ...

    def load(self, ref: InstanceRef) -> InstanceState:
        """The instance with its current-generation journal and events. Raises InstanceNotFound."""
        ...

    def record(self, ref: InstanceRef, generation: int, entry: JournalEntry) -> JournalEntry:
        """Record a journal entry unless its key is already recorded; return the recorded one.

        The first writer wins, always: a caller that loses the race gets the winner's entry
        back and must continue with it. An entry recorded for a deleted instance (by a runner
        that was mid-step) is never read: it is returned as written, and nothing fails.
        """
        ...

    async def record_async(
        self, ref: InstanceRef, generation: int, entry: JournalEntry
    ) -> JournalEntry:
        """:meth:`record`, awaited, with the same promise: what a replay pass calls, so that
        steps finishing together (a gather) record together. A store that waits on the
        network runs the write off the event loop; one that answers at once may record inline.
        """
        ...

    def record_child_wait(
        self,
        parent: InstanceRef,
        generation: int,
        wait: JournalEntry,
        child: InstanceRecord | None = None,
    ) -> JournalEntry | None:
        """Record ``wait`` (a ``step.run_workflow``'s) in ``parent``'s journal ``generation``
        and create ``child`` (when given) in the same atomic write, only while ``parent`` is still
        on ``generation``, not finished and not rolling back: a terminate comes either first
        (nothing is written) or after the wait, where it finds the child (see
        :mod:`lambda_workflows.engine.instances.children`).

        Returns the recorded wait: ``wait`` itself, or the one another runner recorded first
        (its child was created with it); None when the parent moved on and nothing was
        written. Raises InstanceAlreadyExists when ``child``'s id is taken (nothing written).
        A deleted instance's id is free, as for :meth:`create`.
        """
        ...

    def add_event(
        self, ref: InstanceRef, event: EventRecord, expected_version: int, due_at: float | None
    ) -> EventRecord | None:
        """Buffer ``event`` and bump the instance's version in one atomic write, only if the
        version is still ``expected_version`` and the instance has not finished.

        ``event.id`` must be ``event_id(expected_version + 1)``: events sort in commit order.
        ``due_at``, when given, becomes the instance's due time (the sender's wake-up may be
        lost; the sweep then finds the instance). When ``event.key`` is set and an event with
        that key was stored before, nothing is written and that earlier event is returned.

        Returns the stored event, or None when the version changed (read again, retry).
        Raises InstanceNotFound.
        """
        ...

    def find_event(self, ref: InstanceRef, key: str) -> EventRecord | None:
        """The event stored earlier under idempotency ``key``, if any (payload not included)."""
        ...

    def update(
        self,
        ref: InstanceRef,
        expected_version: int,
        change: Change,
        *,
        lease_free_at: float | None = None,
    ) -> InstanceRecord | None:
        """Write ``change`` (see :mod:`lambda_workflows.engine.instances.transitions`) and bump the
        version, only if the version is still ``expected_version`` and, with ``lease_free_at``,
        nobody holds a lease live at that time (a runner's write without a lease: see
        :mod:`lambda_workflows.engine.instances.lazy_lease`). Returns the new record, or None if it
        changed meanwhile (or the instance was deleted: the next read says InstanceNotFound).
        """
        ...

    def claim_generation(self, ref: InstanceRef, generation: int, token: str) -> bool:
        """Reserve journal ``generation`` for the restart named ``token``, before the instance
        moves to it: True when it is ``token``'s (now, or already), False when another restart
        holds it (try the next one). A claimed generation is never used by another restart, so
        what one restart copies into it is never seen by another.
        """
        ...

    def seed_generation(
        self,
        ref: InstanceRef,
        generation: int,
        entries: Sequence[JournalEntry],
        events: Sequence[EventRecord],
    ) -> None:
        """Write the entries and events a restart from a step keeps into the claimed
        ``generation`` (see :mod:`lambda_workflows.engine.instances.restart_from`), before the
        instance moves to it; writing the same ones again is harmless.
        """
        ...

    def delete(self, record: InstanceRecord) -> bool:
        """Remove the instance ``record`` describes, with its journal, events, chunks and
        claims, only if its version is still ``record.version``; False when it changed (read
        again, decide again).

        Afterwards the id reads as missing (InstanceNotFound) everywhere, and every
        conditional write of someone still holding the old version fails: a runner that was
        mid-advance records nothing that is ever read, and never recreates the instance.

        True means the delete is committed, even if removing the rest was cut short: that is then
        owed, and :meth:`finish_delete` or :meth:`finish_deletes` completes it (see
        :mod:`lambda_workflows.engine.instances.deletion`).
        """
        ...

    def finish_delete(self, ref: InstanceRef) -> bool:
        """Complete the delete of ``ref`` if its cleanup is still owed (a delete cut short);
        True when it was (the delete is now done, or continues in the sweep), False when no
        delete of ``ref`` is owed anything (never created, or deleted and cleaned up).
        """
        ...

    def finish_deletes(self, before: float, limit: int = 1000) -> int:
        """Complete the cleanup of deletes due before ``before`` (the recovery sweep): what a
        delete cut short left, and what a late writer wrote after it (looked for once
        :data:`~lambda_workflows.engine.instances.deletion.SETTLE_SECONDS` have passed); at most
        ``limit`` deletes per call. Returns how many items it removed.
        """
        ...

    def upgrade_listing(self, limit: int = 1000) -> int:
        """Move up to ``limit`` instances written under an earlier listing layout to the
        current one (the recovery sweep; a store with one layout only returns 0). Returns how
        many moved."""
        ...

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
        """Take the instance's lease if it is runnable and the lease is free, expired, or
        held by an earlier ``delivery`` of ``owner`` (a message delivered again after its
        runner gave it back or died takes back the lease it held; a copy of the same delivery,
        handed to a second runner at the same time, is turned away), and, with
        ``needs_slot``, only if it holds a slot of its workflow's concurrency limit.

        Sets status running when it was queued or waiting, sets ``due_at`` to the lease's
        expiry, bumps the version. Returns the new record, or None when the instance is
        finished, paused, missing or leased by someone else.
        """
        ...

    def release_lease(
        self, ref: InstanceRef, owner: str, due_at: float, *, delivery: int = 1
    ) -> None:
        """Drop the lease of ``owner``'s ``delivery`` (if it still holds it) and make the
        instance due at ``due_at``; the version is unchanged. Used on the failure paths of a
        runner.
        """
        ...

    def renew_lease(
        self, ref: InstanceRef, owner: str, expires_at: float, *, delivery: int = 1
    ) -> InstanceRecord | None:
        """Extend a lease still held by ``owner``'s ``delivery`` (version unchanged); None if
        it was lost."""
        ...

    def list_instances(
        self,
        workflow: str,
        status: InstanceStatus | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> InstancePage:
        """Instances of a workflow, newest first, optionally with one status."""
        ...

    def overdue(self, before: float, limit: int = 1000) -> list[InstanceRef]:
        """Instances whose ``due_at`` is before ``before`` (see
        lambda_workflows.engine.instances.recovery): nobody advanced them in time. The recovery
        sweep posts a wake-up for each.
        """
        ...

    def seal_cursor(self, position: Mapping[str, Any]) -> str:
        """An opaque cursor carrying ``position`` (a JSON object), signed so that only this
        store's cursors are ever opened (see :mod:`lambda_workflows.engine.cursors`)."""
        ...

    def open_cursor(self, cursor: str) -> Any:
        """The position a :meth:`seal_cursor` cursor of this store carries.

        Raises:
            InvalidInput: any other text (forged, cut, changed); nothing was read or written.
        """
        ...


class WorkQueue(Protocol):
    """Where runner work is posted: "advance this instance"."""

    def send(self, ref: InstanceRef, delay: float = 0.0) -> None:
        """Post one wake-up, visible after ``delay`` seconds (at most 15 minutes)."""
        ...

    def send_many(self, refs: Sequence[InstanceRef]) -> None:
        """Post wake-ups for many instances (in batches of 10 on SQS)."""
        ...


class WakeUpScheduler(Protocol):
    """One-time wake-ups at a given time (EventBridge Scheduler ``at(...)`` schedules)."""

    def schedule(self, ref: InstanceRef, at: float, reason: SuspendReason) -> None:
        """Post a wake-up for ``ref`` to the work queue at ``at``.

        ``reason`` is ``sleep``, ``retry`` or ``event`` (a wait's timeout).
        Scheduling the same (ref, at) twice must be harmless.
        """
        ...

    def unschedule(self, ref: InstanceRef, at: float) -> None:
        """Drop the pending wake-up of ``ref`` at ``at``, if any (an event-wait's timeout once
        the event came first, or the instance ended). Best effort, never raises: a wake-up
        left behind finds nothing to do; a missing one would be a lost wake-up, so callers
        drop only a wake-up the instance no longer waits for."""
        ...

    def cancel(self, ref: InstanceRef) -> None:
        """Drop every pending wake-up of the instance (terminate, restart)."""
        ...


# --- the concurrency slots of limited workflows (see lambda_workflows.engine.instances.slots)
# ---------


def id_in(key: str) -> str:
    """The instance id of a place in line (``<creation time>#<id>``)."""
    return key.split("#", 1)[1]


@immutable
class Holder:
    """Slot ``slot`` is held by instance ``id``; look at it again after ``check_at``."""

    slot: int
    id: str
    check_at: float


@immutable
class Taker:
    """Who gets a slot: a waiting instance (``key`` in the line of ``group``), and the change
    its record gets (:class:`~lambda_workflows.engine.instances.transitions.GrantSlot`'s) if it is
    still
    queued and holds no slot."""

    group: int
    key: str
    change: Change

    @property
    def id(self) -> str:
        return id_in(self.key)


@immutable
class Giver:
    """Who lets a slot go: instance ``id``, whose record gets ``change`` if its version is
    still ``version`` (None: if it still holds the slot). ``change`` None: only check that it holds
    the slot no more (or is gone). ``requeue``: put it back in line (``key`` of ``group``), as
    :class:`~lambda_workflows.engine.instances.transitions.ReclaimSlot` does to a running
    instance."""

    id: str
    version: int | None = None
    change: Change | None = None
    requeue: tuple[int, str] | None = None


class Moved(StrEnum):
    """How a :meth:`SlotStore.move` went."""

    DONE = "done"
    SLOT_CHANGED = "slot_changed"  # the slot's holder is not the one expected
    TAKER_GONE = "taker_gone"  # the taker is not queued, holds a slot, or is gone
    GIVER_CHANGED = "giver_changed"  # the giver changed since it was read


class SlotStore(Protocol):
    """The slots and lines of limited workflows (see
    :mod:`lambda_workflows.engine.instances.slots`), kept beside the instances: each write may
    change an instance record with them, atomically.
    Built by the runtime over the same storage as its :class:`InstanceStore`."""

    def enqueue(self, record: InstanceRecord, group: int, change: Change) -> InstanceRecord | None:
        """Put ``record`` in the line of ``group`` and write ``change`` to it, in one atomic
        write, if its version is still ``record.version`` and it holds no slot; the new
        record, or None when it changed (read it again)."""
        ...

    def join(self, workflow: str, group: int, key: str) -> None:
        """Put ``key`` in the line (a new instance, before it is written)."""
        ...

    def leave(self, workflow: str, group: int, key: str) -> None:
        """Take ``key`` out of the line (it was never created, or left it)."""
        ...

    def waiting(self, workflow: str, group: int, limit: int) -> list[str]:
        """The first ``limit`` keys of the line, oldest first (a strongly consistent read)."""
        ...

    def ahead(self, workflow: str, group: int, key: str) -> int:
        """How many are in line before ``key``."""
        ...

    def holders(self, workflow: str, slots: Sequence[int]) -> list[Holder]:
        """The held slots among ``slots`` (strongly consistent)."""
        ...

    def move(
        self,
        workflow: str,
        slot: int,
        giver: Giver | None,
        taker: Taker | None,
        check_at: float,
    ) -> Moved:
        """In one atomic write: ``slot`` goes from ``giver`` (None: it must be free) to
        ``taker`` (None: it is freed), with the instances' changes; ``check_at`` is when to
        look at the new holder. Nothing is written unless every condition holds."""
        ...

    def recheck(self, workflow: str, holder: Holder, check_at: float) -> None:
        """Look at ``holder`` again after ``check_at`` (if it still holds the slot)."""
        ...


# --- the recurring schedules' firings (see lambda_workflows.engine.instances.firing_recovery)
# ---------


@immutable
class FiringWatermarks:
    """The ledger as read: each series' watermark (epoch seconds), and the ledger's version
    (0: never written), which a write must still find."""

    through: Mapping[str, float]
    version: int = 0


class ScheduleStore(Protocol):
    """The firing ledger of the recurring schedules: where the sweep keeps its watermarks, and
    what tells a started firing from a lost one (see
    :mod:`lambda_workflows.engine.instances.firing_recovery`)."""

    def read(self) -> FiringWatermarks:
        """The watermarks as they are now (empty, version 0, before the first write)."""
        ...

    def write(self, through: Mapping[str, float], read: FiringWatermarks) -> bool:
        """Replace the watermarks by ``through`` if the ledger is still as ``read`` found it;
        False when another run wrote it first (nothing is written)."""
        ...

    def started(self, refs: Sequence[InstanceRef]) -> set[InstanceRef]:
        """Which of ``refs`` were created: live instances, and deleted ones (tombstones)."""
        ...
