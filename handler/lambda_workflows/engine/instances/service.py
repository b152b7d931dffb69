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

from collections.abc import Collection

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.versions import check_workflow

from .commands import InstanceCommands
from .creation import (
    BATCH_ERROR_CODES,
    BATCH_ITEM_KEYS,
    BatchResult,
    InstanceCreation,
    NewInstance,
)
from .forwarding import forward
from .ports import (
    InstanceStore,
    SlotStore,
    WakeUpScheduler,
    WorkQueue,
)
from .queries import InstanceQueries, WorkflowDescription
from .slots import SlotGate
from .subscription import PauseFunction

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

    def check_workflow(self, workflow: str) -> str:
        """The workflow name, or UnknownWorkflow listing the registered ones."""
        return check_workflow(self.workflows, workflow)

    # creating (see .creation)
    validate_new = forward("creation", InstanceCreation.validate_new)
    create = forward("creation", InstanceCreation.create)
    create_batch = forward("creation", InstanceCreation.create_batch)
    # reading (see .queries)
    get = forward("queries", InstanceQueries.get)
    status = forward("queries", InstanceQueries.status)
    steps = forward("queries", InstanceQueries.steps)
    history = forward("queries", InstanceQueries.history)
    history_page = forward("queries", InstanceQueries.history_page)
    subscribe = forward("queries", InstanceQueries.subscribe)
    step_output = forward("queries", InstanceQueries.step_output)
    list = forward("queries", InstanceQueries.list)
    describe = forward("queries", InstanceQueries.describe)
    # controlling (see .commands)
    pause = forward("commands", InstanceCommands.pause)
    resume = forward("commands", InstanceCommands.resume)
    terminate = forward("commands", InstanceCommands.terminate)
    restart = forward("commands", InstanceCommands.restart)
    delete = forward("commands", InstanceCommands.delete)
    delete_batch = forward("commands", InstanceCommands.delete_batch)
    send_event = forward("commands", InstanceCommands.send_event)
    send_event_once = forward("commands", InstanceCommands.send_event_once)
    recover = forward("commands", InstanceCommands.recover)
