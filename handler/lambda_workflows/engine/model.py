"""The engine's records: instances, journal entries, events, and what ``status()`` shows.

These are plain dataclasses with no storage concerns; each adapter maps them to its own
format. The journal is append-only: an entry, once recorded, is never changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import StrEnum
from typing import Any

from .clock import iso, to_datetime
from .frozen import FrozenDict, freeze
from .immutable import immutable

CHILD_EVENT_PREFIX = "child:"
"""The event type of a ``step.run_workflow`` wait starts with it: not a valid type for
``send_event`` (a colon), so only the child's end can deliver it."""
REDACTED = "[REDACTED]"  # what status, timeline and API show for a sensitive step's output


class InstanceStatus(StrEnum):
    """Cloudflare's instance statuses (equal to their strings: ``status == "complete"``)."""

    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    ERRORED = "errored"
    TERMINATED = "terminated"
    COMPLETE = "complete"
    WAITING = "waiting"
    WAITING_FOR_PAUSE = "waitingForPause"
    UNKNOWN = "unknown"

    @property
    def finished(self) -> bool:
        """True for complete, errored and terminated: nothing will ever run again."""
        return self in FINISHED


FINISHED = frozenset({InstanceStatus.COMPLETE, InstanceStatus.ERRORED, InstanceStatus.TERMINATED})
# Not finished, not paused: a runner may take the instance's lease and advance it.
RUNNABLE = frozenset(
    {
        InstanceStatus.QUEUED,
        InstanceStatus.RUNNING,
        InstanceStatus.WAITING,
        InstanceStatus.WAITING_FOR_PAUSE,
    }
)


class ErrorInfo(dict[str, str]):
    """``{"name": ..., "message": ...}``, also readable as ``.name`` and ``.message``.

    A failed step attempt also records where it failed, in ``.traceback`` (the user's frames,
    see :mod:`lambda_workflows.engine.tracebacks`). It is an attribute, not a key: the mapping stays
    equal to Cloudflare's two-key error shape.
    """

    traceback: str | None

    def __init__(self, name: str, message: str, traceback: str | None = None) -> None:
        super().__init__(name=name, message=message)
        self.traceback = traceback

    def __reduce__(self) -> Any:
        return (ErrorInfo, (self.name, self.message, self.traceback))

    def with_traceback(self) -> dict[str, str | None]:
        """``{"name", "message", "traceback"}``: what a step's attempt history shows."""
        return {"name": self.name, "message": self.message, "traceback": self.traceback}

    @classmethod
    def from_dict(cls, shown: Mapping[str, Any] | None) -> ErrorInfo | None:
        """The error a ``to_dict`` shows (``{"name", "message"}``, maybe ``"traceback"``)."""
        if shown is None:
            return None
        return cls(str(shown["name"]), str(shown["message"]), shown.get("traceback"))

    @property
    def name(self) -> str:
        return self["name"]

    @property
    def message(self) -> str:
        return self["message"]


class RollbackStatus(StrEnum):
    """How an instance's rollbacks went (``status().rollback.status``)."""

    RUNNING = "running"  # under way: the instance is running (or waiting on a retry delay)
    COMPLETE = "complete"  # every registered rollback ran and returned
    FAILED = "failed"  # one failed for good: the chain stopped there
    CANCELLED = "cancelled"  # the instance was terminated (plainly) before the chain ended


class FailedStep(dict[str, Any]):
    """``{"name": ..., "count": ...}`` of the step whose rollback failed for good, also
    readable as ``.name`` and ``.count``."""

    def __init__(self, name: str, count: int) -> None:
        super().__init__(name=name, count=count)

    def __reduce__(self) -> Any:
        return (FailedStep, (self.name, self.count))

    @property
    def name(self) -> str:
        return str(self["name"])

    @property
    def count(self) -> int:
        return int(self["count"])


