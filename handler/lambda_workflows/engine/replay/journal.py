"""The in-memory view of an instance's journal that replay reads and appends to.

Keys: a root step is ``name␟count``; a step nested in another step's callback is
``parent␞name␟count``; a failed attempt adds ``␟a<n>``; a wait's delivery adds ``␟d``; a
step's rollback adds ``␟r`` (and its failed attempts ``␟r␟a<n>``).
(␞ and ␟ are the ASCII record and unit separators: step names cannot contain control
characters, so keys never collide.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lambda_workflows.engine.model import (
    ATTEMPT_KINDS,
    ROLLBACK_KINDS,
    EntryKind,
    EventRecord,
    JournalEntry,
)

UNIT = "\x1f"
NEST = "\x1e"


def step_key(name: str, count: int, parent: str | None) -> str:
    """The journal key of occurrence ``count`` of step ``name``."""
    own = f"{name}{UNIT}{count}"
    return f"{parent}{NEST}{own}" if parent else own


def attempt_key(key: str, attempt: int) -> str:
    """The key of failed attempt ``attempt`` of step ``key``."""
    return f"{key}{UNIT}a{attempt}"


def delivery_key(key: str) -> str:
    """The key of the delivery (event or timeout) that ended wait ``key``."""
    return f"{key}{UNIT}d"


def rollback_key(key: str) -> str:
    """The key of the rollback of step ``key``."""
    return f"{key}{UNIT}r"


def base_key(entry: JournalEntry) -> str:
    """The step key an entry belongs to (attempts and deliveries share their step's key; a
    rollback's attempts share the rollback's key)."""
    if entry.kind in ATTEMPT_KINDS or entry.kind is EntryKind.DELIVERY:
        return entry.key.rsplit(UNIT, 1)[0]
    return entry.key


def shifted(when: float, since: float, pauses: Sequence[tuple[float, float]]) -> float:
    """``when`` pushed back by every pause that began after ``since`` and before it was due.

    Sleeps and retry delays do not count time spent paused: a 1 hour sleep paused for
    20 minutes ends 80 minutes after it began.
    """
    for paused_at, resumed_at in pauses:
        if since <= paused_at < when:
            when += resumed_at - paused_at
    return when


class Journal:
    """Entries by key, root entries by call position, attempts per step, and the events."""

    def __init__(self, entries: Iterable[JournalEntry], events: Iterable[EventRecord]) -> None:
        self.entries: dict[str, JournalEntry] = {}
        self.by_position: dict[int, JournalEntry] = {}
        self.attempts: dict[str, list[JournalEntry]] = {}
        self.steps: set[str] = set()
        self.consumed: set[str] = set()
        self.events: list[EventRecord] = sorted(events, key=lambda e: e.id)
        self._events_by_id = {event.id: event for event in self.events}
        for entry in sorted(entries, key=lambda e: (e.at, e.key)):
            self.add(entry)

    def add(self, entry: JournalEntry) -> None:
        """Index a recorded entry."""
        self.entries[entry.key] = entry
        if entry.kind not in ROLLBACK_KINDS:  # a rollback is not a step of the step limit
            self.steps.add(base_key(entry))
        if entry.position is not None:
            self.by_position.setdefault(entry.position, entry)
        if entry.kind in ATTEMPT_KINDS:
            attempts = self.attempts.setdefault(base_key(entry), [])
            attempts.append(entry)
            attempts.sort(key=lambda e: e.attempt)
        elif entry.kind is EntryKind.DELIVERY and entry.event_id:
            self.consumed.add(entry.event_id)

    def next_event(self, event_type: str) -> EventRecord | None:
        """The oldest buffered event of ``event_type`` no wait has consumed yet (FIFO)."""
        for event in self.events:
            if event.type == event_type and event.id not in self.consumed:
                return event
        return None

    def event(self, event_id: str) -> EventRecord | None:
        """A loaded event by id."""
        return self._events_by_id.get(event_id)
