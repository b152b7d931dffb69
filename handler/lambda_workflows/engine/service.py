"""The instance API as the engine implements it: create, status, pause, resume, terminate,
restart, send_event, list, describe — on the ports, with every input validated before anything
is written.

The Python client (``workflows.Workflow``), the HTTP API and the test kit are thin layers over
:class:`InstanceService`.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import codec
from .batch_forms import BatchBody, read_batch
from .census import take_census
from .clock import Clock
from .deletion import DeleteBatchResult, check_delete_batch
from .errors import (
    NOTHING_REGISTERED,
    ConcurrentModification,
    InfrastructureError,
    InstanceNotFound,
    InvalidInput,
    InvalidTransition,
    StepNotFound,
    UnknownWorkflow,
    WorkflowError,
)
from .history import History, history_of
from .immutable import immutable
from .limits import MAX_ID, check_id, check_workflow_name
from .model import (
    FINISHED,
    RUNNABLE,
    EventRecord,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    InstanceStatusView,
    StepInfo,
    event_id,
    first_generation,
)
from .pages import (
    STEPS_PAGE,
    HistoryPage,
    PageCursor,
    StepPage,
    check_limit,
    history_page,
    step_page,
)
from .ports import (
    CLAIM_SPAN,
    BatchCreateResult,
    InstancePage,
    InstanceState,
    InstanceStore,
    SlotStore,
    WakeUpScheduler,
    WorkQueue,
)
from .recorded_steps import StepOutput, StepSelector, describe_steps, find_step, recorded_steps
from .recovery import QUEUE_GRACE, SWEEP_MARGIN
from .restart_from import Kept, kept_before
from .retention import retention_of
from .slots import SlotGate
from .subscription import (
    PauseFunction,
    SubscriptionCursor,
    SubscriptionPage,
    check_types,
    check_wait,
    long_poll,
)
from .timeline import Timeline
from .transitions import (
    Change,
    Pause,
    Restart,
    Resume,
    Terminate,
    TerminateWithRollback,
    Transition,
)
from .usage import usage_of
from .versions import is_registered, newest_version, versions_of, workflow_names

log = logging.getLogger("lambda_workflows.service")

BATCH_ITEM_KEYS = frozenset({"id", "instance_id", "params"})
BATCH_ERROR_CODES = {
    "invalid_input": "the item's id, params or keys are not valid",
    "duplicate_id": "an earlier item of the same batch has this id",
    "instance_exists": "the id was already taken",
}
"""Why a batch item was not created, by its ``code`` in ``BatchResult.errors``."""


@immutable
class NewInstance:
    """One validated instance to create."""

    id: str
    params: str  # encoded JSON


@dataclass(slots=True)
class BatchResult:
    """What ``create_batch`` did: ids created, and one error per item not created.

    Each error is ``{"index", "id", "code", "message"}``: ``index`` is the item's position in
    the batch, ``id`` the id it asked for (None when it gave none, or not a string), and
    ``code`` one of :data:`BATCH_ERROR_CODES`.
    """

    created: list[str] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"created": list(self.created), "errors": list(self.errors)}

    def __getitem__(self, key: str) -> Any:
        """Also readable as a mapping: ``result["created"]``."""
        return self.to_dict()[key]

    def refuse(self, index: int, id: Any, code: str, message: str) -> None:
        """Report item ``index`` as not created (``id`` shown when it is a string of at most
        100 characters: a longer one is never echoed whole)."""
        shown = id if isinstance(id, str) and len(id) <= MAX_ID else None
        self.errors.append({"index": index, "id": shown, "code": code, "message": message})


@dataclass(frozen=True, slots=True)
class WorkflowDescription:
    """What ``describe`` returns: a registered workflow and how many instances it has.

    ``instances`` counts them by status, with every status but ``unknown`` (which this engine
    never reports) present, zeros included.
    """

    name: str
    class_name: str | None
    module: str | None
    description: str | None
    instances: dict[str, int]
    instances_at_least: list[str] = field(default_factory=list)
    """The statuses whose count in ``instances`` is a lower bound: a census reads a bounded
    number of instances (see :mod:`lambda_workflows.engine.census`). Empty: every count is exact."""
    versions: list[dict[str, Any]] = field(default_factory=list)
    """Each registered version, newest first: ``{version, class_name, module, in_flight}``
    (in flight: not finished; an old version can be removed once it has none; a lower bound
    when an unfinished status is in ``instances_at_least``)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "class_name": self.class_name,
            "module": self.module,
            "description": self.description,
            "instances": dict(self.instances),
            # only when some count is a lower bound (almost never)
            **(
                {"instances_at_least": list(self.instances_at_least)}
                if self.instances_at_least
                else {}
            ),
            "versions": [dict(v) for v in self.versions],
        }