@immutable
class RollbackInfo:
    """An instance's rollbacks (see :mod:`lambda_workflows.engine.operations.rollback`): why they
    run, the status the instance ends with, and how the chain went.

    ``cause`` is the failure the rollbacks receive as ``error`` (run()'s uncaught error, or
    the termination); ``ends_as`` is ``errored`` or ``terminated``. When a rollback failed for
    good, ``failed_step`` names the step it undoes (``{"name", "count"}``) and ``error`` is its
    error: a rollback failure, told apart from the forward failure (the instance's ``error``).
    Readable by attribute (``r.status``) or as a mapping (``r["status"]``), as
    :class:`InstanceStatusView` is.
    """

    cause: ErrorInfo
    ends_as: InstanceStatus
    status: RollbackStatus = RollbackStatus.RUNNING
    failed_step: FailedStep | None = None
    error: ErrorInfo | None = None

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def shown(self, finished: bool) -> RollbackInfo:
        """As ``status()`` shows it: a chain still running on a finished instance was cut
        short by a plain terminate (cancelled)."""
        if finished and self.status is RollbackStatus.RUNNING:
            return dataclasses.replace(self, status=RollbackStatus.CANCELLED)
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": str(self.status),
            "ends_as": str(self.ends_as),
            "cause": dict(self.cause),
            "failed_step": None if self.failed_step is None else dict(self.failed_step),
            "error": self.error.with_traceback() if self.error else None,
        }

    @classmethod
    def from_dict(cls, shown: Mapping[str, Any] | None) -> RollbackInfo | None:
        """The rollback a :meth:`to_dict` shows (None for None)."""
        if shown is None:
            return None
        failed = shown.get("failed_step")
        cause = ErrorInfo.from_dict(shown["cause"])
        assert cause is not None
        return cls(
            cause=cause,
            ends_as=InstanceStatus(shown.get("ends_as") or InstanceStatus.ERRORED),
            status=RollbackStatus(shown["status"]),
            failed_step=None if failed is None else FailedStep(failed["name"], failed["count"]),
            error=ErrorInfo.from_dict(shown.get("error")),
        )


class ParentRef(dict[str, str]):
    """The instance that started a child workflow, and its ``step.run_workflow`` step: what
    the child's status shows as ``parent`` (``{workflow, id, step}``), and whom its end wakes.
    A mapping (equal to its dict), also readable as ``.workflow``, ``.id`` and ``.step``."""

    def __init__(self, workflow: str, id: str, step: str) -> None:
        super().__init__(workflow=workflow, id=id, step=step)

    def __reduce__(self) -> Any:
        return (ParentRef, (self.workflow, self.id, self.step))

    @property
    def workflow(self) -> str:
        return self["workflow"]

    @property
    def id(self) -> str:
        return self["id"]

    @property
    def step(self) -> str:
        return self["step"]

    @property
    def ref(self) -> InstanceRef:
        return InstanceRef(self.workflow, self.id)

    def to_dict(self) -> dict[str, str]:
        return dict(self)

    @classmethod
    def from_dict(cls, shown: Mapping[str, Any] | None) -> ParentRef | None:
        """The parent a :meth:`to_dict` shows (None for None)."""
        if not shown:
            return None
        return cls(str(shown["workflow"]), str(shown["id"]), str(shown["step"]))


@immutable
class InstanceRef:
    """Which instance: workflow name and instance id (ids are unique per workflow)."""

    workflow: str
    id: str

    def __str__(self) -> str:
        return f"{self.workflow}/{self.id}"


def first_generation(created_at: float) -> int:
    """The journal generation a new instance starts in: its creation time in milliseconds.

    An id can be taken again once its instance is gone: deleted (a tombstone then says which
    generation to start above) or expired by its retention (its instance item goes first; its
    journal, event and chunk items stay until their own, later TTL). Starting each instance at
    a generation of its own means a new instance with the id of an expired one never reads
    the journal that one left. A restart takes the next generations, one claimed write each;
    an instance can be created with the id again only after the old one finished and its
    retention (at least a second) passed, by which time it cannot have restarted more times
    than milliseconds went by.
    """
    return max(1, int(created_at * 1000))


