"""The HTTP API's answer models: what each route answers (see :mod:`.api_models`).

Each route's answer model is the contract the OpenAPI document shows, and the one declaration
of its shape: :mod:`._api_wire_gen` generates the direct path's table of their fields from them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from lambda_workflows.engine.model import InstanceStatus

from ._api_requests import WireModel
from ._api_wire import absent_when_empty, absent_when_none


class ErrorDetail(WireModel):
    """What went wrong, for a program (code) and for a person (message)."""

    code: str = Field(description="Stable machine-readable code, e.g. instance_exists.")
    message: str = Field(description="What is wrong and what to do about it.")


class ErrorBody(WireModel):
    """Every 4xx and 5xx answer."""

    error: ErrorDetail


class WorkflowVersion(WireModel):
    """One version of a workflow and how many of its instances are in flight."""

    version: str
    class_name: str | None = Field(description="Its class; null when not registered.")
    module: str | None = Field(description="The module of its class.")
    in_flight: int = Field(
        description="Instances on this version that are not finished; remove an old version "
        "once it has none."
    )


class WorkflowList(WireModel):
    """The registered workflows."""

    workflows: list[str] = Field(description="Workflow names, sorted.")
    versions: dict[str, list[WorkflowVersion]] = Field(
        default_factory=dict,
        description="Each workflow's versions and their instances in flight, as describe shows.",
    )


class InstanceHandle(WireModel):
    """An instance's id and its status after the request."""

    id: str
    status: InstanceStatus


class BatchError(WireModel):
    """A batch item that was not created (the other items were)."""

    index: int = Field(description="Position of the item in the request (0-based).")
    id: str | None = Field(
        description="The id the item asked for; null if it gave none (or not a string)."
    )
    code: str = Field(
        description=(
            "invalid_input: the item's id, params or keys are not valid; duplicate_id: an "
            "earlier item of the batch has this id; instance_exists: the id was already taken."
        )
    )
    message: str = Field(description="What is wrong with the item and how to fix it.")


class BatchResultBody(WireModel):
    """What a batch create did. Sending the same batch again creates nothing."""

    created: list[str] = Field(description="Ids of the instances created by this request.")
    errors: list[BatchError] = Field(description="One per item not created, by index.")


class Deleted(WireModel):
    """An instance was deleted: its record, journal, events and pending wake-ups."""

    id: str
    deleted: bool = Field(description="Always true (a missing instance is a 404).")


class DeletedItem(WireModel):
    """One position of a batch delete whose instance was deleted."""

    id: str


class DeleteError(WireModel):
    """One position of a batch delete whose instance was not deleted."""

    index: int = Field(description="Position of the id in the request (0-based).")
    id: str | None = Field(description="The id asked for; null when it is too long to echo.")
    code: str = Field(
        description=(
            "not_found: no instance has this id (never created, or already deleted); "
            "invalid_input: it is not a valid instance id."
        )
    )
    message: str = Field(description="What is wrong with it.")


class DeleteBatchResultBody(WireModel):
    """What a batch delete did, one entry per position of the ids sent."""

    deleted: list[DeletedItem] = Field(description="The positions whose instance was deleted.")
    errors: list[DeleteError] = Field(description="The other positions, by index.")


class StepOutputBody(WireModel):
    """One step's whole recorded output."""

    name: str
    count: int = Field(description="1-based occurrence of this name in the run.")
    type: Literal["do", "sleep", "waitForEvent", "runWorkflow"]
    status: str = Field(description="complete, errored, retrying, waiting or cancelled.")
    output: Any = Field(
        default=None,
        description=(
            'A do step\'s result, whole ("[REDACTED]" if sensitive); the payload of the event a '
            "waitForEvent step received; a runWorkflow step's child's output; null for a sleep "
            "or a step that failed."
        ),
    )


