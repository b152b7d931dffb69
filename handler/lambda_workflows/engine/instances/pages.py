"""Pages of an instance's steps and history: what keeps every answer of the HTTP API bounded.

An instance's timeline and history grow with its steps: 25,000 steps that each failed once
(every attempt keeps its traceback) are some 21 MB of JSON, and a Lambda answer holds 6 MB. So
the API serves them in pages, each bounded twice:

- by count: at most ``limit`` items (1 to :data:`MAX_PAGE`, :data:`STEPS_PAGE` unless fewer are
  asked for): rows of the timeline, or items of the history (its entries, then its events);
- by size: a page ends before the item that would take it past :data:`PAGE_BYTES` of compact
  JSON, and holds one item at least. A row is measured without its output, which the API
  bounds on its own (an output over 64 KiB is left out, and any past 4 MiB a page); a history
  item whole.

A row of a page shows at most :data:`ATTEMPTS_SHOWN` attempts, so that a step retried 10,000
times is still one row of bounded size: the first and the newest ones, ``attempts_omitted``
counting those left out (the history has every one).

``InstanceService.status(ref, steps_limit=...)`` carries the first page of the timeline, with
``steps_total`` and ``steps_cursor`` when there are more rows; ``steps()`` and
``history_page()`` page on. A cursor is sealed by the store (signed: :mod:`.cursors`) and
names its route, the instance, the journal's generation, how many items came before it and a
digest of the last of them. The next page starts after that item wherever it now is, so an
item recorded meanwhile before it (a step nested in an earlier one) is not served twice. A
cursor of another instance or route is ``InvalidInput``; one of a generation the instance has
left (it was restarted) is :class:`~.errors.StaleCursor`: read again from the first page.

What a page costs: it is cut from the instance as :meth:`~.ports.InstanceStore.load` reads it,
whole (one Query of its partition on DynamoDB), since the timeline's order (the order ``run()``
called its steps) and the history's (the time of each entry) are not the order of the keys.
So reading every page of an instance reads its partition once a page.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from lambda_workflows.engine.cursors import invalid_cursor
from lambda_workflows.engine.errors import InvalidInput, StaleCursor
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import EventRecord, InstanceRef, JournalEntry, StepInfo

from .history import History, entry_to_dict, event_to_dict
from .timeline import Timeline

__all__ = [
    "ATTEMPTS_SHOWN",
    "MAX_PAGE",
    "PAGE_BYTES",
    "STEPS_PAGE",
    "CursorSeal",
    "HistoryPage",
    "PageCursor",
    "StepPage",
    "check_limit",
    "history_page",
    "step_page",
]

STEPS_PAGE = 1_000
"""The rows of the timeline an instance's status carries (its first page), and the default
size of a page of steps or of history."""
MAX_PAGE = 1_000
"""The largest ``limit`` of a page."""
PAGE_BYTES = 512 * 1024
"""A page ends before the item that would take it past this many bytes of compact JSON."""
ATTEMPTS_SHOWN = 25
"""The attempts a row of a page shows at most: the first and the 24 newest."""

T = TypeVar("T")
HistoryItem = JournalEntry | EventRecord


class CursorSeal(Protocol):
    """Seals a page's position into an opaque cursor, and opens it again (the store does)."""

    def seal_cursor(self, position: Mapping[str, Any]) -> str:
        """An opaque cursor carrying ``position`` (a JSON object)."""
        ...

    def open_cursor(self, cursor: str) -> Any:
        """The position a :meth:`seal_cursor` cursor carries; InvalidInput for anything else."""
        ...


@dataclass(frozen=True, slots=True)
class StepPage:
    """One page of an instance's timeline: its ``steps``, how many rows the timeline has in
    all (``total``), and the ``cursor`` of the next page (None: this is the last)."""

    steps: list[StepInfo]
    total: int
    cursor: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": [step.to_dict() for step in self.steps],
            "total": self.total,
            "cursor": self.cursor,
        }

    @classmethod
    def from_dict(cls, shown: Mapping[str, Any]) -> StepPage:
        """The page a :meth:`to_dict` shows (the body of ``GET …/instances/{id}/steps``)."""
        steps = [StepInfo.from_dict(step) for step in shown.get("steps") or ()]
        return cls(steps, int(shown.get("total") or 0), shown.get("cursor"))


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """One page of an instance's history: the history with this page's entries and events,
    and the ``cursor`` of the next page (None: this is the last)."""

    history: History
    cursor: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The export format, with ``cursor`` when there is a next page (so the only page of
        a history is the export format itself)."""
        shown = self.history.to_dict()
        if self.cursor is not None:
            shown["cursor"] = self.cursor
        return shown


@immutable
class PageCursor:
    """Where a page starts: after ``served`` items of the route's pages (``steps`` or
    ``history``) of one instance's journal generation, the last of them with digest ``last``."""

    of: str
    workflow: str
    id: str
    generation: int
    served: int
    last: str

    def payload(self) -> dict[str, Any]:
        """What the cursor carries."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    @classmethod
    def opened(
        cls, seal: CursorSeal, cursor: str | None, of: str, ref: InstanceRef
    ) -> PageCursor | None:
        """The position ``cursor`` names on ``of`` pages of ``ref`` (None without a cursor).

        Raises:
            InvalidInput: a cursor the store did not seal, or one of another route or instance.
        """
        if cursor is None:
            return None
        payload = seal.open_cursor(cursor)
        names = [field.name for field in dataclasses.fields(cls)]
        if not isinstance(payload, dict) or sorted(payload) != sorted(names):
            raise invalid_cursor()  # a listing's cursor, sealed with the same key
        kinds = [type(payload[name]) for name in names]
        if kinds != [str, str, str, int, int, str]:
            raise invalid_cursor()
        opened = cls(**payload)
        if (opened.of, opened.workflow, opened.id) != (of, ref.workflow, ref.id):
            raise InvalidInput(
                f"this cursor is not one of the {of} pages of instance {ref.id!r}: pass back the "
                "cursor its previous page gave, or start again without one"
            )
        return opened


def check_limit(limit: Any) -> int:
    """A page size: a whole number from 1 to :data:`MAX_PAGE`, else InvalidInput."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit must be a whole number from 1 to {MAX_PAGE:,}, got {limit!r}")
    return limit


