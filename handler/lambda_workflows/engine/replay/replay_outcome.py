"""How one replay pass ends: the :data:`Outcome`
:class:`~lambda_workflows.engine.replay.core.Replay` hands the runner, and which of several
suspensions wins.

Plain records, no behaviour: the runner (:mod:`lambda_workflows.engine.instances.advance`) decides
what each ending means for the instance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lambda_workflows.engine.errors import Suspend, SuspendReason
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import ErrorInfo

if TYPE_CHECKING:
    from .operations.rollback import ChainEnd

__all__ = [
    "CONTROL_REASONS",
    "NOT_OVER",
    "Completed",
    "Failed",
    "Outcome",
    "RollBack",
    "RolledBack",
    "Suspended",
    "winning_suspension",
]

# Reasons a pass can stop early, most urgent first. Timers (sleep/retry/event) come after.
# INFRA: a store call failed (throttled, unreachable, outcome unknown); the pass stops and
# the runner gives the work back, so a later delivery continues from what was recorded.
CONTROL_REASONS = (
    SuspendReason.INFRA,
    SuspendReason.LOST,
    SuspendReason.TERMINATE,
    SuspendReason.RESTART,
    SuspendReason.PAUSE,
    SuspendReason.ROLLBACK,
    SuspendReason.RELOAD,
    SuspendReason.YIELD,
)
# In rollback mode, the forward part of a pass that stopped for one of these is not over: the
# rollbacks wait for the next pass. Any other ending (run() returned or raised, a sleep, wait or
# retry not due, new work refused) means every rollback there is to know has been registered.
NOT_OVER = frozenset(CONTROL_REASONS) - {SuspendReason.ROLLBACK}


@immutable
class Completed:
    """``run()`` returned; ``output`` is its encoded JSON value."""

    output: str


@immutable
class Failed:
    """``run()`` raised (or broke a rule the engine enforces)."""

    error: ErrorInfo


@immutable
class Suspended:
    """``run()`` must stop for now: until ``wake_at``, or because of a control signal."""

    reason: SuspendReason
    wake_at: float | None = None


@immutable
class RollBack:
    """``run()`` raised, and steps registered rollbacks: the failure is to be recorded on the
    instance and the rollbacks run (in rollback mode, see :mod:`.operations.rollback`)."""

    error: ErrorInfo


@immutable
class RolledBack:
    """Rollback mode: the chain is over. ``ended`` is None when every rollback returned, else
    the step whose rollback failed for good and that rollback's error."""

    ended: ChainEnd = None


Outcome = Completed | Failed | Suspended | RollBack | RolledBack


def winning_suspension(suspensions: Sequence[Suspend]) -> Suspended:
    """The ending of a pass that suspended, maybe several times (a gather's steps): the most
    urgent control reason, else the earliest timer."""
    for reason in CONTROL_REASONS:
        if any(s.reason == reason for s in suspensions):
            return Suspended(reason)
    timers = [s for s in suspensions if s.wake_at is not None]
    if not timers:  # a Suspend raised by user code directly; treat as a reload
        return Suspended(SuspendReason.RELOAD)
    first = min(timers, key=lambda s: s.wake_at or 0.0)
    return Suspended(first.reason, first.wake_at)
