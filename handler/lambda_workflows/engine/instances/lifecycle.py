"""Lifecycle events: what each change of an instance's status (and, optionally, each step's
outcome) tells the systems around the stack.

An instance's record changes many times without changing status (a lease renewed, an event
buffered, a runner yielding); a lifecycle event is published only when its status moves, and
is named after what the move means to an observer, not after the status alone: a paused
instance going back to ``queued`` was *resumed*, a waiting one taken by a runner *started*
again. The table of those names is :func:`instance_event_type`; docs/events.md is its
user-facing form, with the ``detail`` of each event.

Every event carries an ``id`` derived from the write that caused it (the instance item's
``version``, bumped by every write, with its creation time, which tells apart two instances
that had the same id at different times; a step's journal key for a step event), so a
re-delivered change publishes the same id and a consumer drops what it has seen.

Pure: the records come in decoded (:mod:`lambda_workflows.aws.table_stream` reads them from
DynamoDB's stream), the events go out through :mod:`lambda_workflows.aws.eventbridge`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from lambda_workflows.engine.clock import iso
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import (
    EntryKind,
    ErrorInfo,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    JournalEntry,
)

__all__ = [
    "SOURCE",
    "TEXT_LIMIT",
    "LifecycleEvent",
    "LifecycleType",
    "instance_changed",
    "instance_changes",
    "instance_event_type",
    "step_recorded",
]

SOURCE = "lambda-workflows"
"""The EventBridge ``source`` of every lifecycle event (``aws.`` is AWS's own prefix)."""

TEXT_LIMIT = 4096
"""Characters of an error message or status reason an event carries at most (the rest is cut,
ending in "…"): an event's size stays a few KB, well under EventBridge's 256 KB, whatever a
workflow raised. The whole text is in the instance's status."""


class LifecycleType(StrEnum):
    """What happened: an event's ``detail-type`` (and ``detail.type``), Cloudflare's names."""

    QUEUED = "instance.queued"
    STARTED = "instance.started"
    PAUSED = "instance.paused"
    RESUMED = "instance.resumed"
    WAITING = "instance.waiting"
    ERRORED = "instance.errored"
    TERMINATED = "instance.terminated"
    COMPLETE = "instance.complete"
    STEP_COMPLETED = "step.completed"
    STEP_FAILED = "step.failed"


# The event of arriving in a status from another one (resumes and restarts aside).
_ENTERED = {
    InstanceStatus.QUEUED: LifecycleType.QUEUED,
    InstanceStatus.RUNNING: LifecycleType.STARTED,
    InstanceStatus.WAITING: LifecycleType.WAITING,
    InstanceStatus.PAUSED: LifecycleType.PAUSED,
    InstanceStatus.ERRORED: LifecycleType.ERRORED,
    InstanceStatus.TERMINATED: LifecycleType.TERMINATED,
    InstanceStatus.COMPLETE: LifecycleType.COMPLETE,
}
_PAUSED = frozenset({InstanceStatus.PAUSED, InstanceStatus.WAITING_FOR_PAUSE})
_RESUMED_TO = frozenset({InstanceStatus.QUEUED, InstanceStatus.RUNNING})


def instance_event_type(
    before: InstanceStatus | None, after: InstanceStatus, *, restarted: bool = False
) -> LifecycleType | None:
    """The event of an instance moving from ``before`` to ``after`` (None: nothing to publish).

    Args:
        before: its status before the write; None when the write created it.
        after: its status after the write.
        restarted: the write started a new run (a restart: a new journal generation), which
            is a new ``queued`` even from ``queued``.

    ``waitingForPause`` publishes nothing (the pause is asked for, not yet in effect: the
    runner's stop publishes ``paused``), nor does a write that leaves the status as it was.
    """
    if before is None or restarted:
        return _ENTERED.get(after)
    if before == after:
        return None
    if before in _PAUSED and after in _RESUMED_TO:
        return LifecycleType.RESUMED
    return _ENTERED.get(after)


@immutable
class LifecycleEvent:
    """One event to publish: its type, the instance it is about, when, and its ``detail``."""

    type: LifecycleType
    ref: InstanceRef
    at: float
    detail: dict[str, Any]

    @property
    def id(self) -> str:
        """The event's deduplication id (``detail.id``)."""
        return str(self.detail["id"])


def instance_changes(before: InstanceRecord | None, after: InstanceRecord) -> list[LifecycleEvent]:
    """The events of one write of an instance item, in order: a runner's pass that ran no step
    code (it took no lease: :mod:`lambda_workflows.engine.instances.lazy_lease`) and left the
    instance where it goes next publishes ``instance.started`` before that status's event, as a
    leased
    pass's two writes do (see :func:`instance_changed`)."""
    started = _passed_through(before, after)
    if started is None:
        changed = instance_changed(before, after)
        return [changed] if changed is not None else []
    # as if written in two: running (started), then where the pass left it, from running
    kind = instance_event_type(InstanceStatus.RUNNING, after.status)
    left = _event(kind, InstanceStatus.RUNNING, after.status, after) if kind else None
    return [started, left] if left is not None else [started]


def _passed_through(before: InstanceRecord | None, after: InstanceRecord) -> LifecycleEvent | None:
    """``instance.started`` for a runner's unleased write (it counted an invocation and moved
    the instance on from ``queued`` or ``waiting`` without ever setting it ``running``)."""
    if before is None or before.generation != after.generation:
        return None
    if after.invocations <= before.invocations or after.status is InstanceStatus.RUNNING:
        return None
    if before.status not in (InstanceStatus.QUEUED, InstanceStatus.WAITING):
        return None
    return _event(LifecycleType.STARTED, before.status, InstanceStatus.RUNNING, after, "/started")


def instance_changed(before: InstanceRecord | None, after: InstanceRecord) -> LifecycleEvent | None:
    """The event of one write of an instance item, from its record before and after the write
    (``before`` None: the write created it, or replaced a deleted instance's tombstone)."""
    previous = before.status if before is not None else None
    restarted = before is not None and before.generation != after.generation
    kind = instance_event_type(previous, after.status, restarted=restarted)
    if kind is None:
        return None
    return _event(kind, previous, after.status, after)


def _event(
    kind: LifecycleType,
    previous: InstanceStatus | None,
    status: InstanceStatus,
    after: InstanceRecord,
    suffix: str = "",
) -> LifecycleEvent:
    at = after.updated_at or after.created_at
    detail: dict[str, Any] = {
        "id": f"{after.workflow}/{after.id}/{int(after.created_at * 1000)}/v{after.version}"
        + suffix,
        "type": kind.value,
        "workflow": after.workflow,
        "instance_id": after.id,
        "status": status.value,
        "previous_status": previous.value if previous is not None else None,
        "version": after.version,
        "workflow_version": after.workflow_version,
        "timestamp": iso(at),
    }
    if status is InstanceStatus.ERRORED and after.error is not None:
        detail["error"] = _error(after.error)
    if status is after.status and after.status_reason is not None:
        detail["status_reason"] = _cut(after.status_reason)
    if after.parent is not None:
        detail["parent"] = after.parent.to_dict()
    return LifecycleEvent(kind, after.ref, at, detail)


def step_recorded(ref: InstanceRef, generation: int, entry: JournalEntry) -> LifecycleEvent | None:
    """The event of a journal entry: a step's final outcome (``step.completed`` or
    ``step.failed``); None for any other entry (a failed attempt to be retried, a sleep...)."""
    if entry.kind is not EntryKind.STEP:
        return None
    kind = LifecycleType.STEP_COMPLETED if entry.error is None else LifecycleType.STEP_FAILED
    detail: dict[str, Any] = {
        "id": f"{ref.workflow}/{ref.id}/g{generation}/{entry.key}",
        "type": kind.value,
        "workflow": ref.workflow,
        "instance_id": ref.id,
        "step": {"name": entry.name, "count": entry.count},
        "attempt": entry.attempt,
        "timestamp": iso(entry.at),
    }
    if entry.error is not None:
        detail["error"] = _error(entry.error)
    return LifecycleEvent(kind, ref, entry.at, detail)


def _error(error: ErrorInfo) -> dict[str, str]:
    return {"name": error.name, "message": _cut(error.message)}


def _cut(text: str) -> str:
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"
