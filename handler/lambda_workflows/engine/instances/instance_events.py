"""An instance's events, derived from what is already stored: what a subscription serves.

``instance.subscribe()``, ``GET …/subscribe`` and ``lambda-workflows instances watch`` show an
instance as a stream of events (status transitions, step attempts, outputs, errors, retries,
sleeps, waits, events received, rollbacks), the shape of Cloudflare's instance event
subscriptions. Nothing writes them: the runner's hot path stays one write per step. They are
read off the instance item, the journal and the events sent, on every read, by
:func:`instance_events`; the same stored state gives the same events in the same order.

**The order.** Each event has a position, :data:`Position`: first the time of the write that
made it known (a step's attempt is known once its outcome is recorded, so ``step.started``
comes with it, carrying the attempt's own start as its ``timestamp``), then, for writes at the
same instant (a virtual clock standing still, a retry without delay), a rank that keeps what
happens first first (a wait before the event it receives, the event before the wait's end, an
instance's end after its last step), then the step's call order. New writes are later, so
new events come after the ones already served and a position is a cursor that stays valid.
A sleep ends without a write: ``sleep.finished`` is known once its (pause-shifted) wake-up
time has passed, at that time.

**What it does not see.** Statuses the instance item does not keep a trace of: each return
to ``waiting`` and ``running`` between steps (``sleep.started``, ``wait.started`` and
``step.retrying`` say why it waits), and a step attempt in flight (its ``step.started`` comes
with its outcome). After a restart, the events are those of the new run, from
``instance.queued`` (the instance's creation time).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from enum import StrEnum
from typing import Any

from lambda_workflows.engine import codec
from lambda_workflows.engine.clock import iso
from lambda_workflows.engine.model import (
    CHILD_EVENT_PREFIX,
    FINISHED,
    REDACTED,
    EntryKind,
    ErrorInfo,
    EventRecord,
    InstanceRecord,
    JournalEntry,
)
from lambda_workflows.engine.replay.child_steps import child_of
from lambda_workflows.engine.replay.journal import base_key, shifted

from .ports import InstanceState

__all__ = [
    "OUTPUT_CAP",
    "EventType",
    "InstanceEvent",
    "Position",
    "instance_events",
]

OUTPUT_CAP = 64 * 1024
"""An output or payload over this many bytes of JSON is left out of its event (``null`` and
``output_truncated``); ``step_output()`` (``GET …/steps/{name}``) has it whole."""

Position = tuple[float, int, int, int, int, int, str]
"""Where an event is in an instance's order: (known at, phase, call position, rank, attempt,
which of an entry's events, digest of the step's key)."""


class EventType(StrEnum):
    """The types of an instance's events (Cloudflare's names where it has them)."""

    INSTANCE_QUEUED = "instance.queued"
    INSTANCE_STARTED = "instance.started"
    INSTANCE_PAUSED = "instance.paused"
    INSTANCE_RESUMED = "instance.resumed"
    INSTANCE_COMPLETE = "instance.complete"
    INSTANCE_ERRORED = "instance.errored"
    INSTANCE_TERMINATED = "instance.terminated"
    STEP_STARTED = "step.started"
    STEP_RETRYING = "step.retrying"
    STEP_COMPLETED = "step.completed"
    STEP_FAILED = "step.failed"
    SLEEP_STARTED = "sleep.started"
    SLEEP_FINISHED = "sleep.finished"
    WAIT_STARTED = "wait.started"
    EVENT_RECEIVED = "event.received"
    WAIT_COMPLETED = "wait.completed"
    WAIT_TIMED_OUT = "wait.timed_out"
    CHILD_STARTED = "child.started"
    CHILD_COMPLETED = "child.completed"
    CHILD_FAILED = "child.failed"
    ROLLBACK_STARTED = "rollback.started"
    ROLLBACK_RETRYING = "rollback.retrying"
    ROLLBACK_COMPLETED = "rollback.completed"
    ROLLBACK_FAILED = "rollback.failed"


class InstanceEvent(dict[str, Any]):
    """One event of an instance: ``{"type", "timestamp", "cursor", ...}`` and what its type
    carries (``step``, ``attempt``, ``output``, ``error``, ``event``, ...; see docs/events.md).
    Readable as a mapping or by attribute (``event.type``, ``event.cursor``)."""

    @property
    def type(self) -> str:
        """The event's type, e.g. ``step.completed``."""
        return str(self["type"])

    @property
    def timestamp(self) -> str:
        """When it happened: ISO 8601, UTC, milliseconds."""
        return str(self["timestamp"])

    @property
    def cursor(self) -> str:
        """Pass it back to subscribe again from the event after this one."""
        return str(self["cursor"])


