"""The write side of the instance API on existing instances: pause, resume, terminate,
restart, delete, send events, and the recovery sweep's entry point. Creating instances is
:mod:`.creation`'s; reading them, :mod:`.queries`'.

Every command reads the instance, decides (see :mod:`lambda_workflows.engine.instances.transitions`)
and writes only if nobody wrote in between; each wake-up it posts comes after the write it follows
(:func:`post_wake_up`), so a lost one is found by the sweep.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lambda_workflows.engine import codec
from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.errors import (
    ConcurrentModification,
    InfrastructureError,
    InstanceNotFound,
    InvalidInput,
    InvalidTransition,
    WorkflowError,
)
from lambda_workflows.engine.limits import check_id
from lambda_workflows.engine.model import (
    FINISHED,
    RUNNABLE,
    EventRecord,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    event_id,
)
from lambda_workflows.engine.retention import retention_of
from lambda_workflows.engine.versions import check_workflow, newest_version

from .deletion import DeleteBatchResult, check_delete_batch
from .ports import (
    CLAIM_SPAN,
    InstanceStore,
    WakeUpScheduler,
    WorkQueue,
)
from .recorded_steps import StepSelector
from .recovery import SWEEP_MARGIN
from .restart_from import Kept, kept_before
from .slots import SlotGate
from .transitions import (
    Change,
    Pause,
    Restart,
    Resume,
    Terminate,
    TerminateWithRollback,
    Transition,
)

__all__ = ["InstanceCommands", "post_wake_up"]

log = logging.getLogger("lambda_workflows.service")


@dataclass(eq=False)
class InstanceCommands:
    """Controls existing instances of the registered workflows.

    Args:
        workflows: the registry (or the registered names).
        store: where the instances are.
        queue: where their wake-ups are posted.
        scheduler: their timed wake-ups (cancelled on a terminate, a restart, a delete).
        clock: the time source.
        slots: the concurrency limits (None: no limit is enforced).
        retention_seconds: how long a finished instance is kept, for a workflow that says
            nothing of its own.
    """

    workflows: Collection[str]
    store: InstanceStore
    queue: WorkQueue
    scheduler: WakeUpScheduler
    clock: Clock
    slots: SlotGate | None = None
    retention_seconds: float = 30 * 86_400.0

    def pause(self, ref: InstanceRef) -> InstanceRecord:
        """Pause: at once if nothing runs, else when the running step finishes."""
        return self._change(ref, Pause())[1]

    def resume(self, ref: InstanceRef) -> InstanceRecord:
        """Resume a paused instance; its pending sleeps and retry delays move by the pause."""
        before, record = self._change(ref, Resume())
        if before.status is InstanceStatus.PAUSED and record is not before:
            post_wake_up(lambda: self.queue.send(ref), ref)
        return record

    def terminate(self, ref: InstanceRef, rollback: bool = False) -> InstanceRecord:
        """Stop the instance for good. A finished instance → InvalidTransition.

        With ``rollback=True`` the rollbacks of the steps it started run first (their error
        is named ``Terminated``), and then it becomes ``terminated``: meanwhile it is running.
        It is kept for its workflow's ``retention["error"]`` (default: the runtime's).

        Its child workflows still running (``step.run_workflow``) are terminated too, and a child's
        parent gets its step's answer (see :mod:`lambda_workflows.engine.instances.children`).
        """
        from .children import (
            terminated,  # what only a terminate needs
        )

        if rollback:
            record = self._change(ref, TerminateWithRollback())[1]
            post_wake_up(lambda: self.queue.send(ref), ref)
            terminated(self, record)
            return record
        keep = retention_of(self.workflows, ref.workflow, self.retention_seconds).error
        try:
            record = self._change(ref, Terminate(keep))[1]
        except InvalidTransition:
            terminated(self, self.store.get(ref))  # a terminate retried after a crash: finish it
            raise
        post_wake_up(lambda: self.scheduler.cancel(ref), ref)  # a stale wake-up is harmless
        terminated(self, record)
        return record

    def restart(
        self, ref: InstanceRef, from_step: Mapping[str, Any] | StepSelector | None = None
    ) -> InstanceRecord:
        """Run the instance again, same id and params, in a new generation of its journal:
        from the top, or from a step with ``from_step={"name": ..., "count": 1, "type": "do"}``
        (``count`` and ``type`` optional: the first occurrence, any type).

        From a step, the results recorded before it are kept (replay returns them; their callbacks
        do not run again), and that step and every step ``run()`` called after it run again (see
        :mod:`lambda_workflows.engine.instances.restart_from`): from a sleep, from the step an
        errored instance failed at, from any recorded step.

        Raises:
            InvalidInput: ``from_step`` is malformed or names no recorded step (the message
                lists the recorded ones); nothing was written.
        """
        selector = None if from_step is None else StepSelector.parse(from_step)
        token = uuid.uuid4().hex  # names this restart's claim on its new generation
        claimed = 0
        for _ in range(20):
            state = self.store.load(ref) if selector is not None else None
            record = state.record if state is not None else self.store.get(ref)
            kept = Kept()
            if state is not None and selector is not None:
                # checked before anything is written: an unknown step changes nothing
                kept = kept_before(state, selector, max(claimed, record.generation + 1))
            if claimed <= record.generation:
                claimed = self._claim(ref, record.generation, token)
                if state is not None and selector is not None:
                    kept = kept_before(state, selector, claimed)
            if kept:
                self.store.seed_generation(ref, claimed, kept.entries, kept.events)
            now = self.clock.time()
            newest = newest_version(self.workflows, ref.workflow)  # a restart runs the newest
            change = Restart(claimed, newest).change(record, now) or Change()
            updated = self.store.update(ref, record.version, change)
            if updated is not None:
                post_wake_up(lambda: self.scheduler.cancel(ref), ref)  # a stale wake-up is harmless
                post_wake_up(lambda: self.queue.send(ref), ref)
                return updated
        raise ConcurrentModification(f"instance {ref} is changing too fast; try again")

    def _claim(self, ref: InstanceRef, current: int, token: str) -> int:
        """The first generation above ``current`` that this restart (``token``) could claim.

        Claimed before the copies are written and before the instance moves to it, so no
        other restart (from the top or from a step) ever uses the same generation.
        """
        for generation in range(current + 1, current + 1 + CLAIM_SPAN):
            if self.store.claim_generation(ref, generation, token):
                return generation
        raise ConcurrentModification(f"instance {ref} is being restarted too often; try again")

    # --- deleting -------------------------------------------------------------------------

    def delete(self, ref: InstanceRef) -> None:
        """Delete the instance: its record, journal, events and chunks, and its pending
        wake-ups. A running or waiting instance is terminated first: a runner busy with it stops,
        and nothing it still writes is ever read (see
        :mod:`lambda_workflows.engine.instances.deletion`); as with :meth:`terminate`, its children
        still running are terminated, and a child's parent gets its step's answer.

        A delete of an instance whose delete was cut short (a client's retry after a timeout)
        completes it and succeeds (see :mod:`lambda_workflows.engine.instances.deletion`).

        Raises:
            InstanceNotFound: no instance has this id (never created, or already deleted);
                nothing was changed.
        """
        check_workflow(self.workflows, ref.workflow)
        keep = retention_of(self.workflows, ref.workflow, self.retention_seconds).error
        for _ in range(20):
            try:
                record = self.store.get(ref)
            except InstanceNotFound:
                if not self.store.finish_delete(ref):
                    raise
                post_wake_up(lambda: self.scheduler.cancel(ref), ref)  # the first may not have
                return
            if record.status not in FINISHED:
                change = Terminate(keep).change(record, self.clock.time()) or Change()
                terminated = self.store.update(ref, record.version, change)
                if terminated is None:
                    continue  # changed meanwhile: decide again
                record = terminated
            if record.status is InstanceStatus.TERMINATED:
                from . import children  # only a child or a parent needs it

                # a parent's step fails, children stop; also when found terminated: a delete
                # cut short between its terminate and this leaves them to its retry
                children.terminated(self, record)
            if self.store.delete(record):
                post_wake_up(lambda: self.scheduler.cancel(ref), ref)  # a late one finds nothing
                return
        raise ConcurrentModification(f"instance {ref} is changing too fast; try again")

    def delete_batch(self, workflow: str, ids: Sequence[str]) -> DeleteBatchResult:
        """Delete up to 100 instances of ``workflow``, each as :meth:`delete` does.

        Every position of ``ids`` is answered: in ``deleted`` (``{"id"}``) or in ``errors``
        (``{"index", "id", "code", "message"}``, code ``not_found`` or ``invalid_input``). An
        id given twice is deleted once and answered at each position.

        Raises:
            InvalidInput: the batch itself is malformed (not a list of strings, over 100 ids);
                nothing was deleted.
        """
        check_workflow(self.workflows, workflow)
        wanted = check_delete_batch(ids)
        result = DeleteBatchResult()
        outcome: dict[str, tuple[str, str] | None] = {}  # id → None (deleted) or error
        for index, id in enumerate(wanted):
            if id not in outcome:
                outcome[id] = self._delete_item(InstanceRef(workflow, id))
            error = outcome[id]
            if error is None:
                result.deleted.append({"id": id})
            else:
                result.refuse(index, id, *error)
        return result

    def _delete_item(self, ref: InstanceRef) -> tuple[str, str] | None:
        """Delete one instance of a batch: None, or why not as ``(code, message)``."""
        try:
            check_id(ref.id)
            self.delete(ref)
        except InvalidInput as exc:
            return "invalid_input", str(exc)
        except InstanceNotFound as exc:
            return "not_found", str(exc)
        return None

    def send_event(
        self, ref: InstanceRef, type: str, payload: Any = None, *, key: str | None = None
    ) -> EventRecord:
        """Deliver an event to the instance's next ``wait_for_event(type=...)``.

        Buffered if no wait is pending. Events of one type are delivered in the order their
        sends were committed (FIFO). Finished instance → InvalidTransition.

        Args:
            key: an idempotency key (same rules as an instance id): sending again with the
                same key (a retry after a timeout or a 5xx) stores nothing and returns the
                event stored the first time.
        """
        return self.send_event_once(ref, type, payload, key=key)[0]

    def send_event_once(
        self, ref: InstanceRef, type: str, payload: Any = None, *, key: str | None = None
    ) -> tuple[EventRecord, bool]:
        """:meth:`send_event`, and whether this call stored the event (False: ``key`` had
        been sent before, and the event stored then is returned). Approval links use it to
        refuse a second use of a link, even a concurrent one."""
        check_id(type, what="event type")
        if key is not None:
            check_id(key, what="idempotency key")
        try:
            encoded = codec.encode(payload, what="event payload")
        except WorkflowError as exc:
            raise InvalidInput(str(exc)) from None
        for _ in range(20):
            current = self.store.get(ref)
            if current.status in FINISHED:
                earlier = self.store.find_event(ref, key) if key is not None else None
                if earlier is not None:
                    return earlier, False
                raise InvalidTransition(
                    f"instance '{current.id}' is already {current.status}; finished instances "
                    "cannot be sent events (restart it to run it again)"
                )
            now = self.clock.time()
            wake = current.status in RUNNABLE and not current.leased(now)
            event = EventRecord(
                id=event_id(current.version + 1),
                type=type,
                payload=encoded,
                timestamp=now,
                generation=current.generation,
                key=key,
            )
            # An idle instance is due at once: if the wake-up below is lost, the sweep finds
            # it. A leased one is left to its runner, whose next write fails on the version.
            stored = self.store.add_event(ref, event, current.version, now if wake else None)
            if stored is None:
                continue  # the instance changed since it was read: decide again
            if stored is event and wake:
                post_wake_up(lambda: self.queue.send(ref), ref)
            return stored, stored is event
        raise ConcurrentModification(f"instance {ref} is changing too fast; try again")

    # --- recovering -----------------------------------------------------------------------

    def recover(self, limit: int = 1000) -> int:
        """Post a wake-up for each instance nobody advanced in time; return how many.

        The recovery sweep (see :mod:`lambda_workflows.engine.instances.recovery`): instances
        overdue by more than ``SWEEP_MARGIN``, of the registered workflows only (another
        deployment's are left alone). A wake-up that was not needed is harmless: the lease turns it
        away. A queue failure raises, and the next sweep finds the same instances again.

        Workflows with a concurrency limit also get their free slots, and those of runners that
        died, handed to their waiting instances (see
        :mod:`lambda_workflows.engine.instances.slots`); those count too. Deletes still owed a
        cleanup are completed, and instances written under an earlier listing layout moved to the
        current one (neither counted).
        """
        overdue = self.store.overdue(self.clock.time() - SWEEP_MARGIN, limit)
        refs = [ref for ref in overdue if ref.workflow in self.workflows]
        self.queue.send_many(refs)
        granted = self.slots.reconcile() if self.slots is not None else 0
        self._finish_deletes(limit)
        self._upgrade_listing(limit)
        return len(refs) + granted

    def _upgrade_listing(self, limit: int) -> None:
        """Move instances written under an earlier listing layout to the current one (see
        docs/deploy.md). A failure is logged: the next sweep moves them."""
        try:
            moved = self.store.upgrade_listing(limit)
        except InfrastructureError as exc:
            log.warning("instances not moved to the current listing index (%s); next sweep", exc)
            return
        if moved:
            log.info("moved %d instance(s) to the current listing index", moved)

    def _finish_deletes(self, limit: int) -> None:
        """Complete the deletes still owed a cleanup (see
        :mod:`lambda_workflows.engine.instances.deletion`), of every workflow (removing what a
        deleted instance left runs none of its code). A
        failure is logged: the same deletes are still owed at the next sweep."""
        try:
            removed = self.store.finish_deletes(self.clock.time() - SWEEP_MARGIN, limit)
        except InfrastructureError as exc:
            log.warning("deleted instances' leftovers not removed (%s); the next sweep will", exc)
            return
        if removed:
            log.info("removed %d item(s) deleted instances left", removed)

    def _change(
        self, ref: InstanceRef, transition: Transition
    ) -> tuple[InstanceRecord, InstanceRecord]:
        """Read, decide, write only if nobody wrote in between; retry on a race.

        Returns the record the decision was taken on and the record after it (the same
        object when there was nothing to change).
        """
        for _ in range(20):
            record = self.store.get(ref)
            change = transition.change(record, self.clock.time())
            if change is None:
                return record, record
            updated = self.store.update(ref, record.version, change)
            if updated is not None:
                return record, updated
        raise ConcurrentModification(f"instance {ref} is changing too fast; try again")


def post_wake_up(send: Callable[[], None], *refs: InstanceRef) -> None:
    """Post a wake-up (or cancel stale ones: ``send`` says which) after a committed write. If
    the queue fails, the write stands and the instance's due time makes the recovery sweep
    post it: the caller's request did succeed, and failing it would only invite a retry that
    finds the id taken."""
    try:
        send()
    except InfrastructureError as exc:
        log.warning(
            "wake-up of %s not posted (%s); the recovery sweep will post it",
            ", ".join(map(str, refs)),
            exc,
        )
