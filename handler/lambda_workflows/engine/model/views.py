"""What ``status()`` shows: the step timeline, its attempts, the usage and the status view.

Each view turns into the JSON the HTTP API answers (``to_dict``) and back (``from_dict``),
so the client reads a remote instance's status into the same classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import StrEnum
from typing import Any

from lambda_workflows.engine.clock import iso
from lambda_workflows.engine.immutable import immutable

from .instances import (
    ErrorInfo,
    InstanceStatus,
    ParentRef,
    RollbackInfo,
)


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
    :data:`~lambda_workflows.engine.instances.pages.ATTEMPTS_SHOWN` of a row's attempts); 0:
    none."""

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
    """What one instance used, as counted by the store (see
    :mod:`lambda_workflows.engine.instances.usage` for exactly what each number counts, and what it
    leaves out).

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
    usage: InstanceUsage | None = None  # what it used (see lambda_workflows.engine.instances.usage)
    rollback: RollbackInfo | None = None
    workflow_version: str = "1"
    status_reason: str | None = None
    parent: ParentRef | None = None  # the instance that started it, for a child workflow
    steps_total: int | None = None
    """How many rows the whole timeline has, when ``steps`` holds only its first page (see
    :meth:`~lambda_workflows.engine.instances.service.InstanceService.status`); None: ``steps`` is
    whole."""
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
    """Epoch seconds for a time :func:`~lambda_workflows.engine.clock.iso` wrote (``...Z``),
    or None."""
    if shown is None:
        return None
    return datetime.fromisoformat(shown.replace("Z", "+00:00")).timestamp()
