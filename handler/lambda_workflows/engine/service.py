"""The instance API as the engine implements it: create, status, pause, resume, terminate,
restart, send_event, list, describe — on the ports, with every input validated before anything
is written.

The Python client (``workflows.Workflow``), the HTTP API and the test kit are thin layers over
:class:`InstanceService`. It is a facade over three parts, each on the same ports: the writes
that create instances (:class:`~.creation.InstanceCreation`), the writes to existing ones
(:class:`~.commands.InstanceCommands`: control, events, deletes, the recovery sweep), and the
reads (:class:`~.queries.InstanceQueries`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from .batch_forms import BatchBody
from .clock import Clock
from .commands import InstanceCommands
from .creation import BATCH_ERROR_CODES, BATCH_ITEM_KEYS, BatchResult, InstanceCreation, NewInstance
from .deletion import DeleteBatchResult
from .history import History
from .model import EventRecord, InstanceRecord, InstanceRef, InstanceStatusView
from .pages import STEPS_PAGE, HistoryPage, StepPage
from .ports import InstancePage, InstanceStore, SlotStore, WakeUpScheduler, WorkQueue
from .queries import InstanceQueries, WorkflowDescription
from .recorded_steps import StepOutput, StepSelector
from .slots import SlotGate
from .subscription import PauseFunction, SubscriptionPage
from .versions import check_workflow

__all__ = [
    "BATCH_ERROR_CODES",
    "BATCH_ITEM_KEYS",
    "BatchResult",
    "InstanceService",
    "NewInstance",
    "WorkflowDescription",
]


class InstanceService:
    """Creates and controls instances of the registered workflows.

    Args:
        workflows: the registry (or the registered names).
        store: where the instances are.
        queue: where their wake-ups are posted.
        scheduler: their timed wake-ups.
        clock: the time source.
        retention_seconds: how long a finished instance is kept, for a workflow that says
            nothing of its own.
        poll_pause: waits between the reads of a subscription's long poll (None: a
            subscription never waits).
        slot_store: the concurrency slots of limited workflows (None: no limit is enforced);
            a workflow that declares none never pays a call for them.
    """

    def __init__(
        self,
        workflows: Collection[str],
        store: InstanceStore,
        queue: WorkQueue,
        scheduler: WakeUpScheduler,
        clock: Clock,
        *,
        retention_seconds: float = 30 * 86_400.0,
        poll_pause: PauseFunction | None = None,
        slot_store: SlotStore | None = None,
    ) -> None:
        self.retention_seconds = retention_seconds
        self.poll_pause = poll_pause
        self.workflows = workflows
        self.store = store
        self.queue = queue
        self.scheduler = scheduler
        self.clock = clock
        self.slots = SlotGate.of(workflows, store, queue, clock, slot_store)
        self.creation = InstanceCreation(workflows, store, queue, clock, self.slots)
        self.commands = InstanceCommands(
            workflows, store, queue, scheduler, clock, self.slots, retention_seconds
        )
        self.queries = InstanceQueries(workflows, store, clock, self.slots, poll_pause)

    # --- creating (see .creation) ---------------------------------------------------------

    def check_workflow(self, workflow: str) -> str:
        """The workflow name, or UnknownWorkflow listing the registered ones."""
        return check_workflow(self.workflows, workflow)

    def validate_new(self, id: str | None = None, params: Any = None) -> NewInstance:
        """Check an id (or generate one) and encode params (≤ 1 MiB). Writes nothing (see
        :meth:`InstanceCreation.validate_new`)."""
        return self.creation.validate_new(id, params)

    def create(self, workflow: str, id: str | None = None, params: Any = None) -> InstanceRecord:
        """Create an instance and post its first wake-up. Duplicate id → InstanceAlreadyExists."""
        return self.creation.create(workflow, id, params)

    def create_batch(self, workflow: str, items: BatchBody) -> BatchResult:
        """Create up to 100 instances; each item that cannot be created is reported by its
        index in ``errors`` (see :meth:`InstanceCreation.create_batch`)."""
        return self.creation.create_batch(workflow, items)

    # --- reading (see .queries) -----------------------------------------------------------

    def get(self, ref: InstanceRef) -> InstanceRecord:
        """The instance's record: UnknownWorkflow or InstanceNotFound when there is none."""
        return self.queries.get(ref)

    def status(self, ref: InstanceRef, *, steps_limit: int | None = None) -> InstanceStatusView:
        """Status, output, error and step timeline of an instance (see
        :meth:`InstanceQueries.status`)."""
        return self.queries.status(ref, steps_limit=steps_limit)

    def steps(
        self, ref: InstanceRef, cursor: str | None = None, limit: int = STEPS_PAGE
    ) -> StepPage:
        """A page of the instance's step timeline (see :meth:`InstanceQueries.steps`)."""
        return self.queries.steps(ref, cursor, limit)

    def history(self, ref: InstanceRef) -> History:
        """The instance's history in the export format (see :meth:`InstanceQueries.history`)."""
        return self.queries.history(ref)

    def history_page(
        self, ref: InstanceRef, cursor: str | None = None, limit: int = STEPS_PAGE
    ) -> HistoryPage:
        """A page of the instance's history (see :meth:`InstanceQueries.history_page`)."""
        return self.queries.history_page(ref, cursor, limit)

    def subscribe(
        self,
        ref: InstanceRef,
        cursor: str | None = None,
        types: Iterable[str] | str | None = None,
        *,
        wait: float = 0.0,
        limit: int = STEPS_PAGE,
    ) -> SubscriptionPage:
        """The instance's events after ``cursor``, waiting up to ``wait`` seconds for one
        (see :meth:`InstanceQueries.subscribe`)."""
        return self.queries.subscribe(ref, cursor, types, wait=wait, limit=limit)

    def step_output(self, ref: InstanceRef, name: str, count: int = 1) -> StepOutput:
        """One step's whole recorded output (see :meth:`InstanceQueries.step_output`)."""
        return self.queries.step_output(ref, name, count)

    def list(
        self,
        workflow: str,
        status: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> InstancePage:
        """A page of a workflow's instances, newest first."""
        return self.queries.list(workflow, status, cursor, limit)

    def describe(self, workflow: str) -> WorkflowDescription:
        """The registered workflow's class and how many of its instances have each status."""
        return self.queries.describe(workflow)

    # --- controlling (see .commands) ------------------------------------------------------

    def pause(self, ref: InstanceRef) -> InstanceRecord:
        """Pause: at once if nothing runs, else when the running step finishes."""
        return self.commands.pause(ref)

    def resume(self, ref: InstanceRef) -> InstanceRecord:
        """Resume a paused instance; its pending sleeps and retry delays move by the pause."""
        return self.commands.resume(ref)

    def terminate(self, ref: InstanceRef, rollback: bool = False) -> InstanceRecord:
        """Stop the instance for good, its running children too (see
        :meth:`InstanceCommands.terminate`). A finished instance → InvalidTransition."""
        return self.commands.terminate(ref, rollback)

    def restart(
        self, ref: InstanceRef, from_step: Mapping[str, Any] | StepSelector | None = None
    ) -> InstanceRecord:
        """Run the instance again, from the top or from a step (see
        :meth:`InstanceCommands.restart`)."""
        return self.commands.restart(ref, from_step)

    def delete(self, ref: InstanceRef) -> None:
        """Delete the instance, terminating it first if it runs (see
        :meth:`InstanceCommands.delete`). InstanceNotFound when no instance has this id."""
        self.commands.delete(ref)

    def delete_batch(self, workflow: str, ids: Sequence[str]) -> DeleteBatchResult:
        """Delete up to 100 instances of ``workflow`` (see
        :meth:`InstanceCommands.delete_batch`)."""
        return self.commands.delete_batch(workflow, ids)

    def send_event(
        self, ref: InstanceRef, type: str, payload: Any = None, *, key: str | None = None
    ) -> EventRecord:
        """Deliver an event to the instance's next ``wait_for_event(type=...)`` (see
        :meth:`InstanceCommands.send_event`)."""
        return self.commands.send_event(ref, type, payload, key=key)

    def send_event_once(
        self, ref: InstanceRef, type: str, payload: Any = None, *, key: str | None = None
    ) -> tuple[EventRecord, bool]:
        """:meth:`send_event`, and whether this call stored the event (see
        :meth:`InstanceCommands.send_event_once`)."""
        return self.commands.send_event_once(ref, type, payload, key=key)

    def recover(self, limit: int = 1000) -> int:
        """Post a wake-up for each instance nobody advanced in time; return how many (see
        :meth:`InstanceCommands.recover`)."""
        return self.commands.recover(limit)
