"""In whose name each kind of wake-up delivery takes the lease (aws.wake_events)."""

from __future__ import annotations

import json

import pytest

from lambda_workflows.aws.wake_events import (
    ATTEMPT_SPAN,
    direct_wake_up,
    is_direct_wake_up,
    queued_work,
    wake_input,
)
from lambda_workflows.engine.errors import InvalidInput
from lambda_workflows.engine.model import InstanceRef

REF = InstanceRef("orders", "o-1")


def filled(attempt: int = 1, execution: str = "e-1") -> dict[str, object]:
    """A schedule's input as Scheduler delivers it."""
    body = wake_input(REF, "sleep")
    body = body.replace("<aws.scheduler.execution-id>", execution)
    return dict(json.loads(body.replace("<aws.scheduler.attempt-number>", str(attempt))))


def test_a_direct_wake_up_holds_the_lease_as_its_execution_and_attempt() -> None:
    event = filled(attempt=2)
    assert is_direct_wake_up(event)
    work = direct_wake_up(event, "request-1")
    assert (work.ref, work.owner, work.delivery) == (REF, "wake:e-1", 2 * ATTEMPT_SPAN)


def test_an_sqs_batch_is_not_a_direct_wake_up() -> None:
    assert not is_direct_wake_up({"Records": [], "wake": {}})


def test_the_same_wake_up_from_the_queue_is_a_later_delivery_of_the_same_owner() -> None:
    # Lambda's OnFailure record, and Scheduler's dead letter (the input itself)
    record = json.dumps({"requestContext": {}, "requestPayload": filled()})
    for body in (record, json.dumps(filled())):
        work = queued_work(body, "message-1", 1)
        assert (work.owner, work.delivery) == ("wake:e-1", ATTEMPT_SPAN + 1)
        assert queued_work(body, "message-1", 2).delivery == ATTEMPT_SPAN + 2


def test_a_plain_work_message_holds_the_lease_as_the_message() -> None:
    body = json.dumps({"workflow": "orders", "id": "o-1", "reason": "sleep"})
    work = queued_work(body, "message-1", 3)
    assert (work.ref, work.owner, work.delivery) == (REF, "message-1", 3)


def test_attributes_scheduler_did_not_fill_in_fall_back_to_the_message() -> None:
    work = queued_work(wake_input(REF, "sleep"), "message-1", 1)
    assert (work.owner, work.delivery) == ("message-1", 1)
    direct = direct_wake_up(json.loads(wake_input(REF, "sleep")), "request-1")
    assert (direct.owner, direct.delivery) == ("request-1", 1)


def test_a_wake_up_that_names_no_instance_is_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        direct_wake_up({"wake": {"execution": "e", "attempt": "1"}}, "request-1")
    with pytest.raises(InvalidInput):
        queued_work(json.dumps({"requestPayload": {"wake": {}}}), "message-1", 1)