class InstanceService:
    """Creates and controls instances of the registered workflows."""

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
        # waits between the reads of a subscription's long poll (None: subscribe never waits)
        self.poll_pause = poll_pause
        self.workflows = workflows
        self.store = store
        self.queue = queue
        self.scheduler = scheduler
        self.clock = clock
        # the concurrency limits, kept in ``slot_store`` (None: no limit is enforced); a
        # workflow that declares none never pays a call for them
        self.slots = SlotGate.of(workflows, store, queue, clock, slot_store)

    # --- creating -------------------------------------------------------------------------

    def check_workflow(self, workflow: str) -> str:
        """The workflow name, or UnknownWorkflow listing the registered ones."""
        check_workflow_name(workflow)
        if not self.workflows:
            raise UnknownWorkflow(
                f"no workflow is registered as {workflow!r}: {NOTHING_REGISTERED}"
            )
        if not is_registered(self.workflows, workflow):
            raise UnknownWorkflow(
                f"no workflow is registered as {workflow!r}; registered: "
                f"{', '.join(workflow_names(self.workflows))}"
            )
        return workflow

    def validate_new(self, id: str | None = None, params: Any = None) -> NewInstance:
        """Check an id (or generate one) and encode params (≤ 1 MiB). Writes nothing.

        No params (None, or JSON null) are stored as ``{}``, so ``event.payload`` is ``{}``, as
        with Cloudflare's ``create()`` without params. Decided here, at creation, rather than
        when ``run()`` gets its event: an instance created earlier with null params keeps
        seeing the same payload on every replay.
        """
        instance_id = str(uuid.uuid4()) if id is None else check_id(id)
        try:
            encoded = codec.encode({} if params is None else params, what="params")
        except WorkflowError as exc:
            raise InvalidInput(str(exc)) from None
        return NewInstance(instance_id, encoded)

    def create(self, workflow: str, id: str | None = None, params: Any = None) -> InstanceRecord:
        """Create an instance and post its first wake-up. Duplicate id → InstanceAlreadyExists."""
        self.check_workflow(workflow)
        new = self.validate_new(id, params)
        record = self._new_record(workflow, new)
        if self.slots is not None and self.slots.limited(workflow):
            record = self.slots.create(record)  # in line for a slot (engine.slots)
        else:
            self.store.create(record)
        self._post(lambda: self.queue.send(record.ref), record.ref)
        return record

    def create_batch(self, workflow: str, items: BatchBody) -> BatchResult:
        """Create up to 100 instances; every item that cannot be created is reported by its
        index in ``errors``, and the others are created.

        ``items`` is a list of ``{id?, params?}``, or one of Cloudflare's object forms:
        ``{"count": N, "params": ...}`` (N generated ids, the same params) or
        ``{"instances": [...]}`` (see :mod:`.batch_forms`).

        An item is not created when its id, params or keys are not valid (``invalid_input``),
        when an earlier item of the batch has the same id (``duplicate_id``), or when its id is
        already taken (``instance_exists``). So sending the same batch twice creates nothing
        the second time.

        Raises:
            InvalidInput: the batch itself is malformed (not a list, over 100 items, an item
                that is not an object, a count out of 1..100, unknown keys, params of the
                count form that are not valid); nothing is written.
        """
        self.check_workflow(workflow)
        request = read_batch(items)
        if request.shared_params:  # one params for all: refuse them once, not item by item
            self.validate_new(None, request.items[0].get("params"))
        items = request.items
        result = BatchResult()
        accepted: list[tuple[int, NewInstance]] = []
        first_with: dict[str, int] = {}
        for index, item in enumerate(items):
            try:
                one = self._batch_item(item)
            except InvalidInput as exc:
                result.refuse(index, _asked_id(item), "invalid_input", f"item {index}: {exc}")
                continue
            if one.id in first_with:
                message = (
                    f"item {index}: id {one.id!r} is also the id of item {first_with[one.id]}; "
                    "an id may appear once in a batch, so this item was not created"
                )
                result.refuse(index, one.id, "duplicate_id", message)
                continue
            first_with[one.id] = index
            accepted.append((index, one))
        records = [self._new_record(workflow, n) for _, n in accepted]
        if not records:
            written = BatchCreateResult()
        elif self.slots is not None and self.slots.limited(workflow):
            written = self.slots.create_many(records)  # in line for a slot (engine.slots)
        else:
            written = self.store.create_many(records)
        existing = set(written.existing)
        for index, one in accepted:
            if one.id in existing:
                message = f"instance {one.id!r} already exists; it was not created again"
                result.refuse(index, one.id, "instance_exists", message)
        result.errors.sort(key=lambda error: int(error["index"]))
        result.created = list(written.created)
        created = [InstanceRef(workflow, i) for i in written.created]
        if created:
            self._post(lambda: self.queue.send_many(created), *created)
        return result

    def _batch_item(self, item: Mapping[str, Any]) -> NewInstance:
        """One batch item validated as ``create`` validates its arguments."""
        unknown = set(item) - BATCH_ITEM_KEYS
        if unknown:
            raise InvalidInput(
                f"unknown key(s) {sorted(map(str, unknown))}; an item takes id (or instance_id) "
                "and params"
            )
        if item.get("id") is not None and item.get("instance_id") is not None:
            raise InvalidInput("give either instance_id or id, not both")
        return self.validate_new(_asked_id(item), item.get("params"))

    def _new_record(self, workflow: str, new: NewInstance) -> InstanceRecord:
        now = self.clock.time()
        return InstanceRecord(
            workflow=workflow,
            id=new.id,
            status=InstanceStatus.QUEUED,
            params=new.params,
            created_at=now,
            updated_at=now,
            due_at=now + QUEUE_GRACE,
            generation=first_generation(now),
            workflow_version=newest_version(self.workflows, workflow),
        )

    # --- reading --------------------------------------------------------------------------

    def get(self, ref: InstanceRef) -> InstanceRecord:
        """The instance's record: UnknownWorkflow or InstanceNotFound when there is none."""
        self.check_workflow(ref.workflow)
        return self.store.get(ref)

    def status(self, ref: InstanceRef, *, steps_limit: int | None = None) -> InstanceStatusView:
        """Status, output, error and step timeline of an instance.

        Args:
            steps_limit: None (the default) for the whole timeline; else only its first page
                (see :mod:`.pages`: at most this many rows, and a bounded size), with
                ``steps_total`` and ``steps_cursor`` (for :meth:`steps`) when it is cut.
        """
        if steps_limit is not None:
            check_limit(steps_limit)
        state = self.store.load(ref)
        timeline = self._timeline(state)
        if steps_limit is None:
            return self._view(state, timeline.rows())
        record = state.record
        page = step_page(ref, record.generation, timeline, None, steps_limit, self.store)
        view = self._view(state, page.steps)
        if page.cursor is None:
            return view
        return dataclasses.replace(view, steps_total=page.total, steps_cursor=page.cursor)

    def steps(
        self, ref: InstanceRef, cursor: str | None = None, limit: int = STEPS_PAGE
    ) -> StepPage:
        """A page of the instance's step timeline (see :mod:`.pages`): the first, or the one
        after ``cursor`` (a ``steps_cursor`` of :meth:`status`, or a page's ``cursor``).

        Raises:
            InvalidInput: ``limit`` is not 1 to 1,000, or ``cursor`` is not one of this
                instance's steps pages (:class:`~.errors.StaleCursor`: it was restarted since).
            InstanceNotFound: no such instance.
        """
        self.check_workflow(ref.workflow)
        limit = check_limit(limit)
        after = PageCursor.opened(self.store, cursor, "steps", ref)  # before anything is read
        state = self.store.load(ref)
        timeline = self._timeline(state)
        return step_page(ref, state.record.generation, timeline, after, limit, self.store)

    def _view(self, state: InstanceState, steps: list[StepInfo]) -> InstanceStatusView:
        record = state.record
        return InstanceStatusView(
            id=record.id,
            workflow=record.workflow,
            status=record.status,
            output=codec.decode(record.output) if record.output is not None else None,
            error=record.error,
            steps=steps,
            created_at=record.created_at,
            finished_at=record.finished_at,
            wake_at=record.wake_at,
            usage=usage_of(state),
            rollback=record.rollback.shown(record.status in FINISHED) if record.rollback else None,
            workflow_version=record.workflow_version,
            status_reason=self.slots.reason(record) if self.slots else record.status_reason,
            parent=record.parent,
        )

    def _timeline(self, state: InstanceState) -> Timeline:
        record = state.record
        return Timeline(
            state.entries,
            # a finished instance's steps are judged as they were when it finished
            record.finished_at or self.clock.time(),
            record.pauses,
            finished=record.status in FINISHED,
            events=state.events,  # a wait's row shows the payload it received
        )

    def history(self, ref: InstanceRef) -> History:
        """The instance's history in the export format (see :mod:`.history`): params, version,
        every journal entry and event of its current generation.

        Raises:
            InstanceNotFound: no such instance.
        """
        self.check_workflow(ref.workflow)
        return history_of(self.store.load(ref))

    def history_page(
        self, ref: InstanceRef, cursor: str | None = None, limit: int = STEPS_PAGE
    ) -> HistoryPage:
        """A page of the instance's history (see :mod:`.pages`): the first, or the one after
        ``cursor``. Its entries, then its events, in the order of :meth:`history`: the pages'
        entries and events put end to end are the whole history.

        Raises:
            InvalidInput: ``limit`` is not 1 to 1,000, or ``cursor`` is not one of this
                instance's history pages (:class:`~.errors.StaleCursor`: it was restarted).
            InstanceNotFound: no such instance.
        """
        self.check_workflow(ref.workflow)
        limit = check_limit(limit)
        after = PageCursor.opened(self.store, cursor, "history", ref)  # before anything is read
        return history_page(ref, history_of(self.store.load(ref)), after, limit, self.store)

    def subscribe(
        self,
        ref: InstanceRef,
        cursor: str | None = None,
        types: Iterable[str] | str | None = None,
        *,
        wait: float = 0.0,
        limit: int = STEPS_PAGE,
    ) -> SubscriptionPage:
        """The instance's events after ``cursor`` (from its first without one), of the
        ``types`` asked for (all by default), waiting up to ``wait`` seconds for one when none
        is new (see :mod:`.subscription`).

        Raises:
            InvalidInput: an unknown type, a ``wait`` outside 0 to 25, a ``limit`` outside 1
                to 1,000, or a cursor that is not one of this instance's subscription.
            InstanceNotFound: no such instance.
        """
        self.check_workflow(ref.workflow)
        wanted, waited, limit = check_types(types), check_wait(wait), check_limit(limit)
        after = SubscriptionCursor.opened(self.store, cursor, ref)  # before anything is read
        return long_poll(
            lambda: self.store.load(ref),
            self.clock.time,
            self.poll_pause,
            waited,
            after,
            wanted,
            limit,
            self.store,
        )

    def step_output(self, ref: InstanceRef, name: str, count: int = 1) -> StepOutput:
        """One step's whole recorded output: a ``do`` step's result (``"[REDACTED]"`` when it
        is sensitive), the payload a ``wait_for_event`` received, else None.

        ``count`` is the step's occurrence (1 for the first call with this name). A root
        step of ``run()`` is found first, else a step nested in a callback.

        Raises:
            StepNotFound: no such step is recorded (the message lists the recorded ones).
            InvalidInput: ``count`` is not a whole number ≥ 1.
        """
        self.check_workflow(ref.workflow)
        selector = StepSelector.parse({"name": name, "count": count}, what="step")
        state = self.store.load(ref)
        steps = recorded_steps(state.entries)
        step = find_step(steps, selector)
        if step is not None:
            identity = (step.name, step.count, step.parent, step.type)
            for row in self._timeline(state).rows():
                if (row.name, row.count, row.parent, row.type) == identity:
                    return StepOutput.from_row(row)
        raise StepNotFound(f"instance '{ref.id}' has no step {selector}; {describe_steps(steps)}")

    def list(
        self,
        workflow: str,
        status: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> InstancePage:
        """A page of a workflow's instances, newest first."""
        self.check_workflow(workflow)
        wanted = None
        if status is not None:
            try:
                wanted = InstanceStatus(status)
            except ValueError:
                raise InvalidInput(
                    f"unknown status {status!r}; use one of "
                    f"{', '.join(s.value for s in InstanceStatus)}"
                ) from None
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000")
        return self.store.list_instances(workflow, wanted, cursor, limit)

    def describe(self, workflow: str) -> WorkflowDescription:
        """The registered workflow's class and how many of its instances have each status."""
        self.check_workflow(workflow)
        cls = self.workflows.get(workflow) if isinstance(self.workflows, Mapping) else None
        census = take_census(self.store, workflow)
        counts = {
            status.value: census.by_status.get(status, 0)
            for status in InstanceStatus
            if status is not InstanceStatus.UNKNOWN
        }
        return WorkflowDescription(
            name=workflow,
            class_name=getattr(cls, "__qualname__", None),
            module=getattr(cls, "__module__", None),
            description=_first_paragraph(cls),
            instances=counts,
            instances_at_least=[s.value for s in InstanceStatus if s in census.at_least],
            versions=[*self._versions(workflow, dict(census.in_flight))],
        )

    def _versions(self, workflow: str, in_flight: dict[str, int]) -> Sequence[dict[str, Any]]:
        """Each registered version of ``workflow`` (and any version instances still run on),
        with how many of its instances are not finished (``in_flight``: from the census)."""
        registered = (
            versions_of(self.workflows, workflow) if isinstance(self.workflows, Mapping) else {}
        )
        shown = [
            {
                "version": version,
                "class_name": cls.__qualname__,
                "module": cls.__module__,
                "in_flight": in_flight.pop(version, 0),
            }
            for version, cls in registered.items()
        ]
        shown += [  # instances on a version no longer registered: parked until it is
            {"version": version, "class_name": None, "module": None, "in_flight": count}
            for version, count in sorted(in_flight.items())
        ]
        return shown

    # --- controlling ----------------------------------------------------------------------

    def pause(self, ref: InstanceRef) -> InstanceRecord:
        """Pause: at once if nothing runs, else when the running step finishes."""
        return self._change(ref, Pause())[1]

    def resume(self, ref: InstanceRef) -> InstanceRecord:
        """Resume a paused instance; its pending sleeps and retry delays move by the pause."""
        before, record = self._change(ref, Resume())
        if before.status is InstanceStatus.PAUSED and record is not before:
            self._post(lambda: self.queue.send(ref), ref)
        return record

    def terminate(self, ref: InstanceRef, rollback: bool = False) -> InstanceRecord:
        """Stop the instance for good. A finished instance → InvalidTransition.

        With ``rollback=True`` the rollbacks of the steps it started run first (their error
        is named ``Terminated``), and then it becomes ``terminated``: meanwhile it is running.
        It is kept for its workflow's ``retention["error"]`` (default: the runtime's).

        Its child workflows still running (``step.run_workflow``) are terminated too, and a
        child's parent gets its step's answer (see :mod:`lambda_workflows.engine.children`).
        """
        from .children import terminated  # what only a terminate needs

        if rollback:
            record = self._change(ref, TerminateWithRollback())[1]
            self._post(lambda: self.queue.send(ref), ref)
            terminated(self, record)
            return record
        keep = retention_of(self.workflows, ref.workflow, self.retention_seconds).error
        try:
            record = self._change(ref, Terminate(keep))[1]
        except InvalidTransition:
            terminated(self, self.store.get(ref))  # a terminate retried after a crash: finish it
            raise
        self._post(lambda: self.scheduler.cancel(ref), ref)  # a stale wake-up is harmless
        terminated(self, record)
        return record

    def restart(
        self, ref: InstanceRef, from_step: Mapping[str, Any] | StepSelector | None = None
    ) -> InstanceRecord:
        """Run the instance again, same id and params, in a new generation of its journal:
        from the top, or from a step with ``from_step={"name": ..., "count": 1, "type": "do"}``
        (``count`` and ``type`` optional: the first occurrence, any type).

        From a step, the results recorded before it are kept (replay returns them; their
        callbacks do not run again), and that step and every step ``run()`` called after it
        run again (see :mod:`lambda_workflows.engine.restart_from`): from a sleep, from the step an
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
                self._post(lambda: self.scheduler.cancel(ref), ref)  # a stale wake-up is harmless
                self._post(lambda: self.queue.send(ref), ref)
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
        wake-ups. A running or waiting instance is terminated first: a runner busy with it
        stops, and nothing it still writes is ever read (see
        :mod:`lambda_workflows.engine.deletion`); as with :meth:`terminate`, its children still
        running are terminated, and a child's parent gets its step's answer.

        A delete of an instance whose delete was cut short (a client's retry after a timeout)
        completes it and succeeds (see :mod:`lambda_workflows.engine.deletion`).

        Raises:
            InstanceNotFound: no instance has this id (never created, or already deleted);
                nothing was changed.
        """
        self.check_workflow(ref.workflow)
        keep = retention_of(self.workflows, ref.workflow, self.retention_seconds).error
        for _ in range(20):
            try:
                record = self.store.get(ref)
            except InstanceNotFound:
                if not self.store.finish_delete(ref):
                    raise
                self._post(lambda: self.scheduler.cancel(ref), ref)  # the first may not have
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
                self._post(lambda: self.scheduler.cancel(ref), ref)  # a late one finds nothing
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
        self.check_workflow(workflow)
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
                self._post(lambda: self.queue.send(ref), ref)
            return stored, stored is event
        raise ConcurrentModification(f"instance {ref} is changing too fast; try again")

    # --- recovering -----------------------------------------------------------------------

    def recover(self, limit: int = 1000) -> int:
        """Post a wake-up for each instance nobody advanced in time; return how many.

        The recovery sweep (see :mod:`lambda_workflows.engine.recovery`): instances overdue by more
        than ``SWEEP_MARGIN``, of the registered workflows only (another deployment's are left
        alone). A wake-up that was not needed is harmless: the lease turns it away. A queue
        failure raises, and the next sweep finds the same instances again.

        Workflows with a concurrency limit also get their free slots, and those of runners
        that died, handed to their waiting instances (see :mod:`lambda_workflows.engine.slots`);
        those count too. Deletes still owed a cleanup are completed, and instances written
        under an earlier listing layout moved to the current one (neither counted).
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
        """Complete the deletes still owed a cleanup (see :mod:`lambda_workflows.engine.deletion`),
        of every workflow (removing what a deleted instance left runs none of its code). A
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

    @staticmethod
    def _post(send: Callable[[], None], *refs: InstanceRef) -> None:
        """Post a wake-up after a committed write. If the queue fails, the write stands and
        the instance's due time makes the recovery sweep post it: the caller's request did
        succeed, and failing it would only invite a retry that finds the id taken."""
        try:
            send()
        except InfrastructureError as exc:
            log.warning(
                "wake-up of %s not posted (%s); the recovery sweep will post it",
                ", ".join(map(str, refs)),
                exc,
            )


def _asked_id(item: Mapping[str, Any]) -> Any:
    """The id a batch item asks for, under either key (None: generate one)."""
    return item.get("id") if item.get("id") is not None else item.get("instance_id")


def _first_paragraph(cls: Any) -> str | None:
    """The first paragraph of a class's own docstring, on one line (None without one)."""
    doc = cls.__dict__.get("__doc__") if isinstance(cls, type) else None
    if not isinstance(doc, str) or not doc.strip():
        return None
    paragraph = inspect.cleandoc(doc).split("\n\n", 1)[0]
    return " ".join(paragraph.split())