@immutable
class InstanceRecord:
    """The instance item: status and bookkeeping. ``version`` is the signal counter.

    Every external signal (event sent, pause / resume / terminate / restart, creation) and
    every status change by the runner bumps ``version`` in the same write; the runner only
    moves an instance out of its hands on the condition that ``version`` is still what it
    loaded, so nothing that arrives meanwhile is missed.
    """

    workflow: str
    id: str
    status: InstanceStatus
    params: str  # encoded JSON
    created_at: float
    version: int = 1
    generation: int = 1
    updated_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    output: str | None = None
    error: ErrorInfo | None = None
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    lease_delivery: int | None = None  # which delivery of the owner's message (engine.advance)
    # what it used, counted in writes the store makes anyway (see lambda_workflows.engine.usage)
    invocations: int = 0  # runner invocations that took its lease
    item_writes: int = 0  # writes of the instance item itself (and of its events)
    schedules: int = 0  # timed wake-ups set when it suspended
    wake_at: float | None = None
    paused_at: float | None = None
    pauses: tuple[tuple[float, float], ...] = ()
    expires_at: float | None = None
    due_at: float | None = None  # see lambda_workflows.engine.recovery
    slot: int | None = None  # the concurrency slot it holds (see lambda_workflows.engine.slots)
    rollback: RollbackInfo | None = None  # set once the instance rolls back (see transitions)
    workflow_version: str = "1"  # the class version it was created on (see engine.versions)
    status_reason: str | None = None  # why it does not move on, e.g. its version is not deployed
    parent: ParentRef | None = None  # set at creation on a child workflow (see engine.children)

    @property
    def ref(self) -> InstanceRef:
        return InstanceRef(self.workflow, self.id)

    def leased(self, now: float) -> bool:
        """True while a runner holds a live lease on the instance."""
        return self.lease_owner is not None and (self.lease_expires_at or 0.0) > now

    def held_by(self, owner: str, delivery: int) -> bool:
        """True when the lease is ``owner``'s, taken by its delivery ``delivery``."""
        return self.lease_owner == owner and self.lease_delivery == delivery


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


class StepStatus(StrEnum):
    """The status of one row of the step timeline (equal to its string: ``== "complete"``)."""

    COMPLETE = "complete"  # the step returned, the sleep is over, or the wait got its event
    ERRORED = "errored"  # the step failed for good, or the wait timed out
    RETRYING = "retrying"  # a step.do attempt failed and another one is due
    WAITING = "waiting"  # a sleep not yet over, or a wait with no event yet
    CANCELLED = "cancelled"  # a sleep or wait still pending when the instance finished


@immutable
class AttemptInfo:
    """One attempt of a ``step.do``: when it ran and how it ended.

    ``error`` carries the attempt's traceback (``error.traceback``) when it failed.
    """

    attempt: int
    start: float | None
    end: float | None
    success: bool
    error: ErrorInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "start": iso(self.start),
            "end": iso(self.end),
            "success": self.success,
            "error": self.error.with_traceback() if self.error else None,
        }

    @classmethod
    def from_dict(cls, shown: Mapping[str, Any]) -> AttemptInfo:
        """The attempt a :meth:`to_dict` shows (unknown keys are ignored)."""
        return cls(
            attempt=int(shown["attempt"]),
            start=_epoch(shown.get("start")),
            end=_epoch(shown.get("end")),
            success=bool(shown.get("success")),
            error=ErrorInfo.from_dict(shown.get("error")),
        )


