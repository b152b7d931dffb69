"""TriggerFunction: instances from SQS messages and EventBridge events, exactly one per message
or event however often it is delivered, and one bad record never fails the batch."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from lambda_workflows.engine.errors import InvalidInput, UnknownWorkflow
from lambda_workflows.engine.limits import ID_PATTERN
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.entrypoints.trigger import derived_id

from .conftest import Api, sample


def record(message_id: str, body: Any) -> dict[str, Any]:
    """An SQS record shaped like the sample's, with this id and body (JSON unless a str)."""
    template = copy.deepcopy(sample("sqs_trigger_batch.json")["Records"][0])
    template["messageId"] = message_id
    template["body"] = body if isinstance(body, str) else json.dumps(body)
    return dict(template)


def batch(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


def params_of(api: Api, instance_id: str) -> Any:
    return json.loads(api.env.store.get(InstanceRef("orders", instance_id)).params)


def instance_ids(api: Api) -> list[str]:
    """Ids of every instance item in the table (the table, not an index)."""
    return sorted(i["pk"]["S"].split("#", 2)[2] for i in api.table() if i["sk"]["S"] == "I")


@pytest.fixture
def no_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRIGGER_WORKFLOW", raising=False)


# --- SQS ------------------------------------------------------------------------------------


def test_sqs_batch_creates_one_instance_per_message(api: Api, no_default: None) -> None:
    # WHEN the sample batch arrives: one message with an id, one without
    response = api.trigger(sample("sqs_trigger_batch.json"))

    # THEN both instances exist, the second under an id derived from its messageId
    assert response == {"batchItemFailures": []}
    assert params_of(api, "order-3001") == {"amount": 5}
    assert params_of(api, "sqs-2e1424d4-f796-459a-8184-9c92662be6da") == {"amount": 6}
    assert {m["id"] for m in api.drain()} == {
        "order-3001",
        "sqs-2e1424d4-f796-459a-8184-9c92662be6da",
    }


def test_redelivered_sqs_message_creates_one_instance(api: Api, no_default: None) -> None:
    # GIVEN a message without an id, handled once
    message = record("7d1f0c2a-aaaa-4bbb-8ccc-000000000001", {"workflow": "orders"})
    assert api.trigger(batch(message)) == {"batchItemFailures": []}
    first = api.table()

    # WHEN SQS delivers it again (same messageId), alone and then twice in one batch
    again = api.trigger(batch(message))
    twice = api.trigger(batch(message, message))

    # THEN every delivery succeeds, and there is still one instance with one first run
    assert again == twice == {"batchItemFailures": []}
    assert api.table() == first
    assert api.drain() == [{"workflow": "orders", "id": "sqs-7d1f0c2a-aaaa-4bbb-8ccc-000000000001"}]


def test_malformed_record_fails_alone(api: Api, no_default: None) -> None:
    # WHEN the sample batch with a truncated JSON body in the middle arrives
    response = api.trigger(sample("sqs_trigger_malformed.json"))

    # THEN only that record is reported; the others created their instances
    assert response == {
        "batchItemFailures": [{"itemIdentifier": "c1d7e0b2-9f3a-4b6e-8d21-5a0e7f3c9b12"}]
    }
    assert params_of(api, "sqs-8f2c6f1e-54a0-4d4b-9a55-2f4a6f0f8c01") == {"amount": 8}
    assert params_of(api, "order-3003") == {"amount": 9}


MALFORMED = {
    "not JSON": "{oops",
    "NaN": '{"workflow": "orders", "params": NaN}',
    "not an object": "[1, 2]",
    "unknown workflow": {"workflow": "invoices", "id": "m-1"},
    "malformed workflow name": {"workflow": "in voices"},
    "workflow not a string": {"workflow": 7},
    "bad id": {"workflow": "orders", "id": "no spaces"},
    "id not a string": {"workflow": "orders", "id": 12},
    "id and instance_id differ": {"workflow": "orders", "id": "a", "instance_id": "b"},
    "unknown key": {"workflow": "orders", "param": {"amount": 1}},
    "params over 1 MiB": {"workflow": "orders", "params": "x" * (1024 * 1024)},
    "no workflow and no TRIGGER_WORKFLOW": {"id": "m-2"},
}


@pytest.mark.parametrize("body", list(MALFORMED.values()), ids=list(MALFORMED))
def test_each_kind_of_malformed_record_is_reported_and_writes_nothing(
    api: Api, no_default: None, body: Any
) -> None:
    # GIVEN a batch of a good message and a malformed one
    good = record("0a0a0a0a-0000-4000-8000-00000000000a", {"workflow": "orders", "id": "good-1"})
    bad = record("0b0b0b0b-0000-4000-8000-00000000000b", body)
    before = set(instance_ids(api))

    # WHEN it is handled
    response = api.trigger(batch(good, bad))

    # THEN only the malformed record is reported, and only the good one created an instance
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["messageId"]}]}
    assert set(instance_ids(api)) - before <= {"good-1"}
    assert [m["id"] for m in api.drain()] in ([], ["good-1"])  # good-1 may exist already