def step_page(
    ref: InstanceRef,
    generation: int,
    timeline: Timeline,
    cursor: PageCursor | None,
    limit: int,
    seal: CursorSeal,
) -> StepPage:
    """The page of ``timeline`` (the whole timeline of ``generation``) that starts at
    ``cursor``; only its own rows are built."""
    start = _start(cursor, len(timeline), lambda i: _row_identity(timeline.identity(i)), generation)
    rows = (_few_attempts(timeline.row(i)) for i in range(start, min(len(timeline), start + limit)))
    shown = _cut(rows, _row_size)
    end = start + len(shown)
    after = None
    if end < len(timeline):
        last = _row_identity(timeline.identity(end - 1))
        after = _sealed(seal, "steps", ref, generation, end, last)
    return StepPage(shown, len(timeline), after)


def history_page(
    ref: InstanceRef, history: History, cursor: PageCursor | None, limit: int, seal: CursorSeal
) -> HistoryPage:
    """The page of ``history`` (its entries, then its events) that starts at ``cursor``."""
    items: list[HistoryItem] = [*history.entries, *history.events]
    start = _start(cursor, len(items), lambda i: _item_identity(items[i]), history.generation)
    shown = _cut(items[start : start + limit], _item_size)
    end = start + len(shown)
    page = dataclasses.replace(
        history,
        entries=tuple(item for item in shown if isinstance(item, JournalEntry)),
        events=tuple(item for item in shown if isinstance(item, EventRecord)),
    )
    after = None
    if end < len(items):
        last = _item_identity(items[end - 1])
        after = _sealed(seal, "history", ref, history.generation, end, last)
    return HistoryPage(page, after)


def _start(
    cursor: PageCursor | None, count: int, identity: Callable[[int], str], generation: int
) -> int:
    """Where the page after ``cursor`` starts among ``count`` items: after the item it ends
    at (``identity(i)`` names item ``i``)."""
    if cursor is None:
        return 0
    if cursor.generation != generation:
        raise StaleCursor(
            f"instance {cursor.id!r} was restarted since this cursor was handed out, so its "
            f"{cursor.of} are those of a new run; read them again from the first page (without "
            "a cursor)"
        )
    hint = cursor.served
    if 0 < hint <= count and _digest(identity(hint - 1)) == cursor.last:
        return hint  # nothing moved: the usual case
    for index in range(count):
        if _digest(identity(index)) == cursor.last:
            return index + 1
    raise StaleCursor(
        f"the {cursor.of} page this cursor follows no longer ends where it did; read them "
        "again from the first page (without a cursor)"
    )


def _cut(items: Iterable[T], size: Callable[[T], int]) -> list[T]:
    """The first items up to :data:`PAGE_BYTES` in all (one at least)."""
    taken: list[T] = []
    used = 0
    for item in items:
        used += size(item)
        if taken and used > PAGE_BYTES:
            break
        taken.append(item)
    return taken


def _sealed(
    seal: CursorSeal, of: str, ref: InstanceRef, generation: int, served: int, last: str
) -> str:
    cursor = PageCursor(of, ref.workflow, ref.id, generation, served, _digest(last))
    return seal.seal_cursor(cursor.payload())


def _few_attempts(row: StepInfo) -> StepInfo:
    """The row with at most :data:`ATTEMPTS_SHOWN` attempts: the first and the newest."""
    attempts = row.attempt_history
    if len(attempts) <= ATTEMPTS_SHOWN:
        return row
    kept = (attempts[0], *attempts[len(attempts) - ATTEMPTS_SHOWN + 1 :])
    omitted = len(attempts) - ATTEMPTS_SHOWN
    return dataclasses.replace(row, attempt_history=kept, attempts_omitted=omitted)


def _row_size(row: StepInfo) -> int:
    shown = row.to_dict()
    shown["output"] = None  # bounded on its own (see the module's docstring)
    return _json_size(shown)


def _item_size(item: HistoryItem) -> int:
    if isinstance(item, JournalEntry):
        return _json_size(entry_to_dict(item))
    return _json_size(event_to_dict(item))


def _json_size(value: Any) -> int:
    """Bytes of ``value`` as the API sends it: compact JSON, non-ASCII escaped."""
    return len(json.dumps(value, separators=(",", ":"), default=str))


def _row_identity(identity: tuple[str, str, int, str | None]) -> str:
    return json.dumps(identity)


def _item_identity(item: HistoryItem) -> str:
    if isinstance(item, JournalEntry):
        return json.dumps(["entry", item.key])
    return json.dumps(["event", item.id])


def _digest(identity: str) -> str:
    return hashlib.sha256(identity.encode()).hexdigest()[:16]