@immutable
class StepInfo:
    """One row of an instance's step timeline.

    ``attempts`` counts a ``step.do``'s attempts; ``attempt_history`` lists the recorded ones
    (start, end, error with its traceback). A wait shows the ``event_type`` it awaits and, once
    received, the event's payload as its ``output``; a sleep shows when it wakes (``wake_at``).
    A ``rollback`` row is a step's rollback: named as the step it undoes, after the steps, in
    the order the rollbacks ran, with its attempts; its ``output`` is always None.
    A ``runWorkflow`` row is a child workflow: ``child`` links it (``{workflow, id}``), and its
    output (or error) is the child's.
    ``parent`` (the enclosing step of a nested step) is not part of :meth:`to_dict`.
    """

    name: str
    count: int
    type: str  # "do" | "sleep" | "waitForEvent" | "runWorkflow" | "rollback"
    status: StepStatus
    attempts: int
    start: float | None
    end: float | None
    output: Any = None
    error: ErrorInfo | None = None
    parent: str | None = None
    attempt_history: tuple[AttemptInfo, ...] = ()
    event_type: str | None = None
    wake_at: float | None = None
    child: Mapping[str, str] | None = None  # a runWorkflow row's child: {workflow, id}
    attempts_omitted: int = 0
    """Recorded attempts left out of ``attempt_history`` (a page of steps shows at most
    :data:`~lambda_workflows.engine.pages.ATTEMPTS_SHOWN` of a row's attempts); 0: none."""

    def to_dict(self) -> dict[str, Any]:
        shown = self._shown()
        if self.attempts_omitted:  # only on a row of a page, cut (almost never)
            shown["attempts_omitted"] = self.attempts_omitted
        return shown

    def _shown(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "count": self.count,
            "type": self.type,
            "status": str(self.status),
            "attempts": self.attempts,
            "start": iso(self.start),
            "end": iso(self.end),
            "output": self.output,
            "error": dict(self.error) if self.error else None,
            "attempt_history": [attempt.to_dict() for attempt in self.attempt_history],
            "event_type": self.event_type,
            "wake_at": iso(self.wake_at),
            "child": dict(self.child) if self.child else None,
        }

    @classmethod
    def from_dict(cls, shown: Mapping[str, Any]) -> StepInfo:
        """The row a :meth:`to_dict` shows, e.g. from the HTTP API's JSON (times to the
        millisecond; unknown keys are ignored, missing optional ones take their default)."""
        return cls(
            name=str(shown["name"]),
            count=int(shown["count"]),
            type=str(shown["type"]),
            status=StepStatus(shown["status"]),
            attempts=int(shown.get("attempts") or 0),
            start=_epoch(shown.get("start")),
            end=_epoch(shown.get("end")),
            output=shown.get("output"),
            error=ErrorInfo.from_dict(shown.get("error")),
            attempt_history=tuple(
                AttemptInfo.from_dict(a) for a in shown.get("attempt_history") or ()
            ),
            event_type=shown.get("event_type"),
            wake_at=_epoch(shown.get("wake_at")),
            child=shown.get("child"),
            attempts_omitted=int(shown.get("attempts_omitted") or 0),
        )


@immutable
class InstanceUsage:
    """What one instance used, as counted by the store (see :mod:`lambda_workflows.engine.usage` for
    exactly what each number counts, and what it leaves out).

    ``writes``: items written (the instance item's writes, its events and journal entries);
    ``reads``: loads of its journal by runners; ``invocations``: runner invocations that
    advanced it; ``schedules``: timed wake-ups set for it. Readable by attribute or as a
    mapping (``u["writes"]``).
    """

    writes: int = 0
    reads: int = 0
    invocations: int = 0
    schedules: int = 0

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def to_dict(self) -> dict[str, int]:
        return {
            "writes": self.writes,
            "reads": self.reads,
            "invocations": self.invocations,
            "schedules": self.schedules,
        }

    @classmethod
    def from_dict(cls, shown: Mapping[str, Any] | None) -> InstanceUsage | None:
        """The usage a :meth:`to_dict` shows (None for None; missing counts are 0)."""
        if shown is None:
            return None
        return cls(**{f.name: int(shown.get(f.name) or 0) for f in fields(cls)})