class HistoryBody(WireModel):
    """An instance's recorded history (format ``workflows-history``, ``format_version`` 1): what
    ``lambda_workflows.testing.Replayer`` replays. A sensitive step's result is "[REDACTED]": a
    replay checks the names, kinds and order of the steps, which need no result."""

    format: Literal["workflows-history"]
    format_version: Literal[1]
    workflow: str
    id: str
    workflow_version: str = Field(description="The version the instance was created on.")
    status: str = Field(description="Its status when exported.")
    created_at: float = Field(description="Epoch seconds.")
    params: Any = None
    generation: int = Field(description="Its journal's generation (a restart starts a new one).")
    entries: list[dict[str, Any]] = Field(
        description=(
            "The journal entries of the generation on this page, oldest first (times in epoch "
            "seconds)."
        )
    )
    events: list[dict[str, Any]] = Field(
        description="The events sent to it on this page (after every entry), oldest first."
    )
    cursor: str | None = Field(
        default=None,
        exclude_if=absent_when_none,  # absent: this page is the whole rest
        description=(
            "Present only when there is a next page: pass it back as ?cursor=. A page holds at "
            "most ?limit= entries and events (1,000 by default) and 512 KiB, entries first; "
            "the pages' entries and events, put end to end, are the whole history."
        ),
    )


class WorkflowSchedule(WireModel):
    """One of a workflow's recurring schedules (EventBridge Scheduler) and when it fires next."""

    expression: str = Field(description='e.g. "rate(1 hour)" or "cron(0 9 ? * MON-FRI *)".')
    timezone: str = Field(description="The IANA time zone a cron expression is read in.")
    next_firings: list[str] = Field(
        description="The next firing times, ISO 8601 UTC (e.g. 2025-01-01T09:00:00Z)."
    )
    next_ids: list[str] = Field(
        description="The instance each of them starts: <name>-<UTC time>, e.g. "
        "report-20250101T090000Z (one per firing, however often it is delivered)."
    )


class WorkflowDetails(WireModel):
    """A registered workflow: its class and how many instances it has in each status."""

    name: str
    class_name: str | None = Field(description="The workflow's class.")
    module: str | None = Field(description="The module the class is defined in.")
    description: str | None = Field(
        description="The first paragraph of the class's docstring; null without one."
    )
    instances: dict[str, int] = Field(
        description=(
            "How many instances have each status, for every status but unknown (which is "
            "never reported): queued, running, paused, errored, terminated, complete, waiting, "
            "waitingForPause."
        )
    )
    instances_at_least: list[str] = Field(
        default_factory=list,
        exclude_if=absent_when_empty,  # left out when every count is exact
        description=(
            "Present only when some counts are lower bounds: those statuses. A count reads at "
            "most 5,000 instances a listing (a workflow keeps its finished instances for their "
            "retention, and counting millions would outlast the request): the finished "
            "statuses first, an unfinished one only when that many are in flight (then the "
            "versions' in_flight are lower bounds too). Absent: every count is exact."
        ),
    )
    versions: list[WorkflowVersion] = Field(
        default_factory=list,
        description=(
            "Each registered version, newest first, then any version instances still run on "
            "that is no longer registered (class_name null: they are parked until it is)."
        ),
    )
    schedules: list[WorkflowSchedule] = Field(
        default_factory=list,
        description="Its recurring schedules (the class's schedules), with their next firings.",
    )


class InstanceSummary(WireModel):
    """One row of a listing."""

    id: str
    status: InstanceStatus
    created: str | None = Field(description="ISO 8601, UTC.")
    finished: str | None = Field(description="ISO 8601, UTC; null while not finished.")


class InstanceList(WireModel):
    """One page of a workflow's instances, newest first."""

    instances: list[InstanceSummary]
    cursor: str | None = Field(description="Pass back as ?cursor= for the next page; null at end.")


class StepError(WireModel):
    """How a step or an instance failed."""

    name: str = Field(description="The error's class name.")
    message: str


class AttemptError(StepError):
    """How one attempt of a step failed, and where."""

    traceback: str | None = Field(
        default=None,
        description=(
            "The traceback of the exception, with only the workflow's own frames (file, line, "
            "function, source line; never variable values), at most 8 KiB: past that its "
            "first and last frames are kept, and a line between them says how many were cut."
        ),
    )


