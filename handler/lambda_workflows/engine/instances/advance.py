"""Advancing one instance: load, replay (leased when it runs code), then persist what happened
— with no I/O of its own beyond the ports.

One call of :meth:`Runner.advance` is what one work-queue message triggers. It keeps replaying
in the same invocation while that is useful (short retry delays, signals that arrived
meanwhile) and stops when the instance finishes, suspends, or the invocation nears its end.

No lost wake-up: every move of the instance out of the runner's hands (finish, wait, pause, yield)
is a conditional update on the instance's ``version``. Any signal that arrived since the runner
loaded (an event, pause, terminate, restart) bumped that version, so the update fails and the runner
reloads and replays instead of going to sleep. Wake-ups are scheduled *before* the status write, so
a crash in between leaves at worst a spurious wake-up, never a missing one (and a pending wake-up
the write leaves behind, an event-wait's timeout once the event came, is deleted before it while the
lease is held: :meth:`Runner._drop_stale_wake_up`); and the status write carries the instance's
``due_at`` (see :mod:`lambda_workflows.engine.instances.recovery`), so a wake-up that is lost anyway
(a dropped message, a schedule never created) is found by the recovery sweep.

Rollbacks: when ``run()`` fails with rollbacks registered, the runner first records the failure on
the instance (``StartRollback``, a write that keeps the lease), then replays again in rollback mode
to run them (see :mod:`lambda_workflows.engine.replay.operations.rollback`); the instance ends
(``EndRollback``) only once the chain is over, so any invocation in between goes on with it.

An infrastructure failure (the store or the queue throttled, unreachable, an outcome unknown) is
never a step failure: it ends the advance with the InfrastructureError, after giving the lease
back, so the invocation reports the message as failed and a later delivery continues from the
journal.

One runner per delivery: the lease is taken in the name of the work message and of which delivery
of it this is (:class:`LeaseHolder`), so a delivery SQS hands to two runners at once advances the
instance once, and a *later* delivery takes back a lease its message held (see
:mod:`lambda_workflows.engine.instances.lazy_lease`, which also says why the lease is lazy: taken
only right before new work that runs code).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import uuid
from collections.abc import Callable, Mapping

from lambda_workflows.engine import codec
from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.entrypoint import Env, WorkflowEntrypoint, WorkflowEvent
from lambda_workflows.engine.errors import InfrastructureError, InstanceNotFound, SuspendReason
from lambda_workflows.engine.links import LinkSigner
from lambda_workflows.engine.model import (
    FINISHED,
    ErrorInfo,
    FailedStep,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    RollbackInfo,
    RollbackStatus,
    event_timestamp,
)
from lambda_workflows.engine.replay.core import (
    Completed,
    Failed,
    Outcome,
    Replay,
    RollBack,
    RolledBack,
    Suspended,
)
from lambda_workflows.engine.replay.journal import Journal
from lambda_workflows.engine.replay.operations.base import StepInterceptor
from lambda_workflows.engine.retention import Retention, retention_of
from lambda_workflows.engine.versions import PARK_RETRY_SECONDS, class_for, is_parked, not_deployed

from .children import Children
from .lazy_lease import Lease, LeaseHolder, unleased
from .ports import (
    InstanceState,
    InstanceStore,
    SlotStore,
    WakeUpScheduler,
    WorkQueue,
)
from .runner_settings import (
    AdvanceResult,
    RunnerSettings,
    StatusListener,
)
from .slots import SlotGate
from .transitions import (
    KEEP,
    Change,
    EndRollback,
    Finish,
    Park,
    Pause,
    Settle,
    StartRollback,
    Transition,
    Wait,
    Yield,
)

log = logging.getLogger("lambda_workflows.runner")

__all__ = ["AdvanceResult", "Runner", "RunnerSettings", "StatusListener"]


class Runner:
    """Drives instances forward. One instance per :meth:`advance` call.

    ``interceptor`` (default none) stands in for new step work; the test kit sets it to the mocks a
    test registers (see :class:`~lambda_workflows.engine.replay.operations.base.StepInterceptor`).
    """

    def __init__(
        self,
        workflows: Mapping[str, type[WorkflowEntrypoint]],
        store: InstanceStore,
        queue: WorkQueue,
        scheduler: WakeUpScheduler,
        clock: Clock,
        settings: RunnerSettings | None = None,
        *,
        env: Callable[[], Env] | None = None,
        on_status: StatusListener | None = None,
        interceptor: StepInterceptor | None = None,
        slot_store: SlotStore | None = None,
    ) -> None:
        self.workflows = workflows
        self.store = store
        self.queue = queue
        self.scheduler = scheduler
        self.clock = clock
        self.settings = settings or RunnerSettings()
        self._env = env or Env
        self._on_status = on_status
        self.interceptor = interceptor
        self.links: LinkSigner | None = None
        """Mints the URLs of ``wait_for_event(..., link=True)``; None: that call raises."""
        # the concurrency limits, kept in ``slot_store`` (None: no limit is enforced)
        self.slots = SlotGate.of(workflows, store, queue, clock, slot_store)
        self.children = Children(workflows, store, queue, clock, self.slots)  # run_workflow's
        # Each workflow's retention by outcome, checked here so a bad one fails at start-up.
        self._retention = {
            name: retention_of(workflows, name, self.settings.retention_seconds)
            for name in workflows
        }

    async def advance(
        self,
        ref: InstanceRef,
        remaining: Callable[[], float] | None = None,
        *,
        owner: str | None = None,
        delivery: int = 1,
    ) -> AdvanceResult:
        """Advance ``ref`` as far as it goes in this invocation.

        Args:
            ref: the instance to advance.
            remaining: seconds left in this invocation (Lambda's remaining time); None for
                no limit.
            owner: who takes the lease: the work message's id, so that the same message
                delivered again after a failure takes back the lease it held (default: new).
            delivery: which delivery of ``owner``'s message this is (SQS's receive count): a
                later one may take back the lease, a copy of the same one is turned away.

        Returns:
            The status the instance was left in. ``skipped`` when another runner holds the
            lease or nothing is runnable (that runner will see any new signal itself).

        Raises:
            InfrastructureError: the store or the queue failed; the lease was given back (when
                that was possible), nothing is lost, deliver the work again later.
        """
        lease = Lease(LeaseHolder(owner or uuid.uuid4().hex, delivery))
        try:
            return await self._advance(ref, remaining, lease)
        except Exception:
            if lease.taken:
                self._release(ref, lease.holder)
            raise

    def _release(self, ref: InstanceRef, holder: LeaseHolder) -> None:
        """Give the lease back after a failure, and make the instance due now (best effort:
        if this fails too, the lease expires and the sweep finds the instance then)."""
        try:
            self.store.release_lease(ref, holder.owner, self.clock.time(), delivery=holder.delivery)
        except InfrastructureError as exc:
            log.warning("could not release the lease of %s: %s", ref, exc)

    async def _advance(
        self, ref: InstanceRef, remaining: Callable[[], float] | None, lease: Lease
    ) -> AdvanceResult:
        holder = lease.holder
        state = self._first_load(ref, lease)
        if state is None:
            return AdvanceResult(None, skipped=True)
        result = AdvanceResult(None)
        for passes in range(1, self.settings.max_passes + 1):
            result.passes = passes
            record = state.record
            if lease.taken and not record.held_by(holder.owner, holder.delivery):
                return result  # our lease was taken over
            transition = self._settled(record)
            if transition is None:
                outcome = await self._replay(state, lease, remaining, result)
                if isinstance(outcome, Suspended) and outcome.reason is SuspendReason.LOST:
                    return result
                record, lease.fresh = lease.fresh or record, None  # leased during the pass
                transition = await self._after(outcome, record, remaining)
                if transition is None:  # waited in-process, or a control signal: look again
                    state = self.store.load(ref)
                    continue
            if isinstance(transition, StartRollback) and not lease.taken:
                state = self._lease_and_load(ref, lease)  # the rollbacks run under the lease
                if state is None:
                    return result
                continue
            change = transition.change(record, self.clock.time())
            if record.status_reason is not None and not isinstance(transition, Park):
                change = dataclasses.replace(change or Change(release=True), status_reason=None)
            if change is not None:  # a child's end reaches its parent first: engine.children
                self.children.finishing(record, change)
            if change is not None:
                self._drop_stale_wake_up(record, change)
            updated = self._write(record, change, lease)
            if updated is None:  # something arrived meanwhile: replay with it, leased
                state = self.store.load(ref) if lease.taken else self._lease_and_load(ref, lease)
                if state is None:
                    return result
                continue
            self._notify(updated)
            if self.slots is not None and updated.slot is not None:
                self.slots.release(updated)  # unless it still runs (see engine.slots)
            if change is not None and not change.release:
                state = self.store.load(ref)  # it keeps the lease: go on (to the rollbacks)
                continue
            return result.left(updated)
        self.queue.send(ref)
        last = state.record
        self._write(last, Yield().change(last, self.clock.time()), lease)
        return AdvanceResult(
            state.record.status, self.settings.max_passes, suspended=SuspendReason.YIELD
        )

    def _drop_stale_wake_up(self, record: InstanceRecord, change: Change) -> None:
        """Delete the wake-up the instance waited for when it is still to come and ``change``
        leaves it (the event came before its wait's timeout, the instance ends): it would fire
        for nothing. Done before the write, while the lease keeps any other runner from
        scheduling for this instance; if the write then fails, the replay that follows
        schedules again whatever it still waits for. Best effort (see
        :meth:`~lambda_workflows.engine.instances.ports.WakeUpScheduler.unschedule`)."""
        old, new = record.wake_at, change.wake_at
        if old is None or old <= self.clock.time() or new is KEEP:
            return
        # wake-ups are kept to the second (schedule names): the same second is the same one
        if isinstance(new, float) and math.ceil(new) == math.ceil(old):
            return
        self.scheduler.unschedule(record.ref, old)

    def _first_load(self, ref: InstanceRef, lease: Lease) -> InstanceState | None:
        """The instance, loaded without a lease when nothing needs one yet (see
        :mod:`lambda_workflows.engine.instances.lazy_lease`); None when there is nothing to advance:
        it is gone, finished or paused, or another runner holds it."""
        if self.slots is not None and self.slots.limited(ref.workflow):
            return self._lease_and_load(ref, lease)  # its lease takes a slot: first, always
        try:
            state = self.store.load(ref)
        except InstanceNotFound:
            return None  # deleted meanwhile (the lease would have found no item either)
        record = state.record
        if record.status in FINISHED or record.status is InstanceStatus.PAUSED:
            return None  # what the lease would refuse; nothing to let go either
        if record.leased(self.clock.time()):
            return self._lease_and_load(ref, lease)  # the lease decides: turned away, or ours
        return state

    def _lease_and_load(self, ref: InstanceRef, lease: Lease) -> InstanceState | None:
        """Take the lease, then load (the eager way); None when the lease is refused."""
        leased = self._lease(ref, lease.holder)
        if leased is None:
            return None
        lease.took(leased)
        self._notify(leased)
        return self.store.load(ref)

    def _write(
        self, record: InstanceRecord, change: Change | None, lease: Lease
    ) -> InstanceRecord | None:
        """Write ``change`` (None: only let the lease go) on ``record``'s version: under the
        lease, or in its place (see :mod:`lambda_workflows.engine.instances.lazy_lease`)."""
        change = change or Change(release=True)
        if lease.taken:
            return self.store.update(record.ref, record.version, change)
        now = self.clock.time()
        written = unleased(change, record, now)
        return self.store.update(record.ref, record.version, written, lease_free_at=now)

    def _lease(self, ref: InstanceRef, holder: LeaseHolder) -> InstanceRecord | None:
        """The instance's lease for ``holder`` (through its concurrency slots, if limited)."""
        now = self.clock.time()
        expires_at = now + self.settings.lease_seconds
        if self.slots is not None and self.slots.limited(ref.workflow):
            return self.slots.lease(ref, holder.owner, now, expires_at, delivery=holder.delivery)
        return self.store.acquire_lease(
            ref, holder.owner, now, expires_at, delivery=holder.delivery
        )

    # --- deciding -------------------------------------------------------------------------

    def _settled(self, record: InstanceRecord) -> Transition | None:
        """The transition of an instance that must not be replayed now, or None to replay."""
        if record.status in FINISHED or record.status is InstanceStatus.PAUSED:
            return Settle()
        if record.status is InstanceStatus.WAITING_FOR_PAUSE:
            return Pause(by_runner=True)
        if is_parked(self.workflows, record.workflow, record.workflow_version):
            return Park(not_deployed(record.workflow, record.workflow_version), PARK_RETRY_SECONDS)
        return None

    def _class_of(self, record: InstanceRecord) -> type[WorkflowEntrypoint] | None:
        """The class of the version ``record`` was created on, if it is registered."""
        found: type[WorkflowEntrypoint] | None
        found = class_for(self.workflows, record.workflow, record.workflow_version)
        return found

    async def _after(
        self, outcome: Outcome, record: InstanceRecord, remaining: Callable[[], float] | None
    ) -> Transition | None:
        """The transition ``outcome`` calls for; None to load again and replay (a control
        signal, or a short wait slept in-process)."""
        if self._should_wait_inline(outcome, remaining):
            assert isinstance(outcome, Suspended) and outcome.wake_at is not None
            await self.clock.sleep(outcome.wake_at - self.clock.time())
            return None
        return self._transition_for(outcome, record)

    def _transition_for(self, outcome: Outcome, record: InstanceRecord) -> Transition | None:
        retention = self._retention_of(record.workflow)
        if isinstance(outcome, Completed):
            return Finish(InstanceStatus.COMPLETE, retention.success, output=outcome.output)
        if isinstance(outcome, Failed):
            return Finish(InstanceStatus.ERRORED, retention.error, error=outcome.error)
        if isinstance(outcome, RollBack):
            return StartRollback(outcome.error)
        if isinstance(outcome, RolledBack):
            return EndRollback(_rolled_back(record, outcome), retention.error)
        if outcome.reason is SuspendReason.PAUSE:
            return Pause(by_runner=True)
        if outcome.reason is SuspendReason.YIELD:
            self.queue.send(record.ref)  # before letting go: a crash now costs a duplicate
            return Yield()
        if outcome.wake_at is not None:
            self.scheduler.schedule(record.ref, outcome.wake_at, outcome.reason)
            return Wait(outcome.wake_at)
        return None

    def _retention_of(self, workflow: str) -> Retention:
        """How long an instance of ``workflow`` is kept once it finishes, by outcome."""
        found = self._retention.get(workflow)
        if found is None:  # registered after this runner was built, or not at all
            found = retention_of(self.workflows, workflow, self.settings.retention_seconds)
        return found

    def _should_wait_inline(self, outcome: Outcome, remaining: Callable[[], float] | None) -> bool:
        if not isinstance(outcome, Suspended) or outcome.wake_at is None:
            return False
        if outcome.reason is SuspendReason.EVENT:
            return False  # an event arrives as a signal; its timeout is usually far away
        delay = outcome.wake_at - self.clock.time()
        if delay > self.settings.inline_wait:
            return False
        return remaining is None or remaining() - delay > self.settings.margin_seconds

    # --- replaying ------------------------------------------------------------------------

    async def _replay(
        self,
        state: InstanceState,
        lease: Lease,
        remaining: Callable[[], float] | None,
        result: AdvanceResult,
    ) -> Outcome:
        record = state.record
        workflow_cls = self._class_of(record)
        if workflow_cls is None:
            return Failed(
                ErrorInfo(
                    "UnknownWorkflow",
                    f"no workflow is registered as '{record.workflow}' in this runner; register "
                    "it (WORKFLOWS=name=module:Class) and restart the instance",
                )
            )
        try:
            event = WorkflowEvent(
                codec.decode(record.params), event_timestamp(record.created_at), record.id
            )
            workflow = workflow_cls(self._env())
        except Exception as exc:
            return Failed(ErrorInfo(type(exc).__name__, str(exc)))
        replay = Replay(
            workflow,
            event,
            Journal(state.entries, state.events),
            lambda entry: self.store.record_async(record.ref, record.generation, entry),
            self.clock,
            pauses=record.pauses,
            check_signals=self._signal_check(record, lease, remaining),
            settle_timeout=self._settle_timeout(remaining),
            ref=record.ref,
            interceptor=self.interceptor,
            rollback=record.rollback,
            links=self.links,
            generation=record.generation,
            children=lambda call, workflow, id, params, wait_for: self.children.start(
                record, (call.name, call.key), (workflow, id, params), wait_for
            ),
        )
        try:
            outcome = await replay.run()
        finally:
            result.steps += replay.new_steps
            result.retries += replay.retries
        if isinstance(outcome, Suspended):
            result.suspended = outcome.reason
        log.debug("replayed %s: %s (%d new steps)", record.ref, outcome, replay.new_steps)
        return outcome

    def _settle_timeout(self, remaining: Callable[[], float] | None) -> float:
        if remaining is None:
            return 600.0
        return max(0.0, remaining() - self.settings.margin_seconds)

    def _signal_check(
        self, loaded: InstanceRecord, lease: Lease, remaining: Callable[[], float] | None
    ) -> Callable[[bool], SuspendReason | None]:
        """Before each new step: out of time? paused, terminated, restarted, lease lost? And
        the lease taken, before the first step that needs it."""
        holder = lease.holder
        last_look = self.clock.time()

        def check(needs_lease: bool) -> SuspendReason | None:
            nonlocal last_look
            if remaining is not None and remaining() < self.settings.margin_seconds:
                return SuspendReason.YIELD
            now = self.clock.time()
            if not lease.taken:
                last_look = now
                return self._lease_mid_pass(loaded, lease) if needs_lease else None
            if now - last_look < self.settings.signal_interval:
                return None
            last_look = now
            current = self.store.renew_lease(
                loaded.ref,
                holder.owner,
                now + self.settings.lease_seconds,
                delivery=holder.delivery,
            )
            if current is None:
                return SuspendReason.LOST
            if current.generation != loaded.generation:
                return SuspendReason.RESTART
            if current.status is InstanceStatus.TERMINATED:
                return SuspendReason.TERMINATE
            if current.rollback is not None and loaded.rollback is None:
                return SuspendReason.ROLLBACK  # terminate(rollback=True)
            if current.status is InstanceStatus.WAITING_FOR_PAUSE:
                return SuspendReason.PAUSE
            return None

        return check

    def _lease_mid_pass(self, loaded: InstanceRecord, lease: Lease) -> SuspendReason | None:
        """Take the lease before the pass's first step that needs it: LOST when refused
        (another runner holds it, or the instance stopped being runnable), RELOAD when the
        instance moved since ``loaded`` (replay on what it is now, leased)."""
        leased = self._lease(loaded.ref, lease.holder)
        if leased is None:
            return SuspendReason.LOST
        lease.took(leased, mid_pass=True)
        self._notify(leased)
        return None if lease.as_loaded(loaded, leased) else SuspendReason.RELOAD

    def _notify(self, record: InstanceRecord) -> None:
        if self._on_status is not None:
            self._on_status(record)


def _rolled_back(record: InstanceRecord, outcome: RolledBack) -> RollbackInfo:
    """The instance's rollback once its chain is over: complete, or failed and where."""
    assert record.rollback is not None, "only a pass in rollback mode ends a chain"
    if outcome.ended is None:
        return dataclasses.replace(record.rollback, status=RollbackStatus.COMPLETE)
    (name, count), error = outcome.ended
    return dataclasses.replace(
        record.rollback,
        status=RollbackStatus.FAILED,
        failed_step=FailedStep(name, count),
        error=error,
    )
