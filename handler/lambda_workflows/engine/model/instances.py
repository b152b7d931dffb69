"""The instance item and what it carries: its status, reference, error, parent and rollback.

Plain records with no storage concerns: each adapter maps them to its own format.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from lambda_workflows.engine.immutable import immutable


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
    """An instance's rollbacks (see :mod:`lambda_workflows.engine.replay.operations.rollback`): why
    they
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
    # what it used, counted in writes the store makes anyway (see
    # lambda_workflows.engine.instances.usage)
    invocations: int = 0  # runner invocations that took its lease
    item_writes: int = 0  # writes of the instance item itself (and of its events)
    schedules: int = 0  # timed wake-ups set when it suspended
    wake_at: float | None = None
    paused_at: float | None = None
    pauses: tuple[tuple[float, float], ...] = ()
    expires_at: float | None = None
    due_at: float | None = None  # see lambda_workflows.engine.instances.recovery
    slot: int | None = (
        None  # the concurrency slot it holds (see lambda_workflows.engine.instances.slots)
    )
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
