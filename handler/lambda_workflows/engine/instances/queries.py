"""The read side of the instance API: status, step and history pages, subscriptions, step
outputs, listings and descriptions. Reads only: nothing here writes to a store.

:class:`~lambda_workflows.engine.instances.service.InstanceService` answers its reads with an
:class:`InstanceQueries`; its writes go to :mod:`.commands` and :mod:`.creation`.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lambda_workflows.engine import codec
from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.errors import InvalidInput, StepNotFound
from lambda_workflows.engine.model import (
    FINISHED,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    InstanceStatusView,
    StepInfo,
)
from lambda_workflows.engine.versions import check_workflow, versions_of

from .census import take_census
from .history import History, history_of
from .pages import (
    STEPS_PAGE,
    HistoryPage,
    PageCursor,
    StepPage,
    check_limit,
    history_page,
    step_page,
)
from .ports import InstancePage, InstanceState, InstanceStore
from .recorded_steps import (
    StepOutput,
    StepSelector,
    describe_steps,
    find_step,
    recorded_steps,
)
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
from .usage import usage_of

__all__ = ["InstanceQueries", "WorkflowDescription"]


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
    number of instances (see :mod:`lambda_workflows.engine.instances.census`). Empty: every count
    is exact."""
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


@dataclass(eq=False)
class InstanceQueries:
    """Reads instances of the registered workflows: what they are, what they did.

    Args:
        workflows: the registry (or the registered names).
        store: where the instances are.
        clock: the time source (a running step's age, a subscription's wait).
        slots: the concurrency limits, to say where a queued instance stands in line (None:
            no limit is enforced).
        poll_pause: waits between the reads of a subscription's long poll (None: a
            subscription never waits).
    """

    workflows: Collection[str]
    store: InstanceStore
    clock: Clock
    slots: SlotGate | None = None
    poll_pause: PauseFunction | None = None

    def get(self, ref: InstanceRef) -> InstanceRecord:
        """The instance's record: UnknownWorkflow or InstanceNotFound when there is none."""
        check_workflow(self.workflows, ref.workflow)
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
        check_workflow(self.workflows, ref.workflow)
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
        check_workflow(self.workflows, ref.workflow)
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
        check_workflow(self.workflows, ref.workflow)
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
        check_workflow(self.workflows, ref.workflow)
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
        check_workflow(self.workflows, ref.workflow)
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
        check_workflow(self.workflows, workflow)
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
        check_workflow(self.workflows, workflow)
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


def _first_paragraph(cls: Any) -> str | None:
    """The first paragraph of a class's own docstring, on one line (None without one)."""
    doc = cls.__dict__.get("__doc__") if isinstance(cls, type) else None
    if not isinstance(doc, str) or not doc.strip():
        return None
    paragraph = inspect.cleandoc(doc).split("\n\n", 1)[0]
    return " ".join(paragraph.split())
