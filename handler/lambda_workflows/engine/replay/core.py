"""Replaying ``run()`` against the journal: the engine's decision-maker.

One :class:`Replay` drives one pass of ``run()``: recorded steps return their recorded value,
new steps run and are recorded through the ``record`` port, and anything that must wait (a
sleep, an event, a retry delay, a pause) raises :class:`Suspend`, which unwinds ``run()``. The
pass ends with an :class:`Outcome`; the runner decides what to do with it. No I/O happens here
except through the injected callables.

:class:`Replay` is the driver: it numbers calls and checks them against the journal
(determinism), enforces the step limit, checks control signals and writes entries. The
suspension bookkeeping (steps as tasks, which suspension wins, steps called after one, a
suspension ``run()`` caught, steps still running when ``run()`` stops) is its base,
:class:`~.step_tasks.StepTasks`; how a pass ends, :mod:`.replay_outcome`. What each ``step``
method does lives in :mod:`.operations`, one module per operation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from lambda_workflows.engine import codec
from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.config import StepConfig
from lambda_workflows.engine.entrypoint import WorkflowEntrypoint, WorkflowEvent
from lambda_workflows.engine.errors import (
    ConfigurationError,
    InfrastructureError,
    NonDeterminismError,
    StepLimitExceeded,
    Suspend,
    SuspendReason,
    UnawaitedStepError,
    WorkflowError,
    error_message,
    error_name,
)
from lambda_workflows.engine.links import LinkClaims, LinkSigner
from lambda_workflows.engine.logs import WorkflowLogger, logger_name
from lambda_workflows.engine.model import (
    ATTEMPT_KINDS,
    EntryKind,
    ErrorInfo,
    InstanceRef,
    JournalEntry,
    ReceivedEvent,
    RollbackInfo,
)
from lambda_workflows.engine.step import StepContext, StepRollback, WorkflowStep
from lambda_workflows.engine.tracebacks import user_traceback

from .journal import Journal, base_key, step_key
from .operations import do, run_workflow, sleep, wait_for_event
from .operations.base import (
    SCOPE,
    Call,
    Registered,
    StepInterceptor,
    current_step,
)
from .parking import Parking
from .replay_outcome import (
    CONTROL_REASONS,
    NOT_OVER,
    Completed,
    Failed,
    Outcome,
    RollBack,
    RolledBack,
    Suspended,
)
from .step_tasks import MAX_SWALLOWED_SUSPENSIONS, StepTasks

if TYPE_CHECKING:
    from .child_steps import ChildStart, WaitFor

__all__ = [
    "CONTROL_REASONS",
    "MAX_SWALLOWED_SUSPENSIONS",
    "NEW_STEP_KINDS",
    "NOT_OVER",
    "ChildStarter",
    "Completed",
    "Failed",
    "Outcome",
    "Recorder",
    "Replay",
    "RollBack",
    "RolledBack",
    "SignalCheck",
    "Suspended",
]

log = logging.getLogger("lambda_workflows.replay")

Recorder = Callable[[JournalEntry], Awaitable[JournalEntry]]
SignalCheck = Callable[[bool], SuspendReason | None]  # its argument: needs the lease
ChildStarter = Callable[[Call, str, "str | None", str, "WaitFor"], "ChildStart"]
"""Creates a ``step.run_workflow``'s child with the wait that names it: ``(call, workflow, id,
params, wait_for)`` (the runner's, see
:class:`lambda_workflows.engine.instances.children.Children`)."""
T = TypeVar("T")

# Entries that count as a new step of the pass (AdvanceResult.steps).
NEW_STEP_KINDS = frozenset({EntryKind.STEP, EntryKind.SLEEP, EntryKind.WAIT, EntryKind.ROLLBACK})


class Replay(StepTasks):
    """One replay pass of one instance's ``run()``.

    Args:
        workflow: the workflow instance (``WorkflowEntrypoint`` subclass, ``env`` set).
        event: the instance's event.
        journal: the loaded journal; new entries are added to it as they are recorded.
        record: the store's conditional write, awaited; returns the entry that won. Steps
            that finish together (a gather) await their writes together: a store that waits on
            the network runs them concurrently (see :meth:`write`).
        clock: the time source.
        pauses: the instance's past pauses (sleeps and retries are shifted by them).
        check_signals: called before each new step runs, with whether the step needs the
            lease (see :meth:`before_new_step`); returns a control reason (``pause``,
            ``terminate``, ``restart``, ``yield``, ``lost``, ``reload``) or None.
        settle_timeout: how long steps still running when ``run()`` stops may take to finish.
        ref: the instance replayed (what the interceptor is told; default: its id alone).
        interceptor: stands in for new step work (a test's mocks); None (the default) runs
            every step as written.
        rollback: the instance's rollback once it rolls back (its record's): the pass is then
            in rollback mode; None (the default) goes forward.
        children: creates the children of ``step.run_workflow`` steps; None (the default)
            stops the pass at a new one, as a replay of a history does.
    """

    def __init__(
        self,
        workflow: WorkflowEntrypoint,
        event: WorkflowEvent,
        journal: Journal,
        record: Recorder,
        clock: Clock,
        *,
        pauses: tuple[tuple[float, float], ...] = (),
        check_signals: SignalCheck | None = None,
        settle_timeout: float = 60.0,
        ref: InstanceRef | None = None,
        interceptor: StepInterceptor | None = None,
        rollback: RollbackInfo | None = None,
        children: ChildStarter | None = None,
        links: LinkSigner | None = None,
        generation: int = 1,
    ) -> None:
        super().__init__(settle_timeout)
        self.workflow = workflow
        self._links = links
        self._generation = generation
        self._children = children
        self.event = event
        self.journal = journal
        self._record = record
        self.clock = clock
        self.pauses = pauses
        self._check_signals = check_signals
        self._ref = ref or InstanceRef("", event.instance_id)
        self._interceptor = interceptor
        self._position = 0
        self._counts: dict[str, int] = {}
        self._infra: InfrastructureError | None = None
        self.new_steps = 0
        self.retries = 0
        self._last_recorded = max(journal.by_position, default=0)
        self._unrecorded: set[str] = set()  # new steps started, none of their entries recorded
        self.rollbacks: dict[str, Registered] = {}
        self._rolling_back = rollback
        self._in_chain = False

    # --- the pass -------------------------------------------------------------------------

    async def run(self) -> Outcome:
        """Run ``run()`` once against the journal and say how it ended."""
        SCOPE.set(None)  # run() is the root scope, even when started from inside a step
        self.workflow.logger = WorkflowLogger(
            logging.getLogger(logger_name(type(self.workflow))),
            self._ref.workflow or type(self.workflow).__name__,  # the registered name
            self.event.instance_id,
            self.is_replaying,
            current_step,
        )
        self._parking = Parking()
        root = asyncio.ensure_future(self._run_root(WorkflowStep(self)))
        self._root_task = root
        outcome = await self._drive(root)
        if self._died is not None:
            raise self._died  # nothing after a crash may be written, as if the process died
        if self._fatal is not None:
            outcome = Failed(ErrorInfo(type(self._fatal).__name__, str(self._fatal)))
        elif self._suspensions:
            # A step suspended, and run() ended on its own meanwhile (a gathered step failed
            # while another sleeps): that ending was computed without the suspended step's
            # outcome. The pass is suspended; a later one replays with it.
            outcome = self._suspended()
        await self._settle()
        if self._infra is not None:
            raise self._infra  # nothing more is ours to write: the runner gives the work back
        lost = any(s.reason == SuspendReason.LOST for s in self._suspensions)
        if isinstance(outcome, Completed | Failed) and lost:
            # The lease went to another runner meanwhile: the ending is not ours to write.
            return Suspended(SuspendReason.LOST)
        if self._rolling_back is not None:
            if isinstance(outcome, Suspended) and outcome.reason in NOT_OVER:
                return outcome
            return await self._roll_back(self._rolling_back.cause)
        if isinstance(outcome, Failed) and self.rollbacks:
            return RollBack(outcome.error)
        return outcome

    async def _roll_back(self, cause: ErrorInfo) -> Outcome:
        """Rollback mode, once the forward part is over: run the chain (see
        :mod:`.operations.rollback`)."""
        self._suspensions = []
        self._suspended_tasks = None
        self._in_chain = True
        try:
            from .operations.rollback import (
                run_chain,  # only an instance rolling back needs it
            )

            ended = await run_chain(self, self.rollbacks.values(), cause)
        except Suspend:
            if self._infra is not None:
                raise self._infra from None
            return self._suspended()
        return RolledBack(ended)

    async def _run_root(self, step: WorkflowStep) -> Outcome:
        try:
            output = await self.workflow.run(self.event, step)
        except Suspend:  # raised by run() itself, not by a step (steps park)
            return self._suspended()
        except Exception as exc:
            # Where run() failed: its own frames (capped, as a step attempt's), kept on the
            # instance's error beside Cloudflare's {name, message}.
            return Failed(ErrorInfo(error_name(exc), error_message(exc), user_traceback(exc)))
        return self._completed(output)

    def _completed(self, output: Any) -> Outcome:
        leftovers = self._leftover_steps()
        if leftovers:
            return Failed(
                ErrorInfo(
                    UnawaitedStepError.__name__,
                    f"run() returned while step(s) {', '.join(map(repr, leftovers))} were "
                    "never awaited; await every step.do/sleep/wait_for_event (or pass them to "
                    "asyncio.gather) so their results and errors are not lost (rules of Workflows: "
                    "always await your steps)",
                )
            )
        try:
            return Completed(codec.encode(output, what="workflow output"))
        except WorkflowError as exc:
            return Failed(ErrorInfo(type(exc).__name__, str(exc)))

    def link_url(self, name: str, event_type: str, timeout: float) -> str:
        """The approval link of the wait ``name`` (the same on every replay: see .links)."""
        if self._links is None:
            raise ConfigurationError(
                f"step.wait_for_event({name!r}, link=True) needs the stack's link key: "
                "template.yaml sets WORKFLOWS_LINK_KEY (a generated secret), `lambda-workflows "
                "dev` and the test kit generate one; this runtime has none"
            )
        claims = LinkClaims(
            self._ref.workflow, self._ref.id, self._generation, name, event_type, timeout
        )
        return self._links.url(claims)

    def is_replaying(self) -> bool:
        """True while run() is re-walking calls the journal already recorded."""
        return self._position < self._last_recorded

    def enter(self, name: str, kind: str) -> Call:
        """Give the call its occurrence count and position, and check it against the journal."""
        self._check_not_suspended()
        scope = SCOPE.get()
        if scope is not None:
            count = scope.counts[name] = scope.counts.get(name, 0) + 1
            return Call(name, count, step_key(name, count, scope.key), None, scope.key)
        self._position += 1
        position = self._position
        count = self._counts[name] = self._counts.get(name, 0) + 1
        key = step_key(name, count, None)
        recorded = self.journal.by_position.get(position)
        if recorded is not None and (recorded.name, recorded.call_kind) != (name, kind):
            self._fail_fatal(
                NonDeterminismError(
                    f"replay of run() called step.{kind}({name!r}) as call #{position}, but "
                    f"the journal recorded step.{recorded.call_kind}({recorded.name!r}) there. "
                    "run() must make the same step calls in the same order on every replay: "
                    "name steps deterministically and keep time, randomness and I/O inside "
                    "step.do callbacks"
                )
            )
        existing = self.journal.entries.get(key)
        if existing is not None and existing.position not in (None, position):
            self._fail_fatal(
                NonDeterminismError(
                    f"replay of run() called step.{kind}({name!r}) (occurrence {count}) as "
                    f"call #{position}, but the journal recorded it as call "
                    f"#{existing.position}; run() must call its steps in the same order on "
                    "every replay"
                )
            )
        return Call(name, count, key, position, None)

    def _fail_fatal(self, error: WorkflowError) -> NoReturn:
        """A rule broken that no ``except`` in run() may hide: the instance errors."""
        if self._fatal is None:
            self._fatal = error
        raise error

    def _store(self, call: Callable[[], T]) -> T:
        """Call the store from inside run(): a failure is the engine's, never the step's.

        An InfrastructureError (throttled, unreachable, outcome unknown) must not reach run(),
        where ``except Exception`` could take it for a failed step. The pass stops instead, and
        the runner gives the work back; the next delivery reloads the journal, so a write that
        did happen is seen there, and one that did not is made again.
        """
        try:
            return call()
        except InfrastructureError as exc:
            self._infra_failed(exc)

    def _infra_failed(self, exc: InfrastructureError) -> NoReturn:
        """Stop the pass for a store failure (see :meth:`_store`)."""
        if self._infra is None:
            self._infra = exc
        self.suspend(SuspendReason.INFRA)

    def before_new_step(self, key: str, *, needs_lease: bool = True) -> None:
        """Checks before a step does new work: the step limit and control signals.

        ``needs_lease`` False: the step only records (a sleep, an event wait: a conditional put that
        the first writer wins), so the runner need not hold the instance's lease for it (see
        :mod:`lambda_workflows.engine.instances.lazy_lease`); a step that runs code needs it.

        In rollback mode, no new forward work runs: the pass stops going forward here (a
        rollback's own attempts are checked for control signals only)."""
        if self._rolling_back is not None and not self._in_chain:
            self.suspend(SuspendReason.ROLLBACK)
        if not self._in_chain and key not in self.journal.steps and key not in self._unrecorded:
            limit = self.workflow.max_steps
            # Steps started whose first write is still in flight (a gather's) count too.
            if len(self.journal.steps) + len(self._unrecorded) >= limit:
                self._fail_fatal(
                    StepLimitExceeded(
                        f"this instance reached its limit of {limit:,} steps; split the work "
                        "across several instances, or raise max_steps on the workflow class "
                        "(at most 25,000)"
                    )
                )
            self._unrecorded.add(key)
        if self._check_signals is not None:
            check = self._check_signals
            reason = self._store(lambda: check(needs_lease))
            if reason is not None:
                self.suspend(reason)

    async def write(self, entry: JournalEntry) -> JournalEntry:
        """Record ``entry`` through the store; return the entry that won the conditional write
        (another runner's, if it recorded this key first) and add it to the journal.

        The write is awaited, so steps that finish together record together (their puts are
        independent: one item per key, each conditional on its own absence). What a
        concurrent step decides from the journal meanwhile must not depend on the outcome:
        an event this delivery hands out is taken now (another wait of the pass takes the
        next one), and a step not yet recorded counts towards the step limit (see
        :meth:`before_new_step`).
        """
        if self._infra is not None:
            # The store is failing: record nothing more in this pass.
            self.suspend(SuspendReason.INFRA)
        if self._rolling_back is not None and not self._in_chain:
            self.suspend(SuspendReason.ROLLBACK)  # a wait's delivery: forward work too
        taken = entry.event_id if entry.kind is EntryKind.DELIVERY else None
        if taken is not None:
            self.journal.consumed.add(taken)
        try:
            winner = await self._record(entry)
        except InfrastructureError as exc:
            self._infra_failed(exc)
        if taken is not None and winner.event_id != taken:
            self.journal.consumed.discard(taken)  # another runner delivered another event
        return self._recorded(winner, ours=winner is entry)

    def _recorded(self, entry: JournalEntry, *, ours: bool) -> JournalEntry:
        """Add a recorded ``entry`` to the journal; count it when this pass recorded it."""
        self.journal.add(entry)
        self._unrecorded.discard(base_key(entry))
        if ours:
            self.new_steps += entry.kind in NEW_STEP_KINDS
            self.retries += entry.kind in ATTEMPT_KINDS
            if log.isEnabledFor(logging.DEBUG):  # its arguments cost a step a few µs
                kind = entry.kind.value
                step = {"step": entry.name, "attempt": entry.attempt or 1, "kind": kind}
                log.debug("recorded %s %r", kind, entry.name, extra=step)
        return entry

    def register_rollback(self, registered: Registered) -> None:
        """Remember a started step's rollback, once per step (see :mod:`.operations.rollback`)."""
        self.rollbacks.setdefault(registered.call.key, registered)

    def now(self) -> float:
        """The current time, from the injected clock."""
        return self.clock.time()

    def stand_in(self, ctx: StepContext) -> Callable[..., Any] | None:
        """The interceptor's stand-in for this ``step.do`` attempt, if it has one."""
        if self._interceptor is None:
            return None
        return self._interceptor.stand_in(self._ref, ctx)

    def event_timed_out(self, call: Call, event_type: str) -> bool:
        """True when the interceptor times this ``step.wait_for_event`` out now."""
        if self._interceptor is None:
            return False
        return self._interceptor.event_timed_out(self._ref, call.name, event_type)

    def start_child(
        self, call: Call, workflow: str, id: str | None, params: str, wait_for: WaitFor
    ) -> ChildStart:
        """Create the child of a ``step.run_workflow`` with its wait, and add the wait to the
        journal (a store failure stops the pass; so does a parent that moved on meanwhile)."""
        starter = self._children
        if starter is None:  # nothing may be created here (a history's replay)
            self.suspend(SuspendReason.RELOAD)
        if self._infra is not None:
            self.suspend(SuspendReason.INFRA)  # the store is failing: record nothing more
        started = self._store(lambda: starter(call, workflow, id, params, wait_for))
        if started.error is not None:
            return started
        if started.wait is None:  # terminated, restarted or deleted first: nothing written
            self.suspend(SuspendReason.RELOAD)
        self._recorded(started.wait, ours=started.ours)
        return started

    # --- the operations (see lambda_workflows.engine.replay.operations)
    # -------------------------------

    async def do(
        self,
        name: str,
        config: StepConfig,
        callback: Callable[..., Any],
        rollback: StepRollback | None = None,
    ) -> Any:
        """The body of ``step.do``: replay the recorded outcome or run new attempts."""
        return await do.run(self, name, config, callback, rollback)

    async def sleep(self, name: str, seconds: float | None, until: float | None) -> None:
        """The body of ``step.sleep`` / ``step.sleep_until``."""
        await sleep.run(self, name, seconds, until)

    async def wait_for_event(self, name: str, event_type: str, timeout: float) -> ReceivedEvent:
        """The body of ``step.wait_for_event``."""
        return await wait_for_event.run(self, name, event_type, timeout)

    async def run_workflow(
        self, name: str, workflow: str, params: str, id: str | None, timeout: float
    ) -> Any:
        """The body of ``step.run_workflow``."""
        return await run_workflow.run(self, name, workflow, params, id, timeout)