def test_sqs_message_without_workflow_uses_trigger_workflow(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIGGER_WORKFLOW", "orders")
    message = record("3c3c3c3c-0000-4000-8000-00000000000c", {"params": {"amount": 4}})

    assert api.trigger(batch(message)) == {"batchItemFailures": []}
    assert params_of(api, "sqs-3c3c3c3c-0000-4000-8000-00000000000c") == {"amount": 4}


def test_batch_of_only_malformed_records_reports_them_all(api: Api, no_default: None) -> None:
    bad = [record(f"0d0d0d0d-0000-4000-8000-00000000000{n}", "nope") for n in range(2)]

    response = api.trigger(batch(*bad))

    assert response == {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in bad]}


# --- EventBridge ----------------------------------------------------------------------------


def test_eventbridge_event_creates_an_instance_with_the_detail_as_params(
    api: Api, no_default: None
) -> None:
    # WHEN the sample event (detail names the workflow) arrives
    event = sample("eventbridge_trigger.json")
    answer = api.trigger(event)

    # THEN the instance id comes from the event id, and the params are the detail less
    # the key that only routed it
    instance_id = "evb-6a7e8feb-b491-4cf7-a9f1-bf3703467718"
    assert answer == {"workflow": "orders", "id": instance_id, "created": True}
    assert params_of(api, instance_id) == {"amount": 12, "customer": "c-77"}
    assert api.drain() == [{"workflow": "orders", "id": instance_id}]


def test_redelivered_eventbridge_event_creates_one_instance(api: Api, no_default: None) -> None:
    # GIVEN an event handled once
    event = sample("eventbridge_trigger.json")
    event["id"] = "11111111-2222-4333-8444-555555555555"
    assert api.trigger(event)["created"] is True
    first = api.table()

    # WHEN EventBridge delivers it again (at-least-once, same event id)
    again = api.trigger(event)

    # THEN it is a success that created nothing
    assert again == {
        "workflow": "orders",
        "id": "evb-11111111-2222-4333-8444-555555555555",
        "created": False,
    }
    assert api.table() == first
    assert len(api.drain()) == 1


def test_eventbridge_event_without_workflow_uses_trigger_workflow_and_its_id(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIGGER_WORKFLOW", "orders")

    answer = api.trigger(sample("eventbridge_trigger_default_workflow.json"))

    assert answer == {"workflow": "orders", "id": "order-4001", "created": True}
    assert params_of(api, "order-4001") == {"id": "order-4001", "amount": 13}


@pytest.mark.parametrize(
    ("detail", "error"),
    [
        ({"workflow": "invoices"}, UnknownWorkflow),
        ({"workflow": "orders", "id": "bad id"}, InvalidInput),
        ({"amount": 1}, InvalidInput),  # no workflow, no TRIGGER_WORKFLOW
    ],
    ids=["unknown workflow", "bad id", "no workflow"],
)
def test_malformed_eventbridge_event_raises_and_writes_nothing(
    api: Api, no_default: None, detail: dict[str, Any], error: type[Exception]
) -> None:
    event = sample("eventbridge_trigger.json")
    event["detail"] = detail
    before = api.table()

    with pytest.raises(error):
        api.trigger(event)

    assert api.table() == before
    assert api.drain() == []


def test_an_event_of_another_kind_is_refused(api: Api) -> None:
    with pytest.raises(ValueError, match="SQS batches or EventBridge events"):
        api.trigger({"hello": "world"})


# --- derived ids ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "delivery_id",
    ["059f36b4-87a3-44ab-83d2-661975830a7d", "a.b/c", "a-b-c", "x" * 200, "é"],
)
def test_derived_ids_are_valid_stable_and_distinct(delivery_id: str) -> None:
    derived = derived_id("sqs", delivery_id)

    assert derived == derived_id("sqs", delivery_id)
    assert len(derived) <= 100
    assert ID_PATTERN.match(derived)
    assert derived.startswith("sqs-")


def test_derived_ids_never_merge_two_deliveries() -> None:
    # "a.b" is not a valid id; rewriting it to "a-b" would collide with the real "a-b"
    assert derived_id("sqs", "a.b") != derived_id("sqs", "a-b")