class AttemptView(WireModel):
    """One recorded attempt of a do step."""

    attempt: int = Field(description="1-based attempt number.")
    start: str | None = Field(description="ISO 8601, UTC: when the attempt began.")
    end: str | None = Field(description="ISO 8601, UTC: when it returned or failed.")
    success: bool
    error: AttemptError | None = Field(description="Why it failed; null if it succeeded.")


class ChildLink(WireModel):
    """The child workflow instance a runWorkflow step started."""

    workflow: str
    id: str


class ParentLink(WireModel):
    """The instance whose step.run_workflow started this one (a child workflow)."""

    workflow: str
    id: str
    step: str = Field(description="The name of the parent's runWorkflow step.")


class StepView(WireModel):
    """One row of an instance's step timeline."""

    name: str
    count: int = Field(description="1-based occurrence of this name in the run.")
    type: Literal["do", "sleep", "waitForEvent", "runWorkflow", "rollback"] = Field(
        description="A step's method, or rollback: the rollback of the step of that name."
    )
    status: str = Field(description="complete, errored, retrying, waiting or cancelled.")
    attempts: int = Field(description="How many attempts a do step made (1 for the others).")
    start: str | None
    end: str | None
    output: Any = Field(
        default=None,
        description=(
            'A do step\'s result ("[REDACTED]" if sensitive); the payload of the event a '
            "waitForEvent step received. Null, with output_truncated, when it is over 64 KiB "
            "(or the answer's outputs are over 4 MiB in all): GET .../steps/{step_name} has it."
        ),
    )
    output_truncated: bool = Field(
        default=False,
        description=(
            "True when output is left out of this answer for its size; GET "
            ".../instances/{instance_id}/steps/{step_name}?count=N returns it whole."
        ),
    )
    error: StepError | None = None
    attempt_history: list[AttemptView] = Field(
        default_factory=list,
        description="A do step's recorded attempts, oldest first; empty for other types.",
    )
    event_type: str | None = Field(
        default=None, description="The event type a waitForEvent step awaits."
    )
    wake_at: str | None = Field(
        default=None, description="ISO 8601, UTC: when a sleep step wakes up."
    )
    child: ChildLink | None = Field(
        default=None, description="The child workflow instance a runWorkflow step started."
    )
    attempts_omitted: int = Field(
        default=0,
        exclude_if=absent_when_empty,  # left out when every attempt is shown
        description=(
            "Present only when attempt_history leaves attempts out: how many. A row shows at "
            "most 25 attempts, the first and the 24 newest (GET .../history has them all)."
        ),
    )


class StepPageBody(WireModel):
    """One page of an instance's step timeline."""

    steps: list[StepView] = Field(
        description="At most ?limit= rows (1,000 by default) and 512 KiB, outputs aside."
    )
    total: int = Field(description="How many rows the whole timeline has.")
    cursor: str | None = Field(
        description="Pass back as ?cursor= for the next page; null at the end."
    )


class InstanceEventBody(WireModel):
    """One event of an instance (docs/events.md, "Subscribing to an instance"): its type,
    when it happened, its cursor, and what its type carries (``step``, ``attempt``,
    ``output``, ``error``, ``event``, ``status``, ...)."""

    model_config = ConfigDict(defer_build=True, extra="allow")

    type: str = Field(description="instance.queued, step.completed, wait.started, ...")
    timestamp: str = Field(description="When it happened: ISO 8601, UTC, milliseconds.")
    cursor: str = Field(description="Pass back as ?cursor= to go on after this event.")


class SubscriptionBody(WireModel):
    """An instance's events after a cursor (a long poll's answer)."""

    events: list[InstanceEventBody] = Field(
        description="In order; empty when the wait ran out with nothing new."
    )
    cursor: str = Field(description="Pass back as ?cursor= for the events after these.")
    finished: bool = Field(
        description="The instance has finished and every event was served: none will follow."
    )
    status: str = Field(
        description=(
            "The instance's status when it was read; a long poll also answers when it moves "
            "(some moves, such as back to waiting after a resume, are no event)."
        )
    )


