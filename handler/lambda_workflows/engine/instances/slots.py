"""A workflow's concurrency limit: at most N of its instances ``running``, the others queued
and started oldest first, as slots free.

The slots are N separate items, each holding at most one instance (its ``holder``), and an
instance that holds one says so (``slot`` on its record); the two always change together, in
one atomic write of the store. There is no counter: taking a free slot, handing one over and
freeing one write that slot's item and the instances concerned, never a shared item, so for N
up to 10,000 no single item takes every acquire and release (on DynamoDB each slot is its own
partition).

Slots and the line of waiting instances are split into groups of at most
:data:`GROUP_SIZE` slots: slot ``k`` belongs to group ``k mod G`` (``G = ceil(N / 100)``), an
instance to the group its id hashes to. An instance waits in its group's line and takes one of
its group's slots; reading a group's slots is one batch read, and its line (ordered by
creation time, then id) is one partition. With N ≤ 100 there is one group: starts are strictly
oldest first. With more, each group is oldest first, and the load spreads over G lines.

The rules (each step is one conditional, atomic write of the slot store, a port of its own:
:class:`~lambda_workflows.engine.instances.ports.SlotStore`, which the runtime builds and hands to
the service and the runner):

- Creating an instance of a limited workflow puts it in its group's line first, then writes
  it (queued, "waiting for a slot").
- A runner given an instance that holds no slot queues it (:class:`QueueForSlot`: it is put in
  the line, if it was not), then *pumps* the group: it grants each free slot to the oldest
  instance in line (:class:`GrantSlot`, the instance leaves the line) and posts its work
  message. When the runner's own instance got one, it runs it now; otherwise the message is
  done, and the instance waits for a release.
- An instance's lease can only be taken while it holds a slot, so it only becomes ``running``
  with one: never more than N are running.
- When an instance stops running (finished, sleeping, waiting for an event or a child,
  paused), the runner releases its slot: it hands it directly to the oldest instance in line,
  or frees it when nobody waits.
- An instance whose workflow version is not deployed (it is parked, see
  :class:`~lambda_workflows.engine.instances.transitions.Park`) holds no slot and no place in line:
  the runner given one parks it instead of queuing it, and one that held a slot gives it up as it
  parks. Once its version is deployed again, its next message queues it like any other.
- A slot whose holder's runner died is reclaimed once the holder's lease expired
  (:class:`ReclaimSlot`): the holder is queued again (first in line: it is older) and the slot
  goes to the oldest waiting. The slot's ``check_at`` says when to look at its holder; the
  recovery sweep looks at every group.

No lost wake-up: an instance queues itself, *then* looks for a free slot; a releaser that saw
nobody in line frees the slot, *then* looks at the line again (and pumps when someone is
there). Both write before they read, and reads are strongly consistent, so at least one of them
sees the other: a free slot never stays free while an instance waits. The recovery sweep pumps
every group as well (free slots, reclaimed ones), which also repairs what an infrastructure
failure interrupted. An infrastructure error while queuing, granting or releasing is never a
step failure: the work message is retried, and every write is conditional, so a retry after an
unknown outcome finds it done or does it once.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.concurrency import limit_of
from lambda_workflows.engine.errors import InfrastructureError, InstanceNotFound
from lambda_workflows.engine.model import FINISHED, InstanceRecord, InstanceRef, InstanceStatus
from lambda_workflows.engine.versions import PARK_RETRY_SECONDS, is_parked, not_deployed

from .ports import (
    BatchCreateResult,
    Giver,
    Holder,
    InstanceStore,
    Moved,
    SlotStore,
    Taker,
    WorkQueue,
    id_in,
)
from .recovery import QUEUE_GRACE
from .transitions import (
    WAITING_FOR_SLOT,
    Change,
    GrantSlot,
    Park,
    QueueForSlot,
    ReclaimSlot,
    ReleaseSlot,
)

log = logging.getLogger("lambda_workflows.slots")

GROUP_SIZE = 100
"""Slots per group at most: one group's slots are read in one batch read."""
_SPARE = 3  # waiters read beyond the free slots, for the ones that left the line meanwhile
_TRIES = 5
_HELD = frozenset({InstanceStatus.RUNNING, InstanceStatus.WAITING_FOR_PAUSE})


