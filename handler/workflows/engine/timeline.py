"""The step timeline shown by ``status()``: one row per step, built from the journal."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from . import codec
from .journal import NEST, base_key, shifted
from .model import REDACTED, EntryKind, JournalEntry, StepInfo, StepStatus

_TYPES = {"do": "do", "sleep": "sleep", "wait_for_event": "waitForEvent"}


def build_timeline(
    entries: Iterable[JournalEntry],
    now: float,
    pauses: Sequence[tuple[float, float]] = (),
    finished: bool = False,
) -> list[StepInfo]:
    """Rows in the order ``run()`` called the steps; nested steps follow their root step.

    A step recorded as sensitive (``{"sensitive": "output"}``) shows ``"[REDACTED]"`` as its
    output: the real value stays in the journal, for ``run()`` alone.

    Once the instance has finished (errored, terminated), a step that was still retrying shows
    as ``errored`` and a sleep or wait still pending as ``cancelled``: neither will go on.
    """
    groups: dict[str, list[JournalEntry]] = {}
    for entry in sorted(entries, key=lambda e: (e.at, e.key)):
        groups.setdefault(base_key(entry), []).append(entry)
    positions = {key: group[0].position for key, group in groups.items()}

    def order(item: tuple[str, list[JournalEntry]]) -> tuple[float, int, float]:
        key, group = item
        root = positions.get(key.split(NEST, 1)[0])
        nested = 0 if group[0].position is not None else 1
        return (float("inf") if root is None else root, nested, group[0].at)

    rows = [_row(group, now, pauses) for _, group in sorted(groups.items(), key=order)]
    if finished:
        rows = [_ended(row) for row in rows]
    return rows


def _ended(row: StepInfo) -> StepInfo:
    if row.status is StepStatus.RETRYING:
        return dataclasses.replace(row, status=StepStatus.ERRORED)
    if row.status is StepStatus.WAITING:
        return dataclasses.replace(row, status=StepStatus.CANCELLED, end=None)
    return row


def _row(group: list[JournalEntry], now: float, pauses: Sequence[tuple[float, float]]) -> StepInfo:
    first, last = group[0], group[-1]
    kind = _TYPES[first.call_kind]
    start = first.started_at or first.at

    def row(status: StepStatus, attempts: int, end: float | None, output: Any = None) -> StepInfo:
        error = last.error if status is not StepStatus.COMPLETE or kind == "waitForEvent" else None
        return StepInfo(
            first.name, first.count, kind, status, attempts, start, end, output, error, first.parent
        )

    if kind == "do":
        attempts = max(e.attempt for e in group)
        if last.kind is EntryKind.STEP:
            if last.error:
                return row(StepStatus.ERRORED, attempts, last.at)
            output = REDACTED if last.sensitive else codec.decode(last.result)
            return row(StepStatus.COMPLETE, attempts, last.at, output)
        return row(StepStatus.RETRYING, attempts, None)
    if kind == "sleep":
        due = shifted(first.wake_at or first.at, first.at, pauses)
        return row(StepStatus.COMPLETE if now >= due else StepStatus.WAITING, 1, due)
    if last.kind is EntryKind.DELIVERY:
        return row(StepStatus.ERRORED if last.error else StepStatus.COMPLETE, 1, last.at)
    return row(StepStatus.WAITING, 1, None)