# Events known at the same instant: the instance's start first and its end last (phases);
# in between, by the call position of their step, and for one step what happened first
# first (ranks): a wait, the event it receives, the wait's end.
_BEGIN, _STEPS, _FINISH = range(3)
_OPEN, _MIDDLE, _END = range(3)
_LAST_POSITION = 2**31  # a nested step (no call position) after the root steps of its instant
Derived = tuple[Position, dict[str, Any]]


def instance_events(state: InstanceState, now: float) -> list[Derived]:
    """Every event of the instance's current generation known at ``now``, in order, each
    with its position and its body (without a cursor)."""
    record = state.record
    waits = {base_key(e) for e in state.entries if e.kind is EntryKind.WAIT}
    consumers = {e.event_id: e for e in state.entries if e.event_id is not None}
    found = [*_lifecycle(record), *_received(state.events, consumers)]
    for entry in state.entries:
        found.extend(_from_entry(entry, base_key(entry) in waits))
    found.extend(_sleeps_over(state.entries, record, now))
    return sorted(found, key=lambda derived: derived[0])


def _instant(at: float, phase: int, sub: int = 0) -> Position:
    """The position of an instance's own event (not a step's)."""
    return (at, phase, 0, 0, 0, sub, "")


def _position(at: float, rank: int, entry: JournalEntry, sub: int = 0) -> Position:
    """The position of an event of ``entry``'s step."""
    where = _LAST_POSITION if entry.position is None else entry.position
    digest = hashlib.sha256(base_key(entry).encode()).hexdigest()[:12]
    return (at, _STEPS, where, rank, entry.attempt, sub, digest)


def _body(type: EventType, timestamp: float | None, **fields: Any) -> dict[str, Any]:
    return {"type": str(type), "timestamp": iso(timestamp), **fields}


def _lifecycle(record: InstanceRecord) -> Iterator[Derived]:
    """The status transitions the instance item keeps a trace of."""
    yield _instant(record.created_at, _BEGIN), _body(EventType.INSTANCE_QUEUED, record.created_at)
    if record.started_at is not None:
        started = _body(EventType.INSTANCE_STARTED, record.started_at)
        yield _instant(record.started_at, _BEGIN, sub=1), started
    for paused_at, resumed_at in record.pauses:
        yield _instant(paused_at, _FINISH), _body(EventType.INSTANCE_PAUSED, paused_at)
        yield _instant(resumed_at, _BEGIN, sub=2), _body(EventType.INSTANCE_RESUMED, resumed_at)
    if record.paused_at is not None:
        paused = _body(EventType.INSTANCE_PAUSED, record.paused_at)
        yield _instant(record.paused_at, _FINISH), paused
    if record.status in FINISHED and record.finished_at is not None:
        yield _instant(record.finished_at, _FINISH, sub=1), _finish(record)


def _finish(record: InstanceRecord) -> dict[str, Any]:
    type = EventType(f"instance.{record.status}")
    shown = _body(type, record.finished_at, status=str(record.status))
    if record.status == "complete":
        shown.update(_output(codec.decode(record.output) if record.output is not None else None))
    if record.error is not None:
        shown["error"] = {"name": record.error.name, "message": record.error.message}
    return shown


def _received(
    events: Sequence[EventRecord], consumers: Mapping[str, JournalEntry]
) -> Iterator[Derived]:
    """The events sent to the instance (a child's answer shows as its step's end instead),
    each between the start and the end of the wait that consumed it."""
    for event in events:
        if event.type.startswith(CHILD_EVENT_PREFIX):
            continue
        payload = _output(codec.decode(event.payload), "payload")
        shown = {"id": event.id, "type": event.type, **payload}
        consumer = consumers.get(event.id)
        where = _LAST_POSITION if consumer is None else consumer.position
        where = _LAST_POSITION if where is None else where
        position = (event.timestamp, _STEPS, where, _MIDDLE, 0, 0, event.id)
        yield position, _body(EventType.EVENT_RECEIVED, event.timestamp, event=shown)


def _from_entry(entry: JournalEntry, waited: bool) -> Iterator[Derived]:
    """The events one journal entry makes known."""
    kind = entry.call_kind
    if kind in ("do", "rollback"):
        yield from _attempt_events(entry)
    elif kind == "sleep":
        wake = _body(EventType.SLEEP_STARTED, entry.at, step=_step(entry, "sleep"))
        wake["wake_at"] = iso(entry.wake_at)  # as set: a pause later moves sleep.finished
        yield _position(entry.at, _OPEN, entry), wake
    elif kind == "run_workflow":
        yield from _child_events(entry)
    else:
        yield from _wait_events(entry, waited)


