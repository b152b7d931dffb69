"""The step timeline shown by ``status()``: one row per step, built from the journal."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lambda_workflows.engine import codec
from lambda_workflows.engine.model import (
    REDACTED,
    AttemptInfo,
    EntryKind,
    EventRecord,
    JournalEntry,
    StepInfo,
    StepStatus,
)
from lambda_workflows.engine.replay.child_steps import child_of, child_outcome
from lambda_workflows.engine.replay.journal import NEST, base_key, rollback_key, shifted

_TYPES = {
    "do": "do",
    "sleep": "sleep",
    "wait_for_event": "waitForEvent",
    "run_workflow": "runWorkflow",
    "rollback": "rollback",
}


def build_timeline(
    entries: Iterable[JournalEntry],
    now: float,
    pauses: Sequence[tuple[float, float]] = (),
    finished: bool = False,
    events: Iterable[EventRecord] = (),
) -> list[StepInfo]:
    """Rows in the order ``run()`` called the steps; nested steps follow their root step.

    A ``step.do`` row lists its recorded attempts (start, end, error and traceback); a wait row
    the event type it awaits and, once it got one, the event's payload (from ``events``) as
    its output; a sleep row when it wakes up.

    A child workflow's row (``runWorkflow``) links the child (``child``: workflow and id) and
    shows its output, or its error.

    A step's rollback is a row of type ``rollback`` named as its step, after the steps, in the
    order the rollbacks ran: complete, errored (it failed for good: the chain stopped there) or
    retrying, with its attempts; its output is None.

    A step recorded as sensitive (``{"sensitive": "output"}``) shows ``"[REDACTED]"`` as its
    output: the real value stays in the journal, for ``run()`` alone.

    Once the instance has finished (errored, terminated), a step that was still retrying shows
    as ``errored`` and a sleep or wait still pending as ``cancelled``: neither will go on.
    """
    return Timeline(entries, now, pauses, finished, events).rows()


class Timeline:
    """The rows of :func:`build_timeline`, in order, each built when it is asked for: a page
    of a long timeline builds its own rows only, not every row before it."""

    def __init__(
        self,
        entries: Iterable[JournalEntry],
        now: float,
        pauses: Sequence[tuple[float, float]] = (),
        finished: bool = False,
        events: Iterable[EventRecord] = (),
    ) -> None:
        self._groups = _ordered_groups(entries)
        self._now = now
        self._pauses = pauses
        self._finished = finished
        self._payloads = {event.id: event.payload for event in events}

    def __len__(self) -> int:
        return len(self._groups)

    def identity(self, index: int) -> tuple[str, str, int, str | None]:
        """Row ``index``'s ``(type, name, count, parent)``, without building it."""
        first = self._groups[index][0]
        return _TYPES[first.call_kind], first.name, first.count, first.parent

    def row(self, index: int) -> StepInfo:
        """Row ``index``, built now."""
        row = _row(self._groups[index], self._now, self._pauses, self._payloads)
        return _ended(row) if self._finished else row

    def rows(self) -> list[StepInfo]:
        """Every row, built now."""
        return [self.row(index) for index in range(len(self))]


def _ordered_groups(entries: Iterable[JournalEntry]) -> list[list[JournalEntry]]:
    """The entries grouped by step, each group oldest first, the groups in the rows' order."""
    groups: dict[str, list[JournalEntry]] = {}
    for entry in sorted(entries, key=_recorded_order):
        groups.setdefault(base_key(entry), []).append(entry)
    positions = {key: group[0].position for key, group in groups.items()}

    # A rollback's row comes after every step's, in the order the rollbacks ran: newest step
    # first (ties in time are common, so the step's position orders them, not the clock).
    undoes = {rollback_key(key): pos for key, pos in positions.items() if pos is not None}

    def order(item: tuple[str, list[JournalEntry]]) -> tuple[int, float, int, float]:
        key, group = item
        head = key.split(NEST, 1)[0]
        if head in undoes:
            return (1, -undoes[head], 0 if head == key else 1, group[0].at)
        root = positions.get(head)
        nested = 0 if group[0].position is not None else 1
        return (0, float("inf") if root is None else root, nested, group[0].at)

    return [group for _, group in sorted(groups.items(), key=order)]


