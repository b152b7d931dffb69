"""Every legal change of an instance's status, and what each one writes, in one place.

An instance moves only through the transitions below. The runner and the instance service build a
transition and hand it to :meth:`InstanceStore.update`, which writes the :class:`Change` it yields,
conditional on the version the decision was taken on (see
:mod:`lambda_workflows.engine.instances.advance` for why that loses no wake-up). Creation, leases
and events are single conditional writes of the store itself (their rules are in the store's port,
:mod:`lambda_workflows.engine.instances.ports`), listed here so the whole machine reads in one table
(each capitalised transition is a class of this module).

=====================  ========================  ===================  =============================
transition             from                      to                   by, and its precondition
=====================  ========================  ===================  =============================
create                 (nothing)                 queued               API; the id is free
lease                  queued, waiting, running  running              runner; lease free, expired
                       waitingForPause           waitingForPause      or an earlier delivery's of
                                                                      its message
release                any                       (unchanged)          runner; it holds the lease
event                  not finished              (unchanged)          API; version unchanged
Finish                 queued, running,          complete, errored    runner; run() returned/raised
                       waiting, waitingForPause
StartRollback          running                   running (rollback)   runner; run() raised and
                                                                      steps registered rollbacks
EndRollback            running (rollback)        errored, terminated  runner; the rollbacks are
                                                                      over
Wait                   queued, running, waiting  waiting              runner; a sleep, retry delay
                                                                      or event wait is pending
Yield                  running                   running              runner; out of time or
                                                                      passes, work re-posted
Settle                 paused, finished          (unchanged)          runner; lets the lease go
QueueForSlot           queued, waiting, running  queued               runner; its workflow's
                                                                      concurrency slots are taken
GrantSlot              queued                    queued (with slot)   runner, sweep; a slot is
                                                                      free (engine.slots)
ReleaseSlot            not running               (unchanged)          runner; it holds a slot
ReclaimSlot            running, waitingForPause  queued, paused       runner, sweep; its lease
                                                                      expired holding a slot
Park                   running                   (unchanged); queued  runner; the instance's version
                                                 if it held a slot    is not registered
                       queued, waiting           (unchanged)          runner, in place of queuing it
                                                                      for a slot (engine.slots)
Pause                  queued, running,          paused               API, or the runner when it
                       waiting, waitingForPause                       stops (nothing running)
                       running (leased)          waitingForPause      API; a runner is busy
Resume                 paused                    queued               API; sleeps shift by the
                       waitingForPause           running              pause / the pause is undone
Terminate              not finished              terminated           API
TerminateWithRollback  not finished, not         running (rollback)   API; terminate(rollback=
                       rolling back                                   True), a runner is posted
Restart                any                       queued               API; a new generation
delete                 finished (Terminate       (removed)            API; version unchanged
                       first)                                         (see the store's port)
=====================  ========================  ===================  =============================

A runner's Finish, Wait, Yield, Park or Pause may be written without a lease, in its place (see
:mod:`lambda_workflows.engine.instances.lazy_lease`): conditional on the version the runner loaded
and on no live lease, so it moves the instance straight from ``queued`` or ``waiting``.

*Running (rollback)* is not a status of its own: the instance is ``running`` (``waiting`` during a
rollback's retry delay; it can be paused) with ``rollback`` set on its record, which makes a runner
replay in rollback mode (see :mod:`lambda_workflows.engine.replay.operations.rollback`) and end it
as that rollback says. A plain terminate still stops it at once.

Finished (complete, errored, terminated) is final except for restart. A transition asked of
a status it does not leave raises :class:`~lambda_workflows.engine.errors.InvalidTransition` when
the caller must be told (terminating a finished instance), or yields no change when the instance
is already where the caller wants it (pausing a paused instance).
"""

from __future__ import annotations

import dataclasses
from dataclasses import fields
from typing import Any, Protocol

from lambda_workflows.engine.errors import TERMINATED_WITH_ROLLBACK, InvalidTransition
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import (
    FINISHED,
    RUNNABLE,
    ErrorInfo,
    InstanceRecord,
    InstanceStatus,
    RollbackInfo,
)

