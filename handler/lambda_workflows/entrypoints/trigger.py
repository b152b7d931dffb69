"""TriggerFunction: creates instances from trigger-queue messages and EventBridge events, and
delivers ``Workflow Event`` EventBridge events to instances (see :mod:`._events`).

**SQS** (a batch, partial batch response). Each message body is a JSON object
``{"workflow"?, "id"? | "instance_id"?, "params"?}``; ``workflow`` defaults to the
``TRIGGER_WORKFLOW`` environment variable, other keys are refused (a typo such as ``param``
must not start an instance without its params). A workflow's recurring schedule sends
``{"workflow", "scheduled_time"}`` (see :mod:`lambda_workflows.aws.recurring`): the instance is
``<workflow>-<UTC time>``, with params ``{"scheduled_time": ...}``, one per firing.

**EventBridge** (one event per invocation, told apart by its ``detail-type`` and ``source``
keys; a ``detail-type`` of ``Workflow Event`` is an event for an existing instance, any other
creates one). The workflow is ``detail.workflow``, else ``TRIGGER_WORKFLOW``. The params are the
``detail`` object without its ``workflow`` key, which only routes the event; everything else,
``id`` included, reaches the workflow as ``event.payload``. The envelope (source, detail-type,
time...) is not passed on.

**One instance per message or event, however often it is delivered.** The instance id is the
record's ``id`` / ``instance_id`` when it gives one, else derived from the delivery's own id,
which SQS and EventBridge keep across redeliveries: ``sqs-<messageId>`` / ``evb-<event id>``
(``<prefix>-<sha256>`` when the raw id would not be a valid instance id). Creation is a
conditional write, so a redelivery finds the id taken and counts as success. Two consequences
to know: a producer that *sends* the same thing twice makes two messages, hence two instances,
unless it sets ``id``; and a message that names an id some other instance already has is also
"done" (ids are never reused). If the process dies between the write and the first work
message, the redelivery does not resend it; the recovery sweep re-enqueues the queued instance.

**Malformed records** (not JSON, unknown workflow, bad id, params over 1 MiB) fail on their
own: the batch reports them in ``batchItemFailures`` and the other records succeed. A
malformed record can never succeed, so it is retried until the queue's ``maxReceiveCount``
moves it to the dead-letter queue, where an operator can inspect and redrive it; that is the
standard AWS pattern, at the cost of a few pointless retries. A malformed EventBridge event
raises: Lambda's asynchronous retries run out and the ``OnFailure`` destination dead-letters it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from lambda_workflows.aws.runtime import get_runtime
from lambda_workflows.engine.errors import InstanceAlreadyExists, InvalidInput, WorkflowError
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.observability import logger
from lambda_workflows.registry import load_workflows

from ._batch import SqsRecord, partial_batch_response
from ._events import WORKFLOW_EVENT, delivery_handler
from ._ids import derived_id
from ._wiring import LambdaHandler, RuntimeSource, runtime_of

load_workflows()  # a bad WORKFLOWS entry fails the cold start, naming it

__all__ = [
    "WORKFLOW_EVENT",
    "Creation",
    "create",
    "delivery_handler",
    "derived_id",
    "event_handler",
    "from_event",
    "from_message",
    "handler",
    "make_handler",
    "record_handler",
]

_MESSAGE_KEYS = frozenset({"workflow", "id", "instance_id", "params", "scheduled_time", "schedule"})


@immutable
class Creation:
    """One instance a trigger asks for (not yet validated against the registry)."""

    workflow: Any
    id: Any
    params: Any


def from_message(body: str, message_id: str) -> Creation:
    """The instance an SQS trigger message asks for. Raises InvalidInput when malformed."""
    data = _json_object(body)
    unknown = sorted(set(data) - _MESSAGE_KEYS)
    if unknown:
        raise InvalidInput(
            f"trigger message has unknown key(s) {unknown}; it takes workflow, id (or "
            "instance_id) and params"
        )
    if "scheduled_time" in data or "schedule" in data:  # a firing (lambda_workflows.aws.recurring)
        return _firing(data)
    return Creation(
        workflow=_workflow(data.get("workflow")),
        id=_given_id(data, "sqs", message_id),
        params=data.get("params"),
    )


def from_event(event: Mapping[str, Any]) -> Creation:
    """The instance an EventBridge event asks for. Raises InvalidInput when malformed."""
    detail = event.get("detail")
    delivery_id = str(event.get("id") or "")
    if not delivery_id:
        raise InvalidInput("EventBridge event has no id; cannot derive an instance id")
    if isinstance(detail, Mapping):
        return Creation(
            workflow=_workflow(detail.get("workflow")),
            id=_given_id(detail, "evb", delivery_id),
            params={k: v for k, v in detail.items() if k != "workflow"},
        )
    return Creation(workflow=_workflow(None), id=derived_id("evb", delivery_id), params=detail)


def _firing(data: Mapping[str, Any]) -> Creation:
    """One instance per firing: its id is ``<workflow>-<UTC time>`` (and ``-<schedule key>``
    for a workflow's other schedules), so a firing delivered twice finds the id taken."""
    if set(data) - {"workflow", "scheduled_time", "schedule"}:
        raise InvalidInput("a schedule's firing takes workflow, scheduled_time and schedule only")
    # Imported here: only a workflow that declares schedules is sent firings, and loading its
    # registry has imported the schedules already; the others never pay for them.
    from lambda_workflows.engine.instances.schedules import firing

    workflow = _workflow(data.get("workflow"))
    key = data.get("schedule")
    return Creation(workflow, *firing(str(workflow), data.get("scheduled_time"), key))


def _json_object(body: str) -> dict[str, Any]:
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        data = json.loads(body, parse_constant=refuse)
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"trigger message body is not JSON ({exc}): {body[:100]!r}") from None
    if not isinstance(data, dict):
        raise InvalidInput(
            "trigger message body must be a JSON object {workflow, id?, params?}, not "
            f"{type(data).__name__}"
        )
    return data