def groups(limit: int) -> int:
    """How many groups a limit of ``limit`` slots is split into."""
    return max(1, math.ceil(limit / GROUP_SIZE))


def group_of(instance_id: str, limit: int) -> int:
    """The group an instance waits in (stable: derived from its id)."""
    return zlib.crc32(instance_id.encode()) % groups(limit)


def slots_of(group: int, limit: int) -> range:
    """The slots of ``group``."""
    return range(group, limit, groups(limit))


def line_key(record: InstanceRecord) -> str:
    """An instance's place in line: creation time (milliseconds), then id."""
    return f"{int(record.created_at * 1000):017d}#{record.id}"


class Limits(Mapping[str, int]):
    """The concurrency limit of each registered workflow that declares one, read from the
    registry at each use (a registry may change while the runtime runs: ``lambda-workflows dev``,
    the test kit). Pinned older versions (``name@version``) follow their newest class."""

    def __init__(self, workflows: Mapping[str, Any]) -> None:
        self._workflows = workflows

    def __getitem__(self, name: str) -> int:
        limit = limit_of(self._workflows.get(name)) if "@" not in name else None
        if limit is None:
            raise KeyError(name)
        return limit

    def __iter__(self) -> Iterator[str]:
        return (name for name in list(self._workflows) if name in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class SlotGate:
    """The concurrency limits of the registered workflows, enforced on the slot store
    (``slot_items``) beside the instance store."""

    def __init__(
        self,
        limits: Mapping[str, int],
        store: InstanceStore,
        slot_items: SlotStore,
        queue: WorkQueue,
        clock: Clock,
        workflows: Mapping[str, Any] | None = None,
    ) -> None:
        self.limits = limits
        self.store = store
        self.slot_items = slot_items
        self.queue = queue
        self.clock = clock
        self._workflows = workflows or {}  # the registry: whose versions are deployed

    @classmethod
    def of(
        cls,
        workflows: Any,
        store: InstanceStore,
        queue: WorkQueue,
        clock: Clock,
        slot_store: SlotStore | None,
    ) -> SlotGate | None:
        """The gate of ``workflows`` (a mapping of classes), or None without a slot store (no
        limit is enforced then). A workflow without a limit never pays a call for it: the gate
        looks at its class only."""
        if not isinstance(workflows, Mapping) or slot_store is None:
            return None
        return cls(Limits(workflows), store, slot_store, queue, clock, workflows)

    def limited(self, workflow: str) -> bool:
        """True when ``workflow`` declares a concurrency limit."""
        return workflow in self.limits

    # --- the runner's side ----------------------------------------------------------------

    def lease(
        self, ref: InstanceRef, owner: str, now: float, expires_at: float, *, delivery: int = 1
    ) -> InstanceRecord | None:
        """The instance's lease (for ``owner``'s ``delivery``, as
        :meth:`InstanceStore.acquire_lease` takes it), taken only while it holds a slot: at
        once when it does (granted by a release, or it was running), else after queuing it and
        pumping its group. None: it waits in line (or is not runnable, or leased by someone
        else)."""
        leased = self.store.acquire_lease(
            ref, owner, now, expires_at, needs_slot=True, delivery=delivery
        )
        if leased is not None or not self.admit(ref):
            return leased
        return self.store.acquire_lease(
            ref, owner, now, expires_at, needs_slot=True, delivery=delivery
        )

    def admit(self, ref: InstanceRef) -> bool:
        """Get the instance a slot if it can have one now; True when it holds one."""
        limit = self.limits[ref.workflow]
        for _ in range(_TRIES):
            now = self.clock.time()
            record = self.store.get(ref)
            if record.slot is not None:
                if record.status in FINISHED or record.status is InstanceStatus.PAUSED:
                    self.release(record)  # a release that failed before: done now
                    return False
                return True
            if record.status in FINISHED or record.status is InstanceStatus.PAUSED:
                return False
            if record.leased(now):
                return False  # another runner has it (it holds a slot, or will queue it)
            group = group_of(ref.id, limit)
            if is_parked(self._workflows, record.workflow, record.workflow_version):
                if self._park(record, group) is None:
                    continue  # it changed meanwhile: look again
                return False
            change = QueueForSlot().change(record, now) or Change()
            if self.slot_items.enqueue(record, group, change) is None:
                continue  # it changed meanwhile: look again
            return ref.id in self.pump(ref.workflow, group, caller=ref.id)
        return False  # changing fast: its next message (or the sweep) tries again

    def _park(self, record: InstanceRecord, group: int) -> InstanceRecord | None:
        """Park an instance whose version is not deployed instead of queuing it: out of line
        (it joined at creation), and due again later (the record, or None if it changed)."""
        self.slot_items.leave(record.workflow, group, line_key(record))
        reason = not_deployed(record.workflow, record.workflow_version)
        change = Park(reason, PARK_RETRY_SECONDS).change(record, self.clock.time())
        return self.store.update(record.ref, record.version, change or Change())

    def release(self, record: InstanceRecord) -> None:
        """Hand ``record``'s slot to the oldest instance in line, or free it.

        Only once the instance stopped running: a runner that took it since keeps the slot.
        """
        for _ in range(_TRIES):
            if record.slot is None or record.status in _HELD:
                return
            moved = self._hand_over(record)
            if moved is not Moved.GIVER_CHANGED:
                return
            try:
                record = self.store.get(record.ref)
            except InstanceNotFound:
                return  # deleted: the slot is reclaimed (its holder is gone)

    def _hand_over(self, record: InstanceRecord) -> Moved:
        assert record.slot is not None
        giver = Giver(record.id, record.version, ReleaseSlot().change(record, self.clock.time()))
        limit = self.limits.get(record.workflow)
        if limit is None or record.slot >= limit:  # the limit was lowered or removed since
            return self.slot_items.move(
                record.workflow, record.slot, giver, None, self.clock.time()
            )
        group = group_of(record.id, limit)
        for key in self.slot_items.waiting(record.workflow, group, 1 + _SPARE):
            if id_in(key) == record.id:
                # a stale place of its own (a create retried later joins again before it
                # finds the id taken): never the taker, and a transaction may not name the
                # instance twice (DynamoDB refuses it outright)
                self.slot_items.leave(record.workflow, group, key)
                continue
            moved = self._grant(record.workflow, record.slot, giver, group, key)
            if moved is Moved.DONE:
                self._post(record.workflow, [id_in(key)], None)
            if moved is not Moved.TAKER_GONE:
                return moved
        moved = self.slot_items.move(record.workflow, record.slot, giver, None, self.clock.time())
        if moved is Moved.DONE and self.slot_items.waiting(record.workflow, group, 1):
            self.pump(record.workflow, group)  # someone queued as we freed it
        return moved

    def _grant(self, workflow: str, slot: int, giver: Giver | None, group: int, key: str) -> Moved:
        """Move ``slot`` to the instance ``key`` waits for, and post its work message; one
        that left the line (paused, terminated, deleted, started) is taken out of it."""
        now = self.clock.time()
        change = GrantSlot(slot, now + QUEUE_GRACE).change(_queued(workflow, key), now)
        assert change is not None
        taker = Taker(group, key, change)
        moved = self.slot_items.move(workflow, slot, giver, taker, now + QUEUE_GRACE)
        if moved is Moved.TAKER_GONE:
            self.slot_items.leave(workflow, group, key)
        return moved

    # --- pumping: free slots to the oldest waiting ----------------------------------------

    def pump(self, workflow: str, group: int, caller: str | None = None) -> list[str]:
        """Grant the group's free (and reclaimable) slots to the oldest instances in line,
        posting each one's work message (but ``caller``'s, whose runner goes on with it);
        the ids granted. Stops at the first slot another pump took meanwhile."""
        limit = self.limits[workflow]
        now = self.clock.time()
        mine = slots_of(group, limit)
        held = self.slot_items.holders(workflow, mine)
        taken = {h.slot for h in held}
        free = [k for k in mine if k not in taken]
        free += [h.slot for h in held if h.check_at < now and self._reclaim(workflow, h)]
        if not free:
            return []
        granted: list[str] = []
        line = iter(self.slot_items.waiting(workflow, group, len(free) + _SPARE))
        for slot in free:
            for key in line:
                moved = self._grant(workflow, slot, None, group, key)
                if moved is Moved.DONE:
                    granted.append(id_in(key))
                    break
                if moved is not Moved.TAKER_GONE:
                    return self._post(workflow, granted, caller)
            else:
                break
        return self._post(workflow, granted, caller)

    def _post(self, workflow: str, granted: list[str], caller: str | None) -> list[str]:
        others = [InstanceRef(workflow, i) for i in granted if i != caller]
        if others:
            try:
                self.queue.send_many(others)
            except InfrastructureError as exc:  # they are due: the sweep posts them
                log.warning("could not post %d granted instance(s): %s", len(others), exc)
        return granted

    def _reclaim(self, workflow: str, holder: Holder) -> bool:
        """Free a slot whose holder is not running any more; True when it is free now."""
        now = self.clock.time()
        try:
            record: InstanceRecord | None = self.store.get(InstanceRef(workflow, holder.id))
        except InstanceNotFound:
            record = None
        if record is None or record.slot != holder.slot:
            giver = Giver(holder.id)  # it holds the slot no more (or is gone)
        elif record.leased(now) or (record.due_at is not None and record.due_at > now):
            later = max(record.lease_expires_at or 0.0, record.due_at or 0.0)
            self.slot_items.recheck(workflow, holder, later)
            return False
        else:
            change = ReclaimSlot().change(record, now)
            requeue = None
            if change is not None and change.status is InstanceStatus.QUEUED:
                requeue = (group_of(record.id, self.limits[workflow]), line_key(record))
            giver = Giver(record.id, record.version, change, requeue)
        moved = self.slot_items.move(workflow, holder.slot, giver, None, now)
        if moved is Moved.DONE:
            log.info("slot %d of %s reclaimed from %s", holder.slot, workflow, holder.id)
        return moved is Moved.DONE

    # --- the sweep and the status ---------------------------------------------------------

    def reconcile(self) -> int:
        """Pump every group of every limited workflow (the recovery sweep): free slots and
        reclaimable ones go to waiting instances. How many were granted."""
        granted = 0
        for workflow, limit in self.limits.items():
            for group in range(groups(limit)):
                granted += len(self.pump(workflow, group))
        return granted

    def reason(self, record: InstanceRecord) -> str | None:
        """The status reason of a waiting instance, with its place in line."""
        if record.status_reason != WAITING_FOR_SLOT or record.workflow not in self.limits:
            return record.status_reason  # none, or another reason: parked, say
        if record.status is not InstanceStatus.QUEUED or record.slot is not None:
            return record.status_reason
        limit = self.limits[record.workflow]
        group = group_of(record.id, limit)
        ahead = self.slot_items.ahead(record.workflow, group, line_key(record))
        return (
            f"{record.status_reason}: position {ahead + 1} in line "
            f"(at most {limit} of {record.workflow} run at once)"
        )

    # --- creating ------------------------------------------------------------------------

    def create(self, record: InstanceRecord) -> InstanceRecord:
        """Write a new instance of a limited workflow: in line first, then queued "waiting
        for a slot", so that starts follow creation even when runners pick up the first
        messages in another order. Raises InstanceAlreadyExists; its place in line is then
        left to the next pump, which finds no such instance waiting and drops it."""
        waiting = self.in_line(record)
        self.store.create(waiting)
        return waiting

    def in_line(self, record: InstanceRecord) -> InstanceRecord:
        """Put a new instance of a limited workflow in line, before it is written: ``record``
        as it must be written, "waiting for a slot" (a child's creation, which its parent's
        step writes itself: see :mod:`lambda_workflows.engine.instances.children`)."""
        waiting = dataclasses.replace(record, status_reason=WAITING_FOR_SLOT)
        self._join(waiting)
        return waiting

    def create_many(self, records: Sequence[InstanceRecord]) -> BatchCreateResult:
        """:meth:`create` for a batch: every one in line, then the batch written."""
        waiting = [dataclasses.replace(r, status_reason=WAITING_FOR_SLOT) for r in records]
        for record in waiting:
            self._join(record)
        return self.store.create_many(waiting)

    def _join(self, record: InstanceRecord) -> None:
        group = group_of(record.id, self.limits[record.workflow])
        self.slot_items.join(record.workflow, group, line_key(record))


def _queued(workflow: str, key: str) -> InstanceRecord:
    """A stand-in record of an instance in line, to build its :class:`GrantSlot` change (the
    store checks the real one: queued, holding no slot)."""
    return InstanceRecord(workflow, id_in(key), InstanceStatus.QUEUED, "", 0.0)