from .recovery import QUEUE_GRACE


class _Keep:
    """The value of a :class:`Change` field that the change leaves as it is."""

    _instance: _Keep | None = None

    def __new__(cls) -> _Keep:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "KEEP"


KEEP = _Keep()


@immutable(kw_only=True)
class Change:
    """What a transition writes to the instance item: each field is a new value, ``None``
    to remove it, or :data:`KEEP` to leave it. ``version`` is always bumped by the store, and
    ``release`` drops the lease (owner and expiry). A misspelt field is a type error.
    """

    status: InstanceStatus | _Keep = KEEP
    generation: int | _Keep = KEEP
    updated_at: float | _Keep = KEEP
    finished_at: float | _Keep | None = KEEP
    expires_at: float | _Keep | None = KEEP
    output: str | _Keep | None = KEEP
    error: ErrorInfo | _Keep | None = KEEP
    wake_at: float | _Keep | None = KEEP
    paused_at: float | _Keep | None = KEEP
    pauses: tuple[tuple[float, float], ...] | _Keep = KEEP
    due_at: float | _Keep | None = KEEP
    rollback: RollbackInfo | _Keep | None = KEEP
    workflow_version: str | _Keep = KEEP
    status_reason: str | _Keep | None = KEEP
    slot: int | _Keep | None = KEEP
    started_at: float | _Keep | None = KEEP
    invocations: int | _Keep = KEEP
    release: bool = False

    def values(self) -> dict[str, Any]:
        """The fields this change sets or removes (None = remove), lease fields included."""
        found = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "release" and getattr(self, f.name) is not KEEP
        }
        if self.release:
            found |= {"lease_owner": None, "lease_expires_at": None, "lease_delivery": None}
        return found

    def applied(self, record: InstanceRecord) -> InstanceRecord:
        """``record`` with this change made and its version bumped (the in-memory write)."""
        return dataclasses.replace(record, **self.values(), version=record.version + 1)


class Transition(Protocol):
    """A decision about one instance, taken on the record as it was read."""

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        """The change to write, or None when the instance is already where it should be.

        Raises:
            InvalidTransition: the instance's status does not allow it.
        """
        ...


def _finished(record: InstanceRecord, action: str) -> InvalidTransition:
    return InvalidTransition(
        f"instance '{record.id}' is already {record.status}; finished instances cannot be "
        f"{action} (restart it to run it again)"
    )


# --- the runner's transitions --------------------------------------------------------------


def _ended(status: InstanceStatus, now: float, retention: float, **fields: Any) -> Change:
    """The runner's last write of an instance that ends ``status`` at ``now``: no wake-up, off
    the due index, kept ``retention`` seconds, the lease let go."""
    return Change(
        status=status,
        wake_at=None,
        finished_at=now,
        expires_at=now + retention,
        due_at=None,
        release=True,
        **fields,
    )


@immutable
class Finish:
    """run() returned (complete, with ``output``) or failed (errored, with ``error``)."""

    status: InstanceStatus
    retention_seconds: float
    output: str | None = None
    error: ErrorInfo | None = None

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        if self.status not in (InstanceStatus.COMPLETE, InstanceStatus.ERRORED):
            raise ValueError(
                f"a runner finishes an instance complete or errored, not {self.status}"
            )
        return _ended(
            self.status, now, self.retention_seconds, output=self.output, error=self.error
        )


@immutable
class StartRollback:
    """run() raised with rollbacks registered: the failure is recorded on the instance, which
    stays running, and the runner keeps its lease to run the rollbacks (in a new pass)."""

    error: ErrorInfo

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        if record.status is not InstanceStatus.RUNNING or record.rollback is not None:
            raise InvalidTransition(
                f"instance '{record.id}' is {record.status}"
                f"{' and already rolling back' if record.rollback else ''}; only a running "
                "instance starts rolling back"
            )
        return Change(rollback=RollbackInfo(self.error, InstanceStatus.ERRORED), updated_at=now)


