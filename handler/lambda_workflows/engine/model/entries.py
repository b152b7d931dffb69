"""What an instance's journal and event buffer hold: journal entries and events.

The journal is append-only: an entry, once recorded, is never changed.
"""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from enum import StrEnum
from typing import Any

from lambda_workflows.engine.clock import to_datetime
from lambda_workflows.engine.frozen import FrozenDict, freeze
from lambda_workflows.engine.immutable import immutable

from .instances import ErrorInfo

CHILD_EVENT_PREFIX = "child:"
"""The event type of a ``step.run_workflow`` wait starts with it: not a valid type for
``send_event`` (a colon), so only the child's end can deliver it."""
REDACTED = "[REDACTED]"  # what status, timeline and API show for a sensitive step's output


class EntryKind(StrEnum):
    """What a journal entry records."""

    STEP = "step"  # the final outcome of a step.do: its result or its last error
    ATTEMPT = "attempt"  # a failed attempt that will be retried, with the retry time
    SLEEP = "sleep"  # a step.sleep / sleep_until and its wake-up time
    WAIT = "wait"  # a step.wait_for_event that found no event yet, and its timeout
    DELIVERY = "delivery"  # how a wait ended: the event it consumed, or its timeout
    ROLLBACK = "rollback"  # the final outcome of a step's rollback: done, or its last error
    ROLLBACK_ATTEMPT = "rollback_attempt"  # a failed rollback attempt that will be retried


ROLLBACK_KINDS = frozenset({EntryKind.ROLLBACK, EntryKind.ROLLBACK_ATTEMPT})
ATTEMPT_KINDS = frozenset({EntryKind.ATTEMPT, EntryKind.ROLLBACK_ATTEMPT})


@immutable
class JournalEntry:
    """One recorded fact about one step. Keys are unique within an instance generation."""

    key: str
    kind: EntryKind
    name: str
    count: int
    at: float
    position: int | None = None  # call order in run(); None for steps nested in a callback
    parent: str | None = None  # key of the enclosing step for nested steps
    started_at: float | None = None  # the step's start: its first attempt's
    attempt_started_at: float | None = None  # this attempt's own start (STEP and ATTEMPT)
    result: str | None = None  # encoded JSON
    error: ErrorInfo | None = None
    attempt: int = 0
    wake_at: float | None = None
    event_type: str | None = None
    event_id: str | None = None
    sensitive: bool = False  # a {"sensitive": "output"} step: its result is never shown

    def __repr__(self) -> str:
        # A sensitive result must not reach a log line through a repr.
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.sensitive and self.result is not None:
            shown["result"] = REDACTED
        return f"JournalEntry({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @property
    def call_kind(self) -> str:
        """The step method that made this entry (``do``, ``sleep``, ``wait_for_event``,
        ``run_workflow``), or ``rollback`` for a step's rollback."""
        if self.kind in ROLLBACK_KINDS:
            return "rollback"
        if self.kind in (EntryKind.STEP, EntryKind.ATTEMPT):
            return "do"
        if self.kind is EntryKind.SLEEP:
            return "sleep"
        if (self.event_type or "").startswith(CHILD_EVENT_PREFIX):
            return "run_workflow"  # a child workflow's wait (see engine.children)
        return "wait_for_event"


@immutable
class EventRecord:
    """An event sent to an instance.

    ``id`` sorts in commit order (FIFO per type): it is allocated by the store, from the
    instance's version in the same conditional write, never from a clock. ``key`` is the
    sender's idempotency key, if it gave one: a second send with the same key stores nothing.
    """

    id: str
    type: str
    payload: str  # encoded JSON
    timestamp: float
    generation: int = 1
    key: str | None = None


def event_id(version: int) -> str:
    """The id of the event committed by the write that moves an instance to ``version``."""
    return f"{version:012d}"


class ReceivedEvent(FrozenDict):
    """What ``step.wait_for_event`` returns: ``{payload, timestamp, type}``.

    Readable as a mapping (``ev["payload"]``) or by attribute (``ev.payload``); frozen.
    """

    __slots__ = ()

    def __init__(self, payload: Any, timestamp: datetime, type: str) -> None:
        super().__init__()
        dict.update(self, payload=freeze(payload), timestamp=timestamp, type=type)

    @property
    def payload(self) -> Any:
        return self["payload"]

    @property
    def timestamp(self) -> datetime:
        return self["timestamp"]  # type: ignore[no-any-return]

    @property
    def type(self) -> str:
        return self["type"]  # type: ignore[no-any-return]

    def __reduce__(self) -> Any:
        return (ReceivedEvent, (self.payload, self.timestamp, self.type))


def event_timestamp(epoch: float) -> datetime:
    """Timestamps handed to workflows are aware UTC datetimes."""
    return to_datetime(epoch)
