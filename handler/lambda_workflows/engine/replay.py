"""Replaying ``run()`` against the journal: the engine's decision-maker.

One :class:`Replay` drives one pass of ``run()``: recorded steps return their recorded value,
new steps run and are recorded through the ``record`` port, and anything that must wait (a
sleep, an event, a retry delay, a pause) raises :class:`Suspend`, which unwinds ``run()``. The
pass ends with an :class:`Outcome`; the runner decides what to do with it. No I/O happens here
except through the injected callables.

:class:`Replay` is the driver: it numbers calls and checks them against the journal
(determinism), enforces the step limit, checks control signals, writes entries, and keeps the
suspension bookkeeping (which suspension wins, steps called after one, a suspension ``run()``
caught, steps still running when ``run()`` stops). What each ``step`` method does lives in
:mod:`.operations`, one module per operation.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from . import codec
from .caught import Suspension, awaiting_sites, calling_sites, caught_error
from .clock import Clock
from .config import StepConfig
from .entrypoint import WorkflowEntrypoint, WorkflowEvent
from .errors import (
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
from .immutable import immutable
from .journal import Journal, base_key, step_key
from .links import LinkClaims, LinkSigner
from .logs import WorkflowLogger, logger_name
from .model import (
    ATTEMPT_KINDS,
    EntryKind,
    ErrorInfo,
    InstanceRef,
    JournalEntry,
    ReceivedEvent,
    RollbackInfo,
)
from .operations import do, run_workflow, sleep, wait_for_event
from .operations.base import SCOPE, Call, Registered, StepInterceptor, current_step
from .parking import Parking
from .step import StepContext, StepRollback, WorkflowStep
from .tracebacks import user_traceback

if TYPE_CHECKING:
    from .children import ChildStart, WaitFor
    from .operations.rollback import ChainEnd

log = logging.getLogger("lambda_workflows.replay")

Recorder = Callable[[JournalEntry], Awaitable[JournalEntry]]
SignalCheck = Callable[[bool], SuspendReason | None]  # its argument: needs the lease
ChildStarter = Callable[[Call, str, "str | None", str, "WaitFor"], "ChildStart"]
"""Creates a ``step.run_workflow``'s child with the wait that names it: ``(call, workflow, id,
params, wait_for)`` (the runner's, see :class:`lambda_workflows.engine.children.Children`)."""
T = TypeVar("T")

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
# Entries that count as a new step of the pass (AdvanceResult.steps).
NEW_STEP_KINDS = frozenset({EntryKind.STEP, EntryKind.SLEEP, EntryKind.WAIT, EntryKind.ROLLBACK})
# How often the driver cancels a run() that goes on awaiting after each cancellation (a
# ``finally`` that awaits a step parks it again) before that is a caught suspension.
MAX_SWALLOWED_SUSPENSIONS = 100


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


class Replay:
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
        self._settle_timeout = settle_timeout
        self._ref = ref or InstanceRef("", event.instance_id)
        self._interceptor = interceptor
        self._position = 0
        self._counts: dict[str, int] = {}
        self._pending: dict[int, tuple[str, Coroutine[Any, Any, Any], Coroutine[Any, Any, Any]]]
        self._pending = {}
        self._running: dict[int, str] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._root_task: asyncio.Task[Any] | None = None
        self._parking = Parking()
        self._died: BaseException | None = None
        self._suspensions: list[Suspend] = []
        self._parked: Suspension | None = None  # the last step parked at run()'s level
        self._cancels = 0  # how often the driver cancelled run() (see _drive)
        self._cancelled: Suspension | None = None  # the suspension of the last cancellation
        self._suspended_tasks: set[asyncio.Task[Any]] | None = None
        self._fatal: WorkflowError | None = None
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
            from .operations.rollback import run_chain  # only an instance rolling back needs it

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

    async def _drive(self, root: asyncio.Task[Outcome]) -> Outcome:
        """Wait for run(); once every step is parked or done, cancel it (see .parking).

        The cancellation must come back out of run(): a run() that returns, or raises anything
        else, caught it, and errors (see .caught)."""
        while await self._parking.stalled(root):
            self._cancels += 1
            if self._parked is not None:  # where run() waits: read only now, never per step
                parked = self._parked
                sites = awaiting_sites(root.get_coro())
                self._cancelled = Suspension(parked.step, parked.signal, sites)
            if self._cancels > MAX_SWALLOWED_SUSPENSIONS:
                self._caught()
            root.cancel()
        if root.cancelled():
            return self._suspended()
        error = root.exception()
        if error is not None:
            if isinstance(error, BaseExceptionGroup) and error.subgroup(
                (Suspend, asyncio.CancelledError)
            ):
                return self._suspended()  # a TaskGroup whose steps were cancelled
            raise error  # a crash in run() takes the invocation down, as a dead process would
        outcome = root.result()
        if self._cancels and not isinstance(outcome, Suspended):
            self._caught()  # run() returned, or raised something else: it caught it
        return outcome

    def _caught(self) -> None:
        """run() caught the cancellation the driver sent it: the instance errors."""
        if self._fatal is None and self._cancelled is not None:
            self._fatal = caught_error(self._cancelled)

    def suspension_caught(self, suspension: Suspension, step: str) -> NoReturn:
        """The callback of ``step`` caught a nested step's suspension and went on: the instance
        errors (no ``except`` in run() can hide it), and ``step`` parks, recording nothing."""
        if self._fatal is None:
            self._fatal = caught_error(suspension, f"the callback of step {step!r}")
        raise suspension.signal

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

    def _suspended(self) -> Suspended:
        for reason in CONTROL_REASONS:
            if any(s.reason == reason for s in self._suspensions):
                return Suspended(reason)
        timers = [s for s in self._suspensions if s.wake_at is not None]
        if not timers:  # a Suspend raised by user code directly; treat as a reload
            return Suspended(SuspendReason.RELOAD)
        first = min(timers, key=lambda s: s.wake_at or 0.0)
        return Suspended(first.reason, first.wake_at)

    def _leftover_steps(self) -> list[str]:
        names = [name for name, _, _ in self._pending.values()]
        names += list(self._running.values())
        return names

    async def _settle(self) -> None:
        """End parked steps, let steps still running finish (bounded), cancel what is left."""
        for _, wrapper, body in list(self._pending.values()):
            wrapper.close()  # never started: nothing to wait for
            body.close()

        self._pending.clear()
        self._parking.release()
        tasks = [t for t in self._tasks if not t.done() and t is not self._root_task]
        if tasks:
            await asyncio.wait(tasks, timeout=self._settle_timeout)
            for task in tasks:
                if not task.done():
                    task.cancel()
            await asyncio.wait(tasks, timeout=1.0)
        died: BaseException | None = None
        for task in self._tasks:
            if task.done() and not task.cancelled():
                error = task.exception()  # marks it retrieved; Exceptions were handled in run()
                if error is not None and not isinstance(error, Exception | Suspend):
                    died = died or error
        if died is not None:
            # A step still running when run() stopped took the invocation down (a crash, a
            # Lambda timeout): nothing after it may be written, as if the process had died.
            raise died

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

    # --- bookkeeping shared by all operations (what they see as operations.base.Pass) ----

    def track(self, name: str, body: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
        """Wrap a step body so steps never awaited, or still running, can be reported."""
        token = object()
        coro = self._guarded(token, name, body)
        self._pending[id(token)] = (name, coro, body)
        return coro

    async def _guarded(self, token: object, name: str, body: Coroutine[Any, Any, T]) -> T:
        self._pending.pop(id(token), None)
        self._running[id(token)] = name
        task = asyncio.current_task()
        if task is not None and task is not self._root_task:
            self._tasks.add(task)
        self._parking.started()
        parked = False
        try:
            return await body
        except Suspend as signal:
            scope = SCOPE.get()
            if scope is not None:  # a step nested in a callback: the enclosing step parks
                scope.suspended = Suspension(name, signal, calling_sites(sys._getframe(1)))
                raise
            self._parked = Suspension(name, signal)
            parked = True
            await self._parking.park()  # until the pass ends: run() never sees the Suspend
        except BaseException as exc:
            if isinstance(exc, Exception | asyncio.CancelledError) or SCOPE.get() is not None:
                raise
            # The invocation died inside this step (a crash, a Lambda timeout): run() must not
            # get that as a value (gather(return_exceptions=True)) and go on. Steps already
            # running beside it finish; then the pass ends with the crash.
            self._died = self._died or exc
            parked = True
            await self._parking.park()
        finally:
            self._running.pop(id(token), None)
            if not parked:
                self._parking.finished()

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

    def suspend(self, reason: SuspendReason, wake_at: float | None = None) -> NoReturn:
        """Stop the pass here: raise :class:`Suspend` and remember it (see :meth:`run`)."""
        if self._suspended_tasks is None:
            # Steps already started (a gather's other children) may still run and finish;
            # anything started later may not (see _check_not_suspended).
            self._suspended_tasks = set(asyncio.all_tasks()) - {self._root_task}
        signal = Suspend(reason, wake_at)
        self._suspensions.append(signal)
        raise signal

    def _check_not_suspended(self) -> None:
        """A step called once the pass has suspended, from run() itself or a task it made
        afterwards, must not run before what suspended has happened: it suspends (parks) too.

        Called by run() itself once the driver has cancelled it, outside an ``except`` or
        ``finally`` that is unwinding that cancellation (a cleanup step is fine: it parks),
        it means run() caught the cancellation and went on: the instance errors.
        """
        if self._died is not None:  # the invocation is dead: nothing new starts
            self.suspend(SuspendReason.RELOAD)
        started = self._suspended_tasks
        if started is None:
            return
        task = asyncio.current_task()
        if task in started:
            return
        if self._cancels and task is self._root_task and not _unwinding():
            self._caught()  # run() was cancelled, and goes on outside any handler of that
        first = self._suspensions[0]
        self.suspend(first.reason, first.wake_at)

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

        ``needs_lease`` False: the step only records (a sleep, an event wait: a conditional
        put that the first writer wins), so the runner need not hold the instance's lease for
        it (see :mod:`lambda_workflows.engine.lazy_lease`); a step that runs code needs it.

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

    def alone(self) -> bool:
        """True when the calling step is the only one of the pass running, and no other is
        scheduled (a gather's steps are all tracked before the first one starts)."""
        return self._parking.running <= 1 and not self._pending

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

    # --- the operations (see lambda_workflows.engine.operations) -------------------------------

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


def _unwinding() -> bool:
    """True inside an ``except`` or ``finally`` handling the engine's cancellation (or
    suspension), in the calling coroutine or any that awaits it."""
    return isinstance(sys.exc_info()[1], asyncio.CancelledError | Suspend)