def _workflow(named: Any) -> Any:
    if named is not None:
        return named
    default = os.environ.get("TRIGGER_WORKFLOW", "").strip()
    if not default:
        raise InvalidInput(
            "the trigger names no workflow and TRIGGER_WORKFLOW is not set; add "
            '"workflow": "<name>" or set the stack\'s TriggerWorkflow parameter'
        )
    return default


def _given_id(data: Mapping[str, Any], prefix: str, delivery_id: str) -> Any:
    """The id the record gives (validated later, with the rest), else the derived one."""
    given, alias = data.get("id"), data.get("instance_id")
    if given is not None and alias is not None and given != alias:
        raise InvalidInput("the trigger gives both id and instance_id; give one")
    if given is None:
        given = alias
    return derived_id(prefix, delivery_id) if given is None else given


def create(creation: Creation, service: InstanceService) -> bool:
    """Create the instance; False when its id already exists (a redelivery: success)."""
    try:
        service.create(creation.workflow, creation.id, creation.params)
    except InstanceAlreadyExists:
        logger().info(
            "instance already exists; trigger already handled",
            extra={"workflow": creation.workflow, "instance_id": creation.id},
        )
        return False
    logger().info(
        "instance created by trigger",
        extra={"workflow": creation.workflow, "instance_id": creation.id},
    )
    return True


def record_handler(record: SqsRecord, service: InstanceService) -> str:
    """Create the instance one trigger message asks for; raise to report the record failed."""
    try:
        creation = from_message(record.body, record.message_id)
        create(creation, service)
    except WorkflowError as exc:
        logger().error(
            "trigger message failed; it is retried, then dead-lettered",
            extra={"message_id": record.message_id, "error": str(exc), "code": exc.code},
        )
        raise
    return str(creation.id)


def event_handler(event: Mapping[str, Any], service: InstanceService) -> dict[str, Any]:
    """Create the instance one EventBridge event asks for; raise when it is malformed."""
    try:
        creation = from_event(event)
        created = create(creation, service)
    except WorkflowError as exc:
        logger().error(
            "trigger event failed; Lambda retries it, then dead-letters it",
            extra={"event_id": event.get("id"), "error": str(exc), "code": exc.code},
        )
        raise
    return {"workflow": creation.workflow, "id": creation.id, "created": created}


def make_handler(runtime: RuntimeSource) -> LambdaHandler:
    """The Lambda entry point (an SQS batch, or one EventBridge event), on ``runtime``."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if "Records" in event:
            service = runtime_of(runtime).service
            # a batch of only bad records is answered like any other, not raised
            return partial_batch_response(event, lambda record: record_handler(record, service))
        if event.get("detail-type") == WORKFLOW_EVENT and "source" in event:
            return delivery_handler(event, runtime_of(runtime).service)  # see ._events
        if "detail-type" in event and "source" in event:
            return event_handler(event, runtime_of(runtime).service)
        raise ValueError(
            "TriggerFunction takes SQS batches or EventBridge events; got an event with keys "
            f"{sorted(event)[:10]}"
        )

    return handler


handler = make_handler(get_runtime)