_ENDINGS = frozenset({EntryKind.STEP, EntryKind.DELIVERY, EntryKind.ROLLBACK})


def _recorded_order(entry: JournalEntry) -> tuple[float, bool, int, str]:
    """Oldest first; at the same instant (a retry without delay, a virtual clock that stands
    still) a step's failed attempts in their order, then its outcome, and a wait before its
    delivery — so a group's last entry is always how it ended."""
    return (entry.at, entry.kind in _ENDINGS, entry.attempt, entry.key)


def _ended(row: StepInfo) -> StepInfo:
    if row.status is StepStatus.RETRYING:
        return dataclasses.replace(row, status=StepStatus.ERRORED)
    if row.status is StepStatus.WAITING:
        return dataclasses.replace(row, status=StepStatus.CANCELLED, end=None)
    return row


def _row(
    group: list[JournalEntry],
    now: float,
    pauses: Sequence[tuple[float, float]],
    payloads: Mapping[str, str],
) -> StepInfo:
    first, last = group[0], group[-1]
    kind = _TYPES[first.call_kind]
    start = first.started_at or first.at

    def row(status: StepStatus, attempts: int, end: float | None, output: Any = None) -> StepInfo:
        error = last.error if status is not StepStatus.COMPLETE or kind == "waitForEvent" else None
        return StepInfo(
            first.name, first.count, kind, status, attempts, start, end, output, error, first.parent
        )

    if kind in ("do", "rollback"):
        done = _do_row(group, row)
        return dataclasses.replace(done, attempt_history=tuple(map(_attempt, group)))
    if kind == "sleep":
        due = shifted(first.wake_at or first.at, first.at, pauses)
        slept = row(StepStatus.COMPLETE if now >= due else StepStatus.WAITING, 1, due)
        return dataclasses.replace(slept, wake_at=due)
    if kind == "runWorkflow":
        return _child_row(group, row, payloads)
    if last.kind is EntryKind.DELIVERY:
        if last.error:
            waited = row(StepStatus.ERRORED, 1, last.at)
        else:
            payload = payloads.get(last.event_id or "")
            waited = row(StepStatus.COMPLETE, 1, last.at, codec.decode(payload))
    else:
        waited = row(StepStatus.WAITING, 1, None)
    return dataclasses.replace(waited, event_type=first.event_type or last.event_type)


def _child_row(
    group: list[JournalEntry], row: Callable[..., StepInfo], payloads: Mapping[str, str]
) -> StepInfo:
    """A ``step.run_workflow`` row: the child's output or error, and a link to the child."""
    last = group[-1]
    if last.kind is not EntryKind.DELIVERY:
        shown = row(StepStatus.WAITING, 1, None)
    elif last.error:
        shown = row(StepStatus.ERRORED, 1, last.at)
    elif last.event_id is None and last.result is not None:  # a test's mock answered
        shown = row(StepStatus.COMPLETE, 1, last.at, codec.decode(last.result))
    else:
        payload = payloads.get(last.event_id or "")
        output = None if payload is None else codec.decode(child_outcome(payload).output)
        shown = row(StepStatus.COMPLETE, 1, last.at, output)
    child = child_of(group[0])
    linked = None if child is None else {"workflow": child.workflow, "id": child.id}
    return dataclasses.replace(shown, child=linked)


def _do_row(group: list[JournalEntry], row: Callable[..., StepInfo]) -> StepInfo:
    last = group[-1]
    attempts = max(e.attempt for e in group)
    if last.kind in (EntryKind.STEP, EntryKind.ROLLBACK):
        if last.error:
            return row(StepStatus.ERRORED, attempts, last.at)
        output = REDACTED if last.sensitive else codec.decode(last.result)
        return row(StepStatus.COMPLETE, attempts, last.at, output)
    return row(StepStatus.RETRYING, attempts, None)


def _attempt(entry: JournalEntry) -> AttemptInfo:
    """A recorded attempt: a failed one (``ATTEMPT``) or the step's last (``STEP``)."""
    start = entry.attempt_started_at
    if start is None and entry.attempt <= 1:  # recorded before attempts had their own start
        start = entry.started_at
    return AttemptInfo(entry.attempt, start, entry.at, entry.error is None, entry.error)