@immutable
class EndRollback:
    """The rollbacks are over: the instance ends as its rollback says (errored with the
    failure, or terminated), with how the chain went."""

    rollback: RollbackInfo
    retention_seconds: float

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        ends = self.rollback.ends_as
        if ends not in (InstanceStatus.ERRORED, InstanceStatus.TERMINATED):
            raise ValueError(f"rollbacks end an instance errored or terminated, not {ends}")
        error = self.rollback.cause if ends is InstanceStatus.ERRORED else None
        return _ended(ends, now, self.retention_seconds, error=error, rollback=self.rollback)


@immutable
class Wait:
    """run() must wait until ``wake_at`` (sleep, retry delay, event-wait timeout)."""

    wake_at: float

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        return Change(
            status=InstanceStatus.WAITING, wake_at=self.wake_at, due_at=self.wake_at, release=True
        )


@immutable
class Yield:
    """The runner stops early (time or passes used up) after posting the work again."""

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        return Change(status=InstanceStatus.RUNNING, due_at=now + QUEUE_GRACE, release=True)


@immutable
class Park:
    """The instance's workflow version is not registered: it is not replayed, not failed. It
    keeps its status, says why (``status_reason``) and is due again ``retry`` seconds later, so
    the recovery sweep posts it once more and it continues once that version is deployed.

    A parked instance holds no concurrency slot (it cannot run, and would keep an instance
    that can from running): one that held a slot is ``queued`` instead, and the runner hands
    the slot on (see :mod:`lambda_workflows.engine.instances.slots`)."""

    reason: str
    retry: float

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        change = Change(status_reason=self.reason, due_at=now + self.retry, release=True)
        if record.slot is not None:
            return dataclasses.replace(change, status=InstanceStatus.QUEUED, updated_at=now)
        return change


@immutable
class Settle:
    """A paused or finished instance the runner found: only its lease is let go."""

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        return Change(release=True)


# --- a workflow's concurrency slots (see lambda_workflows.engine.instances.slots) ---

WAITING_FOR_SLOT = "waiting for a slot"
"""The status reason of an instance queued behind its workflow's ``concurrency`` limit."""


@immutable
class QueueForSlot:
    """No slot of its workflow's concurrency limit is free for it: the instance is queued and
    says so. It is not due: the release of a slot (or the sweep) starts it, oldest first."""

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        if record.slot is not None or record.status not in RUNNABLE or record.leased(now):
            raise InvalidTransition(
                f"instance '{record.id}' is {record.status}; only an instance that holds no "
                "slot and no lease queues for one"
            )
        return Change(status=InstanceStatus.QUEUED, status_reason=WAITING_FOR_SLOT, due_at=None)


@immutable
class GrantSlot:
    """A queued instance gets ``slot``: due at ``due_at`` (its work message starts it by then,
    or the recovery sweep posts it again)."""

    slot: int
    due_at: float

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        if record.slot is not None or record.status is not InstanceStatus.QUEUED:
            raise InvalidTransition(
                f"instance '{record.id}' is {record.status}; a slot goes to a queued instance "
                "that holds none"
            )
        return Change(slot=self.slot, status_reason=None, due_at=self.due_at)


@immutable
class ReleaseSlot:
    """The instance stopped running (it finished, sleeps, waits, paused): its slot goes."""

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        return Change(slot=None)


@immutable
class ReclaimSlot:
    """The slot's holder is not running any more and nobody released it (its runner died and
    its lease expired): a running instance is queued for a slot again, one waiting for a
    pause is paused, any other just lets the slot go."""

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        if record.leased(now):
            raise InvalidTransition(f"instance '{record.id}' is leased; its slot is in use")
        if record.status is InstanceStatus.RUNNING:
            return Change(
                status=InstanceStatus.QUEUED,
                status_reason=WAITING_FOR_SLOT,
                due_at=None,
                slot=None,
                updated_at=now,
                release=True,
            )
        if record.status is InstanceStatus.WAITING_FOR_PAUSE:
            paused = Pause(by_runner=True).change(record, now) or Change(release=True)
            return dataclasses.replace(paused, slot=None)
        return Change(slot=None)


