"""Child workflows: what ``step.run_workflow`` does outside the replay pass.

``result = await step.run_workflow("charge", workflow="charge", params={...})`` starts an
instance of another registered workflow (the *child*), suspends the parent without holding
compute, and returns the child's output, or raises ``StepFailedError`` with the child's error.

Design: the parent waits as ``step.wait_for_event`` does, on an event type of its own for the
step (``child:<workflow>/<id>``, which ``send_event`` refuses: only the child can answer it).
The child's record names its parent (``parent: {workflow, id, step}``, written with the
child in the one conditional put that creates it), so the child's end knows whom to wake: the
engine stores an event in the parent's mailbox carrying ``{status, output, error}`` and posts
the parent's wake-up — the same conditional write and the same wake-up as ``send_event``, so
the no-lost-wake-up rule of events covers it, and nothing polls the child.

Why an event rather than a new kind of wait: the event is buffered. A child that ends before
its parent waits (or while the parent's runner still holds its lease) leaves the answer in
the mailbox, where the parent's next pass finds it, exactly as an event sent early.

Crash safety, in order of the writes:

- The child is created in the same atomic write that records the parent's wait naming it
  (:meth:`InstanceStore.record_child_wait`), and only while the parent still runs the same
  journal generation forward (not finished, not rolling back). So no child ever exists that
  its parent's journal does not name: a crash can come before that write (nothing exists; the
  replay starts the step again) or after it (the replay finds the wait), never in between.
- Creation is idempotent: the child's id is derived from the parent's id, the parent's
  journal generation and the step's key (:func:`child_id`), and the wait is a journal entry
  (first writer wins): a runner that finds the wait recorded by another continues with it and
  its child. An id taken by an instance that is not this step's child fails the step.
- The child's end is delivered *before* its final status is written (as wake-ups are
  scheduled before status writes): a crash in between leaves the child unfinished, its lease
  expires, the recovery sweep runs it again, it ends again, and the second delivery stores
  nothing (its idempotency key is the child's id and the parent's generation).
- A parent restarted (a new generation) that reaches the step again with an explicit id finds
  its finished child: the outcome is delivered again, into the new generation.

Terminating the parent terminates its children that are still running (each one's own
children too): the service lists the child waits of the parent's journal that have no
answer yet. That finds every child: a terminate written before a child's creation makes the
creation fail (the parent's pass then stops and reloads), and one written after it finds the
wait, since both were one write. A terminated child answers its parent with ``status:
terminated``, which fails the parent's step.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.errors import (
    ConcurrentModification,
    InfrastructureError,
    InstanceAlreadyExists,
    InstanceNotFound,
    InvalidTransition,
)
from lambda_workflows.engine.model import (
    FINISHED,
    RUNNABLE,
    ErrorInfo,
    EventRecord,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    JournalEntry,
    ParentRef,
    event_id,
    first_generation,
)
from lambda_workflows.engine.replay.child_steps import (
    ChildStart,
    WaitFor,
    child_event_type,
    child_id,
    pending_children,
)
from lambda_workflows.engine.versions import is_registered, newest_version, workflow_names

from .ports import InstanceStore, WorkQueue
from .recovery import QUEUE_GRACE
from .transitions import KEEP, Change

if TYPE_CHECKING:
    from .slots import SlotGate

__all__ = ["Children", "Terminator", "terminated"]

log = logging.getLogger("lambda_workflows.children")


@dataclass(eq=False)
class Children:
    """Starts children and answers their parents, on the store and the work queue."""

    workflows: Collection[str]
    store: InstanceStore
    queue: WorkQueue
    clock: Clock
    slots: SlotGate | None = None  # None: no limit is enforced

    def start(
        self,
        parent: InstanceRecord,
        step: tuple[str, str],
        child: tuple[str, str | None, str],
        wait_for: WaitFor,
    ) -> ChildStart:
        """Create the child ``(workflow, id, params)`` of ``parent``'s step (``(name, key)``)
        with the wait ``wait_for`` builds, unless it exists; post its first wake-up. A child
        that exists and already finished answers at once."""
        name, key = step
        workflow, id, params = child
        ref = InstanceRef(workflow, id or child_id(parent.ref, parent.generation, key, name))
        if not is_registered(self.workflows, workflow):
            registered = ", ".join(workflow_names(self.workflows)) or "none"
            message = (
                f"step.run_workflow({name!r}): no workflow is registered as {workflow!r} "
                f"(registered: {registered})"
            )
            return ChildStart(ref, ErrorInfo("UnknownWorkflow", message))
        record = self._new(ref, params, ParentRef(parent.workflow, parent.id, name))
        if self.slots is not None and self.slots.limited(workflow):
            record = self.slots.in_line(record)  # "waiting for a slot", as the service creates it
        wait = wait_for(ref)
        try:
            recorded = self.store.record_child_wait(parent.ref, parent.generation, wait, record)
        except InstanceAlreadyExists:
            return self._existing(parent, record, wait)
        except InfrastructureError:
            # The outcome is unknown: a child that was created starts now rather than at the
            # sweep (a wake-up of an instance that does not exist is skipped).
            self._wake(ref)
            raise
        if recorded is wait:
            self._wake(ref)  # the child is created: a failed post must not undo the step
        return ChildStart(ref, wait=recorded, ours=recorded is wait)

    def _existing(
        self, parent: InstanceRecord, record: InstanceRecord, wait: JournalEntry
    ) -> ChildStart:
        """The step's id is taken: by this step's child (the parent restarted with an explicit
        id), which it waits for again, or by another instance, which fails the step."""
        ref, name = record.ref, wait.name
        found = self.store.get(ref)
        if found.parent != record.parent:
            message = (
                f"step.run_workflow({name!r}): instance {ref.id!r} of {ref.workflow!r} already "
                "exists and was not started by this step; give another id (or leave id out "
                "to have one derived from this instance and step)"
            )
            return ChildStart(ref, ErrorInfo("InstanceAlreadyExists", message))
        recorded = self.store.record_child_wait(parent.ref, parent.generation, wait)
        if recorded is not None and found.status in FINISHED:
            self.deliver(found, found.status, found.output, found.error)
        return ChildStart(ref, wait=recorded, ours=recorded is wait)

    def _new(self, ref: InstanceRef, params: str, parent: ParentRef) -> InstanceRecord:
        now = self.clock.time()
        return InstanceRecord(
            workflow=ref.workflow,
            id=ref.id,
            status=InstanceStatus.QUEUED,
            params=params,
            created_at=now,
            updated_at=now,
            due_at=now + QUEUE_GRACE,
            generation=first_generation(now),
            workflow_version=newest_version(self.workflows, ref.workflow),
            parent=parent,
        )

    def finishing(self, record: InstanceRecord, change: Change) -> None:
        """Called before ``change`` is written: when it ends a child, answer its parent."""
        if record.parent is None or change.status is KEEP or change.status not in FINISHED:
            return
        output = change.output if isinstance(change.output, str | None) else record.output
        error = change.error if isinstance(change.error, ErrorInfo | None) else record.error
        self.deliver(record, InstanceStatus(change.status), output, error)

    def deliver(
        self,
        child: InstanceRecord,
        status: InstanceStatus,
        output: str | None,
        error: ErrorInfo | None,
    ) -> None:
        """Store the child's outcome in its parent's mailbox and wake the parent, as
        ``send_event`` does. Idempotent; a parent gone or finished is left alone."""
        parent = child.parent
        if parent is None:
            return
        shown = None if error is None else {"name": error.name, "message": error.message}
        payload = json.dumps({"status": str(status), "output": output, "error": shown})
        for _ in range(20):
            try:
                current = self.store.get(parent.ref)
            except InstanceNotFound:
                return  # the parent was deleted: nobody waits
            if current.status in FINISHED:
                return
            now = self.clock.time()
            wake = current.status in RUNNABLE and not current.leased(now)
            event = EventRecord(
                id=event_id(current.version + 1),
                type=child_event_type(child.ref),
                payload=payload,
                timestamp=now,
                generation=current.generation,
                key=f"{child_event_type(child.ref)}@{current.generation}",
            )
            stored = self.store.add_event(parent.ref, event, current.version, now if wake else None)
            if stored is None:
                continue  # the parent changed since it was read: decide again
            if stored is event and wake:
                self._wake(parent.ref)
            return
        raise ConcurrentModification(f"instance {parent.ref} is changing too fast; try again")

    def _wake(self, ref: InstanceRef) -> None:
        """Post ``ref``'s work message after a committed write. If the queue fails, the write
        stands: the instance is due (a new child, a parent answered) and the sweep posts it."""
        try:
            self.queue.send(ref)
        except InfrastructureError as exc:
            log.warning("wake-up of %s not posted (%s); the recovery sweep will post it", ref, exc)


class Terminator(Protocol):
    """What terminates instances: the instance service's commands (see :func:`terminated`)."""

    @property
    def workflows(self) -> Collection[str]: ...

    @property
    def store(self) -> InstanceStore: ...

    @property
    def queue(self) -> WorkQueue: ...

    @property
    def clock(self) -> Clock: ...

    def terminate(self, ref: InstanceRef, rollback: bool = False) -> InstanceRecord:
        """Stop the instance for good (InvalidTransition when it already finished)."""
        ...


def terminated(service: Terminator, record: InstanceRecord) -> None:
    """After a terminate of ``record``'s instance: a terminated child answers its parent, and
    the instance's children still running are terminated (theirs in turn). Idempotent: a
    terminate retried after a crash does what the first one left undone."""
    children = Children(service.workflows, service.store, service.queue, service.clock)
    if record.status is InstanceStatus.TERMINATED:
        children.deliver(record, InstanceStatus.TERMINATED, None, None)
    elif record.rollback is None:
        return  # not terminated (a terminate that found the instance complete or errored)
    for child in pending_children(service.store.load(record.ref).entries):
        # InvalidTransition, InstanceNotFound: it ended meanwhile, or was deleted
        with contextlib.suppress(InvalidTransition, InstanceNotFound):
            service.terminate(child)
