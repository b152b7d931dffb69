"""What reaches the runner when a wake-up is due, and in whose name it takes the lease.

A wake-up schedule invokes the RunnerFunction directly (Lambda target, asynchronous invoke):
its input is a work message plus Scheduler's context attributes, which Scheduler fills in at
each attempt::

    {"workflow": ..., "id": ..., "reason": "sleep",
     "wake": {"execution": "<aws.scheduler.execution-id>",
              "attempt": "<aws.scheduler.attempt-number>"}}

The same wake-up may also come back through the work queue, as an SQS message:

- Scheduler could not invoke the function (retries exhausted): its dead-letter queue is the
  work queue, and the message body is the schedule's input;
- the invocation failed after Lambda's own retries: the function's OnFailure destination is
  the work queue, and the body is Lambda's invocation record, the input in ``requestPayload``;
- a schedule created before the upgrade still targets the queue: a plain work message.

The lease is fenced by delivery (see :mod:`lambda_workflows.engine.instances.advance`): a direct
invocation holds it as ``wake:<execution-id>``, delivery ``attempt x 1000``. Lambda's retries of an
asynchronous invocation repeat the same payload, so a retry after a crash looks like a copy of the
delivery that crashed and is turned away while that lease lives; the runner then fails the
invocation (:class:`LeaseHeldByThisWakeUp`), so Lambda tries again and, once its retries are spent,
hands the record to the work queue. Received from there, the same wake-up takes the lease as
delivery ``attempt x 1000 + receive count``: later than the direct one, so it takes back the lease
the crashed invocation left, as a redelivered SQS message does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import InstanceRef

from .work_messages import parse_work_message, work_message

EXECUTION_ID = "<aws.scheduler.execution-id>"
ATTEMPT_NUMBER = "<aws.scheduler.attempt-number>"
ATTEMPT_SPAN = 1000
"""Deliveries of one Scheduler attempt: the direct invocation, then each receive of it from the
work queue (the queue dead-letters after 5 receives, far below this)."""


def wake_input(ref: InstanceRef, reason: str) -> str:
    """The input of a Lambda-targeted wake-up schedule (Scheduler fills in the attributes)."""
    body = json.loads(work_message(ref, reason))
    body["wake"] = {"execution": EXECUTION_ID, "attempt": ATTEMPT_NUMBER}
    return json.dumps(body, separators=(",", ":"))


class LeaseHeldByThisWakeUp(Exception):
    """A direct wake-up found the lease held by its own delivery: a Lambda retry of an
    invocation that died holding it (or a copy running now). Failing the invocation makes
    Lambda try again later, then hand the wake-up to the work queue (see the module docstring)."""


@immutable
class WakeDelivery:
    """The instance a delivery is about, and in whose name it takes the lease."""

    ref: InstanceRef
    owner: str
    delivery: int = 1


def is_direct_wake_up(event: Mapping[str, Any]) -> bool:
    """True for a schedule's direct invocation (its input), False for an SQS batch."""
    return "Records" not in event and "wake" in event


def direct_wake_up(event: Mapping[str, Any], request_id: str) -> WakeDelivery:
    """The delivery of a schedule's direct invocation (``request_id``: the invocation's, used
    when the input carries no usable Scheduler attributes). Raises InvalidInput if it names no
    instance."""
    data = dict(event)
    ref = parse_work_message(json.dumps(data))
    return _wake_delivery(ref, data, 0) or WakeDelivery(ref, request_id, 1)


def queued_work(body: str, message_id: str, receive_count: int) -> WakeDelivery:
    """The delivery of a work-queue message: a plain work message (held in the message's name),
    or a wake-up that came through the queue (in the wake-up's name). Raises InvalidInput."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("requestPayload"), dict):
        data = data["requestPayload"]  # Lambda's invocation record (OnFailure destination)
        body = json.dumps(data)
    ref = parse_work_message(body)
    found = _wake_delivery(ref, data, receive_count) if isinstance(data, dict) else None
    return found or WakeDelivery(ref, message_id, receive_count)


def _wake_delivery(ref: InstanceRef, data: dict[str, Any], received: int) -> WakeDelivery | None:
    """The wake-up's own identity, or None when ``data`` carries none that Scheduler filled in
    (then the message or invocation id stands in: a fence as good, only not shared with the
    direct invocation)."""
    wake = data.get("wake")
    if not isinstance(wake, dict):
        return None
    execution = str(wake.get("execution", ""))
    try:
        attempt = int(wake.get("attempt", ""))
    except (TypeError, ValueError):
        return None
    if not execution or execution == EXECUTION_ID:
        return None
    return WakeDelivery(ref, f"wake:{execution}", max(1, attempt) * ATTEMPT_SPAN + received)