# --- the instance service's transitions (and the runner's pause) ---------------------------


@immutable
class Pause:
    """Pause now when no runner is busy (or by the runner itself, ``by_runner``), else ask
    the busy runner to pause when its running step is done (waitingForPause)."""

    by_runner: bool = False

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        if record.status in FINISHED:
            raise _finished(record, "paused")
        if record.status is InstanceStatus.PAUSED:
            return None
        if not self.by_runner:
            if record.status is InstanceStatus.WAITING_FOR_PAUSE:
                return None
            if record.leased(now):
                return Change(status=InstanceStatus.WAITING_FOR_PAUSE, updated_at=now)
        return Change(
            status=InstanceStatus.PAUSED,
            paused_at=now,
            due_at=None,
            updated_at=now,
            release=self.by_runner,
        )


@immutable
class Resume:
    """Undo a pause: a paused instance is queued again (its sleeps shift by the pause); a
    pause that has not taken effect yet is simply withdrawn."""

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        if record.status is InstanceStatus.WAITING_FOR_PAUSE:
            return Change(status=InstanceStatus.RUNNING, updated_at=now)
        if record.status in FINISHED:
            raise _finished(record, "resumed")
        if record.status is not InstanceStatus.PAUSED:
            return None
        return Change(
            status=InstanceStatus.QUEUED,
            paused_at=None,
            pauses=(*record.pauses, (record.paused_at or now, now)),
            due_at=now + QUEUE_GRACE,
            updated_at=now,
        )


@immutable
class Terminate:
    """Stop the instance for good."""

    retention_seconds: float

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        if record.status in FINISHED:
            raise _finished(record, "terminated")
        return Change(
            status=InstanceStatus.TERMINATED,
            finished_at=now,
            expires_at=now + self.retention_seconds,
            wake_at=None,
            paused_at=None,
            due_at=None,
            updated_at=now,
        )


TERMINATION = ErrorInfo(TERMINATED_WITH_ROLLBACK, "Instance terminated during rollback")
"""What the rollbacks of ``terminate(rollback=True)`` receive as ``error`` (Cloudflare's)."""


@immutable
class TerminateWithRollback:
    """Terminate once the rollbacks have run: the instance runs again (a pause is undone) so
    a runner replays ``run()`` to find them, runs them, then ends it terminated. An instance
    already rolling back goes on as it is."""

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        if record.status in FINISHED:
            raise _finished(record, "terminated")
        if record.rollback is not None:
            return None
        pauses = record.pauses
        if record.status is InstanceStatus.PAUSED:
            pauses = (*pauses, (record.paused_at or now, now))
        return Change(
            status=InstanceStatus.RUNNING,
            rollback=RollbackInfo(TERMINATION, InstanceStatus.TERMINATED),
            wake_at=None,
            paused_at=None,
            pauses=pauses,
            due_at=now + QUEUE_GRACE,
            updated_at=now,
        )


@immutable
class Restart:
    """Run again from the top, same id and params: a new generation of the journal
    (``generation``, one the restart claimed; default the next one), which a restart from a
    step has already seeded with the results it keeps."""

    generation: int | None = None
    workflow_version: str | None = None  # the newest registered: a restart runs on it

    def change(self, record: InstanceRecord, now: float) -> Change | None:
        if self.generation is not None and self.generation <= record.generation:
            raise ValueError(
                f"a restart moves to a later generation than {record.generation}, "
                f"not {self.generation}"
            )
        return Change(
            generation=record.generation + 1 if self.generation is None else self.generation,
            status=InstanceStatus.QUEUED,
            output=None,
            error=None,
            finished_at=None,
            expires_at=None,
            wake_at=None,
            paused_at=None,
            pauses=(),
            due_at=now + QUEUE_GRACE,
            updated_at=now,
            rollback=None,
            workflow_version=self.workflow_version or record.workflow_version,
            status_reason=None,
        )