@dataclass(frozen=True)
class InstanceStatusView:
    """What ``instance.status()`` returns: ``status``, ``output``, ``error`` and the timeline.

    Readable by attribute (``s.status``) or as a mapping (``s["status"]``). ``rollback`` is
    None unless the instance rolled back (see :class:`RollbackInfo`); each rollback that ran
    is also a row of ``steps``, of type ``rollback``.
    """

    id: str
    workflow: str
    status: InstanceStatus
    output: Any = None
    error: ErrorInfo | None = None
    steps: list[StepInfo] = field(default_factory=list)
    created_at: float | None = None
    finished_at: float | None = None
    wake_at: float | None = None
    usage: InstanceUsage | None = None  # what it used (see lambda_workflows.engine.usage)
    rollback: RollbackInfo | None = None
    workflow_version: str = "1"
    status_reason: str | None = None
    parent: ParentRef | None = None  # the instance that started it, for a child workflow
    steps_total: int | None = None
    """How many rows the whole timeline has, when ``steps`` holds only its first page (see
    :meth:`~lambda_workflows.engine.service.InstanceService.status`); None: ``steps`` is whole."""
    steps_cursor: str | None = None
    """Where the next page of ``steps`` starts (``steps(cursor=...)``), when ``steps`` is cut."""

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def to_dict(self) -> dict[str, Any]:
        shown = self._shown()
        if self.steps_cursor is not None:  # only when the steps are cut to their first page
            shown["steps_total"] = self.steps_total
            shown["steps_cursor"] = self.steps_cursor
        return shown

    def _shown(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "workflow": self.workflow,
            "status": str(self.status),
            "output": self.output,
            "error": dict(self.error) if self.error else None,
            "created": iso(self.created_at),
            "finished": iso(self.finished_at),
            "wake_at": iso(self.wake_at),
            "usage": self.usage.to_dict() if self.usage else None,
            "steps": [step.to_dict() for step in self.steps],
            "rollback": self.rollback.to_dict() if self.rollback else None,
            "workflow_version": self.workflow_version,
            "status_reason": self.status_reason,
            "parent": self.parent.to_dict() if self.parent else None,
        }

    @classmethod
    def from_dict(cls, shown: Mapping[str, Any]) -> InstanceStatusView:
        """The view a :meth:`to_dict` shows, e.g. the body of ``GET …/instances/{id}``
        (times to the millisecond; unknown keys are ignored)."""
        return cls(
            id=str(shown["id"]),
            workflow=str(shown["workflow"]),
            status=InstanceStatus(shown["status"]),
            output=shown.get("output"),
            error=ErrorInfo.from_dict(shown.get("error")),
            steps=[StepInfo.from_dict(step) for step in shown.get("steps") or ()],
            created_at=_epoch(shown.get("created")),
            finished_at=_epoch(shown.get("finished")),
            wake_at=_epoch(shown.get("wake_at")),
            usage=InstanceUsage.from_dict(shown.get("usage")),
            rollback=RollbackInfo.from_dict(shown.get("rollback")),
            workflow_version=str(shown.get("workflow_version") or "1"),
            status_reason=shown.get("status_reason"),
            parent=ParentRef.from_dict(shown.get("parent")),
            steps_total=shown.get("steps_total"),
            steps_cursor=shown.get("steps_cursor"),
        )


def _epoch(shown: str | None) -> float | None:
    """Epoch seconds for a time :func:`~.clock.iso` wrote (``...Z``), or None."""
    if shown is None:
        return None
    return datetime.fromisoformat(shown.replace("Z", "+00:00")).timestamp()


def event_timestamp(epoch: float) -> datetime:
    """Timestamps handed to workflows are aware UTC datetimes."""
    return to_datetime(epoch)