class FailedStep(WireModel):
    """The step whose rollback failed for good."""

    name: str
    count: int = Field(description="1-based occurrence of this name in the run.")


class RollbackView(WireModel):
    """How an instance's rollbacks went, once it started rolling back."""

    status: Literal["running", "complete", "failed", "cancelled"] = Field(
        description=(
            "running; complete (every rollback returned); failed (one failed for good and the "
            "chain stopped there); cancelled (a plain terminate stopped it)."
        )
    )
    ends_as: Literal["errored", "terminated"] = Field(
        description="The status the instance ends with once the rollbacks are over."
    )
    cause: StepError = Field(
        description=(
            "What the rollbacks receive as error: run()'s uncaught error (the instance's error), "
            "or Terminated for a terminate with rollback."
        )
    )
    failed_step: FailedStep | None = Field(
        default=None, description="The step whose rollback failed for good, if one did."
    )
    error: AttemptError | None = Field(
        default=None, description="That rollback's error: a rollback failure, not a forward one."
    )


class UsageView(WireModel):
    """What one instance used, counted in writes the engine makes anyway (docs/cost.md)."""

    writes: int = Field(
        description=(
            "Items written for it: each write of its instance item (creation, leases, status "
            "changes, controls), each event sent (with its idempotency marker) and each "
            "journal entry of its current run. Conditional writes that lost a race, the "
            "journal of runs before a restart and large step results' chunk items are not "
            "counted."
        )
    )
    reads: int = Field(
        description=(
            "Loads of its journal by runners, one per invocation. Reloads within an "
            "invocation and reads made for the API (status, lists) are not counted."
        )
    )
    invocations: int = Field(
        description=(
            "Runner invocations that advanced it (took its lease). One that found it "
            "finished, paused or leased by another runner is not counted."
        )
    )
    schedules: int = Field(
        description=(
            "Timed wake-ups set when it suspended (sleep, retry delay, event timeout): an "
            "EventBridge Scheduler schedule beyond 15 minutes, a delayed SQS message within."
        )
    )


class InstanceDetails(WireModel):
    """An instance's status, output, error and step timeline."""

    id: str
    workflow: str
    status: InstanceStatus
    output: Any = Field(default=None, description="What run() returned, once complete.")
    error: StepError | None = Field(default=None, description="Why it errored, if it did.")
    created: str | None = None
    finished: str | None = None
    wake_at: str | None = Field(default=None, description="Next scheduled wake-up, if any.")
    usage: UsageView | None = Field(
        default=None, description="What the instance used, counted without extra AWS calls."
    )
    steps: list[StepView]
    rollback: RollbackView | None = Field(
        default=None,
        description=(
            "Null unless the instance rolled back (an uncaught failure with rollbacks "
            "registered, or a terminate with rollback); each rollback is also a step row."
        ),
    )
    workflow_version: str = Field(
        default="1", description="The workflow version the instance runs on (its class's)."
    )
    status_reason: str | None = Field(
        default=None,
        description=(
            "Why the instance does not move on, when something outside it holds it: e.g. "
            "'version 1 of orders is not deployed' (it continues once that version is)."
        ),
    )
    parent: ParentLink | None = Field(
        default=None,
        description="The instance whose step.run_workflow started this one, for a child.",
    )
    steps_total: int | None = Field(
        default=None,
        exclude_if=absent_when_none,  # left out when steps holds every row
        description=(
            "Present only when steps holds the first page of the timeline, not all of it: how "
            "many rows it has in all. steps holds at most 1,000 rows and 512 KiB (outputs "
            "aside); GET .../steps?cursor=steps_cursor gives the next page."
        ),
    )
    steps_cursor: str | None = Field(
        default=None,
        exclude_if=absent_when_none,
        description="Present with steps_total: pass as ?cursor= to GET .../steps for the rest.",
    )


class EventAccepted(WireModel):
    """An event was recorded for the instance's next matching wait_for_event."""

    instance_id: str
    type: str
    event_id: str
