"""Replay a recorded history against workflow classes, and find where the code diverges.

:class:`Replayer` runs the engine's own replay pass over a history (see :mod:`.history`) with
nothing that touches the world: recorded steps return their recorded values, and the pass ends
where the history ends. No step callback runs, nothing is written and no clock is read (the
pass's time is the history's last recorded moment, so a sleep, retry or event wait not yet due
there just ends the replay).

The first call ``run()`` makes that differs from the history (another name or kind at that
call position, or a recorded step that ``run()`` no longer reaches) is the divergence. A call
past the end of an unfinished history is new work, which the code may well do: compatible. A
call past the end of a finished (``complete`` or ``errored``) history is a divergence: that
``run()`` had returned there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple, NoReturn, overload

from lambda_workflows.engine.entrypoint import WorkflowEntrypoint, WorkflowEvent
from lambda_workflows.engine.errors import NonDeterminismError, SuspendReason
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import InstanceRef, JournalEntry, event_timestamp
from lambda_workflows.engine.replay.core import Completed, Failed, Outcome, Replay, RollBack
from lambda_workflows.engine.replay.journal import Journal
from lambda_workflows.engine.replay.operations.base import SCOPE, Call
from lambda_workflows.engine.versions import class_for, split_key, version_of

from .history import History, load

__all__ = ["Divergence", "ReplayDivergence", "ReplayResult", "Replayer", "StepCall"]


class StepCall(NamedTuple):
    """A step call: its name and kind (``do``, ``sleep``, ``wait_for_event``)."""

    name: str
    kind: str

    def __str__(self) -> str:
        return f"step.{self.kind}({self.name!r})"


@immutable
class Divergence:
    """Where replaying a history with the code first differs from it.

    ``position`` is the call's number in ``run()`` (1 = its first step call); ``recorded`` is
    the step the history has there (None: that ``run()`` had returned), ``replayed`` the one
    the code calls (None: the code's ``run()`` ended before it); ``hint`` says what probably
    changed and what to do.
    """

    position: int
    recorded: StepCall | None
    replayed: StepCall | None
    hint: str

    def __str__(self) -> str:
        recorded = f"recorded {self.recorded}" if self.recorded else "had returned"
        replayed = f"calls {self.replayed}" if self.replayed else "ends run() there"
        return (
            f"diverges at call #{self.position}: the history {recorded}, the code "
            f"{replayed}. {self.hint}"
        )


@immutable
class ReplayResult:
    """How one history replayed: ``compatible``, or the first :class:`Divergence`.

    ``version`` is the version the instance was created on; ``replayed_with`` the version of
    the class that replayed it (the newest when that version is not registered). ``source`` is
    the file it was read from, if any.
    """

    workflow: str
    id: str
    version: str
    replayed_with: str
    divergence: Divergence | None = None
    source: str | None = None

    @property
    def compatible(self) -> bool:
        """True when the code makes the recorded calls, in the recorded order."""
        return self.divergence is None

    @property
    def message(self) -> str:
        """One line: which instance, and how it replayed."""
        where = f" ({self.source})" if self.source else ""
        head = f"{self.workflow}/{self.id} (version {self.version}){where}"
        if self.divergence is None:
            return f"{head} replays clean on version {self.replayed_with}"
        return f"{head} on version {self.replayed_with} {self.divergence}"


class ReplayDivergence(NonDeterminismError):
    """A replayed history diverged (``Replayer.replay(..., raise_on_divergence=True)``)."""

    def __init__(self, result: ReplayResult) -> None:
        super().__init__(result.message)
        self.result = result
        self.divergence = result.divergence


class _AsOf:
    """The history's last recorded moment, standing still: a replay reads no clock."""

    def __init__(self, at: float) -> None:
        self._at = at

    def time(self) -> float:
        return self._at

    async def sleep(self, seconds: float) -> None:
        return None


class _HistoryPass(Replay):
    """A replay pass that only re-walks a history: new work ends it, a difference is kept."""

    def __init__(self, workflow: WorkflowEntrypoint, history: History) -> None:
        moments = [history.created_at, *(e.at for e in history.entries)]
        moments += [e.timestamp for e in history.events]
        super().__init__(
            workflow,
            WorkflowEvent(history.params, event_timestamp(history.created_at), history.id),
            Journal(history.entries, history.events),
            _no_record,
            _AsOf(max(moments)),
            settle_timeout=1.0,
            ref=InstanceRef(history.workflow, history.id),
        )
        self.history = history
        self.divergence: Divergence | None = None

    def enter(self, name: str, kind: str) -> Call:
        position = self._position + 1 if SCOPE.get() is None else None
        try:
            call = super().enter(name, kind)
        except NonDeterminismError:
            if position is not None:
                self._diverged(position, StepCall(name, kind))
            raise
        if position is not None and self.history.finished and position > self._last_recorded:
            self._diverged(position, StepCall(name, kind))
            self._fail_fatal(NonDeterminismError(str(self.divergence)))
        return call

    def before_new_step(self, key: str, *, needs_lease: bool = True) -> None:
        # Past what the history recorded: the code's new work, not ours to run.
        self.suspend(SuspendReason.YIELD)

    async def write(self, entry: JournalEntry) -> JournalEntry:
        self.suspend(SuspendReason.YIELD)

    def ended(self, outcome: Outcome) -> None:
        """After the pass: a recorded step that run() never reached is a divergence too."""
        if self.divergence is not None or not isinstance(outcome, Completed | Failed | RollBack):
            return
        position = self._position + 1
        if position <= self._last_recorded:
            how = "returned" if isinstance(outcome, Completed) else f"raised {outcome.error.name}"
            self._diverged(position, None, how)

    def _diverged(self, position: int, replayed: StepCall | None, how: str = "") -> None:
        if self.divergence is not None:
            return
        entry = self.journal.by_position.get(position)
        recorded = StepCall(entry.name, entry.call_kind) if entry else None
        self.divergence = Divergence(
            position, recorded, replayed, _hint(self, position, recorded, replayed, how)
        )


async def _no_record(entry: JournalEntry) -> NoReturn:
    raise AssertionError("a history replay records nothing")  # write() is overridden


def _hint(
    replay: _HistoryPass,
    position: int,
    recorded: StepCall | None,
    replayed: StepCall | None,
    how: str,
) -> str:
    history = replay.history
    calls = {p: StepCall(e.name, e.call_kind) for p, e in replay.journal.by_position.items()}
    later = sorted(p for p, call in calls.items() if p > position and call == replayed)
    if recorded is None:
        what = "that run() had returned here: a step was added after its last one"
    elif replayed is None:
        what = f"run() {how} before it: a step was removed, or made conditional"
    elif recorded.name == replayed.name:
        what = f"step {recorded.name!r} changed from step.{recorded.kind} to step.{replayed.kind}"
    elif later:
        what = (
            f"the history has {replayed} later, at call #{later[0]}: steps were reordered, or "
            "one was inserted before it"
        )
    else:
        what = (
            f"{replayed} is not in the history: step {recorded.name!r} was renamed, or a new "
            "step inserted before it"
        )
    return (
        f"Probably {what}. Instances in flight on version {history.workflow_version} replay "
        f"with that version's class: bump version on the changed class and keep the old one "
        f"registered as {history.workflow}@{history.workflow_version} until lambda-workflows "
        "describe "
        f"{history.workflow} shows none in flight on it."
    )


class Replayer:
    """Replays recorded histories against workflow classes, without running any step.

    ::

        from lambda_workflows.testing import Replayer

        def test_recorded_histories_replay() -> None:
            results = Replayer({"orders": Orders}).replay("tests/histories")
            assert all(r.compatible for r in results), [r.message for r in results]

    Args:
        workflows: classes by registered name, as ``WORKFLOWS`` names them: ``"orders"`` for
            the newest, ``"orders@1"`` for an older version kept registered. A history is
            replayed by its version's class, else by the newest class of its workflow.
    """

    def __init__(self, workflows: Mapping[str, type[WorkflowEntrypoint]]) -> None:
        self.workflows = dict(workflows)

    @overload
    def replay(
        self, history: History | Mapping[str, Any], *, raise_on_divergence: bool = False
    ) -> ReplayResult: ...

    @overload
    def replay(
        self, history: str | Path, *, raise_on_divergence: bool = False
    ) -> ReplayResult | list[ReplayResult]: ...

    def replay(
        self,
        history: History | Mapping[str, Any] | str | Path,
        *,
        raise_on_divergence: bool = False,
    ) -> ReplayResult | list[ReplayResult]:
        """Replay a history (a :class:`History`, its export-format dict, or a file), or every
        ``*.json`` history of a directory (a list of results, one per file, by file name).

        Raises:
            ReplayDivergence: with ``raise_on_divergence=True``, for the first history that
                diverges (a :class:`~lambda_workflows.NonDeterminismError`).
            ValueError: no class of the history's workflow is given; or not a history.
        """
        if isinstance(history, str | Path) and Path(history).is_dir():
            files = sorted(Path(history).glob("*.json"))
            if not files:
                raise ValueError(f"{history} holds no history files (*.json)")
            results = [self._replay_file(f) for f in files]
            if raise_on_divergence:
                for result in results:
                    _raise_if_diverged(result)
            return results
        if isinstance(history, str | Path):
            result = self._replay_file(Path(history))
        else:
            loaded = history if isinstance(history, History) else History.from_dict(history)
            result = self.replay_history(loaded)
        if raise_on_divergence:
            _raise_if_diverged(result)
        return result

    def _replay_file(self, path: Path) -> ReplayResult:
        result = self.replay_history(load(path))
        return ReplayResult(
            result.workflow,
            result.id,
            result.version,
            result.replayed_with,
            result.divergence,
            str(path),
        )

    def replay_history(self, history: History) -> ReplayResult:
        """Replay one :class:`History` (run in an event loop of its own)."""
        cls = class_for(self.workflows, history.workflow, history.workflow_version)
        cls = cls or self.workflows.get(history.workflow)
        if cls is None:
            given = ", ".join(sorted({split_key(k)[0] for k in self.workflows})) or "none"
            raise ValueError(
                f"the history of {history.workflow}/{history.id} needs a class for workflow "
                f"{history.workflow!r}; pass it as Replayer({{{history.workflow!r}: Class}}) "
                f"(given: {given})"
            )
        replay = _HistoryPass(cls(), history)
        outcome = asyncio.run(replay.run())
        replay.ended(outcome)
        return ReplayResult(
            history.workflow,
            history.id,
            history.workflow_version,
            version_of(cls),
            replay.divergence,
        )


def _raise_if_diverged(result: ReplayResult) -> None:
    if result.divergence is not None:
        raise ReplayDivergence(result)
