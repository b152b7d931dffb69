"""What every step operation shares: the call's identity, the step scope, and the pass.

An operation (:mod:`.do`, :mod:`.sleep`, :mod:`.wait_for_event`, :mod:`.run_workflow`,
:mod:`.rollback`) decides what one ``step`` call does on this pass: return what the journal
recorded, record new work, or suspend. It reaches the pass only through :class:`Pass`, which
:class:`lambda_workflows.engine.replay.core.Replay` implements: call positions, the determinism
check, the step limit and control signals, writes and suspensions all stay in the driver. Nothing
here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

from lambda_workflows.engine.config import StepConfig
from lambda_workflows.engine.errors import SuspendReason
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import EntryKind, InstanceRef, JournalEntry
from lambda_workflows.engine.replay.caught import Suspension
from lambda_workflows.engine.replay.child_steps import ChildStart, WaitFor
from lambda_workflows.engine.replay.journal import Journal
from lambda_workflows.engine.step import StepContext, StepRollback

__all__ = [
    "SCOPE",
    "Call",
    "Pass",
    "Registered",
    "StepInterceptor",
    "StepScope",
    "current_step",
]


@immutable
class Call:
    """One step call as replay sees it: its identity in the journal."""

    name: str
    count: int  # the 1-based occurrence of this name (in run(), or in the enclosing step)
    key: str
    position: int | None  # call order in run(); None for a step nested in a callback
    parent: str | None  # the enclosing step's key, for a nested step

    def entry(
        self, kind: EntryKind, at: float, key: str | None = None, **fields: Any
    ) -> JournalEntry:
        """A journal entry of this call (``key`` defaults to the call's own key)."""
        return JournalEntry(
            key=key or self.key,
            kind=kind,
            name=self.name,
            count=self.count,
            at=at,
            position=self.position,
            parent=self.parent,
            **fields,
        )


@immutable
class Registered:
    """A step's rollback, registered with the pass once the step has started."""

    call: Call
    config: StepConfig  # the step's own config: what its rollback gets as ctx.config
    callback: Callable[..., Any]  # the step's callback: its return type decodes the output
    rollback: StepRollback


@dataclass(slots=True)
class StepScope:
    """A step callback attempt in progress: nested steps are counted inside it."""

    key: str
    name: str = ""
    attempt: int = 1
    counts: dict[str, int] = field(default_factory=dict)
    # a nested step's suspension raised through the callback: if the callback still returns
    # or raises something else, it caught it (see lambda_workflows.engine.replay.caught)
    suspended: Suspension | None = None


# The scope of the step callback running in this context; None in run() itself. A context
# variable, so concurrent steps (asyncio.gather) each see their own.
SCOPE: ContextVar[StepScope | None] = ContextVar("workflow_step_scope", default=None)


def current_step() -> tuple[str, int] | None:
    """The ``(name, attempt)`` of the step callback running here, or None in ``run()``."""
    scope = SCOPE.get()
    return None if scope is None else (scope.name, scope.attempt)


class StepInterceptor(Protocol):
    """Stands in for new step work before it happens: how a test mocks a step's result or
    error, or forces a timeout (the test kit's ``WorkflowTestEnv`` gives one to its runner).

    The engine has none unless one is given. It is consulted only for work not yet recorded:
    a recorded outcome replays as it was, whatever the interceptor says.
    """

    def stand_in(self, ref: InstanceRef, ctx: StepContext) -> Callable[..., Any] | None:
        """What to call instead of this ``step.do`` attempt's callback (with the callback's
        arguments, under its timeout), or None to call the callback."""
        ...

    def event_timed_out(self, ref: InstanceRef, name: str, event_type: str) -> bool:
        """True to end this ``step.wait_for_event`` with its timeout now."""
        ...


class Pass(Protocol):
    """What an operation may ask of the replay pass it runs in."""

    @property
    def journal(self) -> Journal:
        """The loaded journal, with every entry recorded so far in this pass."""
        ...

    @property
    def pauses(self) -> tuple[tuple[float, float], ...]:
        """The instance's past pauses: sleeps and retry delays are shifted by them."""
        ...

    def enter(self, name: str, kind: str) -> Call:
        """Number the call and check it against the journal (a mismatch is fatal)."""
        ...

    def before_new_step(self, key: str, *, needs_lease: bool = True) -> None:
        """Before new work: enforce the step limit and stop on a control signal (and take
        the instance's lease first, unless the step ``needs_lease`` not: it runs no code,
        only records)."""
        ...

    def register_rollback(self, registered: Registered) -> None:
        """Remember a started step's rollback (once per step), for when the instance fails."""
        ...

    async def write(self, entry: JournalEntry) -> JournalEntry:
        """Record ``entry``; return the entry that won (another runner's, if it was first).
        Awaited: steps that finish together record together."""
        ...

    def suspend(self, reason: SuspendReason, wake_at: float | None = None) -> NoReturn:
        """Stop the pass here: the instance goes on at ``wake_at`` or on a signal."""
        ...

    def suspension_caught(self, suspension: Suspension, step: str) -> NoReturn:
        """The callback of ``step`` caught a nested step's ``suspension`` and went on: the
        instance errors (:class:`~lambda_workflows.engine.errors.SuspensionCaughtError`), and
        the step stops here, recording nothing."""
        ...

    def now(self) -> float:
        """The current time, from the pass's clock."""
        ...

    def alone(self) -> bool:
        """True when no other step of the pass is running or about to start: a sync callback
        may then run inline (see :mod:`lambda_workflows.engine.replay.callbacks`)."""
        ...

    def stand_in(self, ctx: StepContext) -> Callable[..., Any] | None:
        """The interceptor's stand-in for this attempt (see :class:`StepInterceptor`)."""
        ...

    def event_timed_out(self, call: Call, event_type: str) -> bool:
        """True when the interceptor times this wait out now."""
        ...

    def start_child(
        self, call: Call, workflow: str, id: str | None, params: str, wait_for: WaitFor
    ) -> ChildStart:
        """Create the child workflow of a ``step.run_workflow`` unless it exists, with the
        wait ``wait_for`` builds, recorded in the same write (see
        :mod:`lambda_workflows.engine.instances.children`); stops the pass when the instance moved
        on."""
        ...
