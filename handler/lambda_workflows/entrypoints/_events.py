"""Workflow events from EventBridge: an event put on the trigger bus reaches an instance's
``step.wait_for_event``.

An EventBridge event of the trigger source whose ``detail-type`` is ``Workflow Event`` carries
one event for one instance::

    {"workflow": "orders", "instance_id": "order-42", "type": "approved",
     "payload": {"user": "ana"}}

``payload`` is optional (``null``); other keys are refused, so a typo cannot deliver an event
without its payload. It is sent as the instance API's send_event would: buffered when the
instance is not waiting for that type yet, and events of one type reach the waits in the order
they were stored (FIFO).

**Once per EventBridge event, however often it is delivered.** The send's idempotency key is
derived from the event id (``evb-<event id>``, hashed when that is not a valid key), which
EventBridge keeps across redeliveries and Lambda across its retries: a second delivery stores
nothing, and neither does a retry after an AWS error whose write had in fact gone through.

**An event that cannot be delivered** (no such instance, an unknown workflow, a bad type or
payload, a finished instance) is logged with the reason and raised: Lambda retries it twice (an
instance created a moment later still gets it), then the ``OnFailure`` destination puts it on
the trigger dead-letter queue.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambda_workflows.engine.errors import InfrastructureError, InvalidInput, WorkflowError
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.engine.limits import check_id
from lambda_workflows.engine.model import EventRecord, InstanceRef
from lambda_workflows.observability import logger

from ._ids import derived_id

__all__ = ["WORKFLOW_EVENT", "Delivery", "deliver", "delivery_handler", "delivery_of"]

WORKFLOW_EVENT = "Workflow Event"  # the detail-type that routes an event to an instance
KEY_PREFIX = "evb"
_DETAIL_KEYS = ("workflow", "instance_id", "type", "payload")


@immutable
class Delivery:
    """One event for one instance, as an EventBridge event asks (shape checked, not yet
    validated against the registry)."""

    ref: InstanceRef
    type: Any
    payload: Any
    key: str


def delivery_of(event: Mapping[str, Any]) -> Delivery:
    """The delivery a ``Workflow Event`` asks for. Raises InvalidInput when malformed."""
    event_id = event.get("id")
    if not isinstance(event_id, str) or not event_id:
        raise InvalidInput("EventBridge event has no id; cannot make its delivery idempotent")
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        raise InvalidInput(
            f"a {WORKFLOW_EVENT!r} event's detail must be an object {{workflow, instance_id, "
            f"type, payload?}}, not {type(detail).__name__}"
        )
    unknown = sorted(set(detail) - set(_DETAIL_KEYS))
    missing = [k for k in _DETAIL_KEYS[:3] if detail.get(k) is None]
    if unknown or missing:
        raise InvalidInput(
            f"a {WORKFLOW_EVENT!r} event's detail {_problem(unknown, missing)}; it takes "
            "workflow, instance_id, type and payload (optional)"
        )
    if not isinstance(detail["workflow"], str):
        raise InvalidInput(f"workflow must be a string, not {type(detail['workflow']).__name__}")
    ref = InstanceRef(detail["workflow"], check_id(detail["instance_id"]))
    return Delivery(ref, detail["type"], detail.get("payload"), derived_id(KEY_PREFIX, event_id))


def _problem(unknown: list[str], missing: list[str]) -> str:
    parts = [f"has unknown key(s) {unknown}"] if unknown else []
    parts += [f"lacks {missing}"] if missing else []
    return " and ".join(parts)


def deliver(delivery: Delivery, service: InstanceService) -> EventRecord:
    """Send the event (idempotently, by the delivery's key); return the stored event."""
    service.check_workflow(delivery.ref.workflow)
    return service.send_event(delivery.ref, delivery.type, delivery.payload, key=delivery.key)


def delivery_handler(event: Mapping[str, Any], service: InstanceService) -> dict[str, Any]:
    """Deliver one ``Workflow Event``; log and raise when it cannot be delivered."""
    context: dict[str, Any] = {"event_id": event.get("id")}
    try:
        delivery = delivery_of(event)
        context |= {"workflow": delivery.ref.workflow, "instance_id": delivery.ref.id}
        context["event_type"] = delivery.type
        stored = deliver(delivery, service)
    except InfrastructureError as exc:
        # Lambda retries the event with its id: the same key, so nothing is stored twice.
        logger().warning(
            "workflow event not delivered: AWS failed; Lambda retries it",
            extra={**context, "reason": str(exc), "code": exc.code},
        )
        raise
    except WorkflowError as exc:
        logger().error(
            "workflow event cannot be delivered; after Lambda's retries it goes to the "
            "trigger dead-letter queue",
            extra={**context, "reason": str(exc), "code": exc.code},
        )
        raise
    logger().info("workflow event delivered", extra={**context, "stored_event_id": stored.id})
    return {
        "workflow": delivery.ref.workflow,
        "instance_id": delivery.ref.id,
        "type": stored.type,
        "event_id": stored.id,
    }