def _attempt_events(entry: JournalEntry) -> Iterator[Derived]:
    """An attempt of a step (or of its rollback): its start, then how it ended."""
    rollback = entry.call_kind == "rollback"
    step = _step(entry, "rollback" if rollback else "do")
    start = entry.attempt_started_at
    if start is None:
        start = entry.started_at if entry.attempt <= 1 else entry.at
    attempt = max(1, entry.attempt)
    begun = EventType.ROLLBACK_STARTED if rollback else EventType.STEP_STARTED
    rank = _END if entry.kind in (EntryKind.STEP, EntryKind.ROLLBACK) else _OPEN
    yield _position(entry.at, rank, entry), _body(begun, start, step=step, attempt=attempt)
    ended = _body(_ending(entry, rollback), entry.at, step=step, attempt=attempt)
    if entry.kind in (EntryKind.ATTEMPT, EntryKind.ROLLBACK_ATTEMPT):
        ended["retry_at"] = iso(entry.wake_at)
    if entry.error is not None:
        ended["error"] = _error(entry.error)
    elif not rollback:
        ended.update(_output(REDACTED if entry.sensitive else codec.decode(entry.result)))
    yield _position(entry.at, rank, entry, sub=1), ended


def _ending(entry: JournalEntry, rollback: bool) -> EventType:
    retried = entry.kind in (EntryKind.ATTEMPT, EntryKind.ROLLBACK_ATTEMPT)
    if rollback:
        if retried:
            return EventType.ROLLBACK_RETRYING
        return EventType.ROLLBACK_FAILED if entry.error else EventType.ROLLBACK_COMPLETED
    if retried:
        return EventType.STEP_RETRYING
    return EventType.STEP_FAILED if entry.error else EventType.STEP_COMPLETED


def _wait_events(entry: JournalEntry, waited: bool) -> Iterator[Derived]:
    """A ``wait_for_event``: its start (an event already sent ends it in the same write), and
    the event it received or its timeout."""
    step = _step(entry, "waitForEvent")
    if entry.kind is EntryKind.WAIT:
        waiting = _body(EventType.WAIT_STARTED, entry.at, step=step, event_type=entry.event_type)
        waiting["timeout_at"] = iso(entry.wake_at)
        yield _position(entry.at, _OPEN, entry), waiting
        return
    if not waited:  # the event had come before the wait: no wait entry before its end
        started = _body(EventType.WAIT_STARTED, entry.at, step=step, event_type=entry.event_type)
        yield _position(entry.at, _END, entry), started
    if entry.error is not None:
        ended = _body(EventType.WAIT_TIMED_OUT, entry.at, step=step, error=_error(entry.error))
    else:
        ended = _body(EventType.WAIT_COMPLETED, entry.at, step=step, event_id=entry.event_id)
    ended["event_type"] = entry.event_type
    yield _position(entry.at, _END, entry, sub=1), ended


def _child_events(entry: JournalEntry) -> Iterator[Derived]:
    """A ``run_workflow``: the child it started, and how the child ended."""
    step = _step(entry, "runWorkflow")
    child = child_of(entry)
    linked = None if child is None else {"workflow": child.workflow, "id": child.id}
    if entry.kind is EntryKind.WAIT:
        started = _body(EventType.CHILD_STARTED, entry.at, step=step, child=linked)
        yield _position(entry.at, _OPEN, entry), started
        return
    type = EventType.CHILD_FAILED if entry.error else EventType.CHILD_COMPLETED
    ended = _body(type, entry.at, step=step, child=linked)
    if entry.error is not None:
        ended["error"] = _error(entry.error)
    yield _position(entry.at, _END, entry, sub=1), ended


def _sleeps_over(
    entries: Sequence[JournalEntry], record: InstanceRecord, now: float
) -> Iterator[Derived]:
    """``sleep.finished`` of each sleep whose wake-up time has passed (before the instance
    ended: a sleep cut short by a termination never finished)."""
    until = record.finished_at if record.status in FINISHED else now
    if record.paused_at is not None:  # a paused sleep is over only once resumed
        until = min(until or now, record.paused_at)
    for entry in entries:
        if entry.kind is not EntryKind.SLEEP:
            continue
        due = shifted(entry.wake_at or entry.at, entry.at, record.pauses)
        if until is not None and due <= until:
            shown = _body(EventType.SLEEP_FINISHED, due, step=_step(entry, "sleep"))
            yield _position(due, _END, entry, sub=1), shown


def _step(entry: JournalEntry, type: str) -> dict[str, Any]:
    return {"name": entry.name, "count": entry.count, "type": type, "parent": entry.parent}


def _error(error: ErrorInfo) -> dict[str, Any]:
    """The error with its traceback (the user's frames, capped when it was recorded)."""
    return error.with_traceback()


def _output(value: Any, name: str = "output") -> dict[str, Any]:
    """``{name: value}``, or ``{name: None, name_truncated: True}`` past :data:`OUTPUT_CAP`."""
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())
    if size > OUTPUT_CAP:
        return {name: None, f"{name}_truncated": True}
    return {name: value}
