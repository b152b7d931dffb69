"""Bodies and ids a fuzzer found accepted: a JSON array where one object is expected, a key
given twice, a media type in capitals, and ids or event types ending in a newline. Each is
refused with a 4xx that says why and writes nothing, through the API, the Python client and the
triggers; the media type in capitals is accepted."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from lambda_workflows.client import Workflow
from lambda_workflows.engine.errors import InvalidInput
from lambda_workflows.engine.limits import check_id
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.entrypoints.trigger import derived_id

from .conftest import Api, sample

INSTANCES = "/workflows/orders/instances"


def listing(api: Api) -> list[tuple[str, str]]:
    """Every instance of the workflow, as the API lists it: (id, status)."""
    answer = api.request("GET", INSTANCES, query={"limit": "1000"})
    assert answer.status == 200, answer.body
    return sorted((i["id"], i["status"]) for i in answer.body["instances"])


@contextmanager
def nothing_written(api: Api) -> Iterator[None]:
    """Asserts that the block wrote nothing: same listing, same items, no message, no write."""
    listed, items = listing(api), api.snapshot()
    api.drain()
    api.writes.calls.clear()
    yield
    assert api.writes.calls == []
    assert api.drain() == []
    assert api.snapshot() == items
    assert listing(api) == listed


def created(api: Api, instance_id: str) -> None:
    answer = api.request("POST", INSTANCES, {"id": instance_id, "params": {"amount": 1}})
    assert answer.status == 201, answer.body
    api.drain()


# --- a JSON array where the route takes one object ------------------------------------------


def test_array_body_to_create_creates_nothing(api: Api) -> None:
    # WHEN two instances are sent as an array to the route that creates one
    with nothing_written(api):
        answer = api.request("POST", INSTANCES, [{"id": "arr-a"}, {"id": "arr-b"}])

    # THEN it is refused (not: the first created, the rest ignored), pointing at the batch route
    assert (answer.status, answer.code) == (422, "validation_error"), answer.body
    assert "JSON array" in answer.message and "one JSON object" in answer.message
    assert "batch" in answer.message
    assert api.request("GET", f"{INSTANCES}/arr-a").status == 404


def test_array_body_to_status_change_changes_nothing(api: Api) -> None:
    # GIVEN a queued instance
    created(api, "arr-status")

    # WHEN a terminate and a bogus action are sent as an array
    with nothing_written(api):
        answer = api.request(
            "PATCH",
            f"{INSTANCES}/arr-status/status",
            [{"status": "terminate"}, {"status": "bogus"}],
        )

    # THEN it is refused, and the instance is still queued (not terminated)
    assert (answer.status, answer.code) == (422, "validation_error"), answer.body
    assert api.request("GET", f"{INSTANCES}/arr-status").body["status"] == "queued"


def test_array_event_payload_is_recorded_whole(api: Api) -> None:
    # GIVEN a queued instance
    created(api, "arr-event")

    # WHEN an event's payload is a JSON array (any JSON is a payload)
    answer = api.request("POST", f"{INSTANCES}/arr-event/events/approved", [1, [2], {"a": 3}])

    # THEN the whole array is recorded, not its first item
    assert answer.status == 202, answer.body
    (event,) = api.env.store.load(InstanceRef("orders", "arr-event")).events
    assert json.loads(event.payload) == [1, [2], {"a": 3}]


# --- a key given twice ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "raw", "key"),
    [
        ("POST", INSTANCES, '{"id": "dup-a", "id": "dup-b"}', "id"),
        ("POST", INSTANCES, '{"id": "dup-c", "params": {"amount": 1, "amount": 2}}', "amount"),
        ("POST", f"{INSTANCES}/batch", '[{"id": "dup-d", "params": 1, "params": 2}]', "params"),
        ("PATCH", f"{INSTANCES}/dup-target/status", '{"status": "pause", "status": "x"}', "status"),
        ("POST", f"{INSTANCES}/dup-target/events/approved", '{"user": "a", "user": "b"}', "user"),
    ],
    ids=["create id", "nested in params", "batch item", "status change", "event payload"],
)
def test_duplicate_key_is_a_400_naming_it(
    api: Api, method: str, path: str, raw: str, key: str
) -> None:
    if api.request("GET", f"{INSTANCES}/dup-target").status == 404:
        created(api, "dup-target")

    with nothing_written(api):
        answer = api.request(method, path, raw=raw)

    assert (answer.status, answer.code) == (400, "invalid_json"), answer.body
    assert f"key '{key}' appears twice" in answer.message


# --- media types are case-insensitive ---------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["APPLICATION/JSON", "application/json; charset=UTF-8", "Application/Json;Charset=utf-8"],
)
def test_json_media_type_in_any_letter_case_is_accepted(api: Api, content_type: str) -> None:
    instance_id = f"case-{sum(map(ord, content_type))}"

    answer = api.request(
        "POST",
        INSTANCES,
        {"id": instance_id, "params": {"amount": 7}},
        headers={"Content-Type": content_type},
    )
    changed = api.request(
        "PATCH",
        f"{INSTANCES}/{instance_id}/status",
        {"status": "terminate"},
        headers={"content-type": content_type},
    )

    assert answer.status == 201, answer.body
    assert json.loads(api.env.store.get(InstanceRef("orders", instance_id)).params) == {"amount": 7}
    assert (changed.status, changed.body["status"]) == (200, "terminated"), changed.body


# --- ids and event types ending in a newline --------------------------------------------------


def test_check_id_refuses_a_trailing_newline() -> None:
    with pytest.raises(InvalidInput, match=r"'abc\\n' may only contain"):
        check_id("abc\n")
    with pytest.raises(InvalidInput, match="event type"):
        check_id("approved\n", what="event type")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", f"{INSTANCES}/nl-target\n", None),
        ("PATCH", f"{INSTANCES}/nl-target\n/status", {"status": "terminate"}),
        ("POST", f"{INSTANCES}/nl-target\n/events/approved", {"user": "x"}),
        ("POST", f"{INSTANCES}/nl-target/events/approved\n", {"user": "x"}),
        ("PATCH", f"{INSTANCES}/nl-target/status\n", {"status": "terminate"}),
        ("POST", "/workflows/orders\n/instances", {"id": "nl-new"}),
    ],
    ids=["read", "status change", "event to id", "event type", "route", "workflow name"],
)
def test_path_with_a_trailing_newline_is_refused_through_the_api(
    api: Api, method: str, path: str, body: Any
) -> None:
    # GIVEN the instance the path names without its newline
    if api.request("GET", f"{INSTANCES}/nl-target").status == 404:
        created(api, "nl-target")

    # WHEN the request names it with a trailing newline
    with nothing_written(api):
        answer = api.request(method, path, body)

    # THEN it is a 404 saying why (the resolver alone would act on "nl-target" / "approved")
    assert (answer.status, answer.code) == (404, "not_found"), answer.body
    assert "control character" in answer.message
    assert api.request("GET", f"{INSTANCES}/nl-target").body["status"] == "queued"


def test_a_segment_no_route_takes_is_a_404_not_a_405(api: Api) -> None:
    with nothing_written(api):
        answer = api.request("GET", f'{INSTANCES}/a"b')

    assert (answer.status, answer.code) == (404, "not_found"), answer.body
    assert "letters, digits" in answer.message


def test_python_client_refuses_a_trailing_newline(api: Api) -> None:
    created(api, "nl-client")
    orders = Workflow("orders", service=api.aws.runtime.service)

    with nothing_written(api):
        with pytest.raises(InvalidInput, match="instance id"):
            orders.create(id="nl-client-2\n")
        # a batch reports the item instead (the rest of a batch would be created)
        result = orders.create_batch([{"id": "nl-client-3\n"}])
        assert result["created"] == []
        assert [(e["index"], e["code"]) for e in result["errors"]] == [(0, "invalid_input")]
        assert "instance id" in result["errors"][0]["message"]
        with pytest.raises(InvalidInput, match="event type"):
            orders.get("nl-client").send_event(type="approved\n", payload={"user": "x"})


def sqs_record(message_id: str, body: dict[str, Any]) -> dict[str, Any]:
    record = copy.deepcopy(sample("sqs_trigger_batch.json")["Records"][0])
    record.update(messageId=message_id, body=json.dumps(body))
    return dict(record)


def test_sqs_trigger_refuses_an_id_with_a_trailing_newline(api: Api) -> None:
    message = sqs_record("m-nl", {"workflow": "orders", "id": "t-1\n"})

    with nothing_written(api):
        response = api.trigger({"Records": [message]})

    assert response == {"batchItemFailures": [{"itemIdentifier": "m-nl"}]}


def test_eventbridge_trigger_refuses_an_id_with_a_trailing_newline(api: Api) -> None:
    event = sample("eventbridge_trigger.json")
    event["detail"] = {"workflow": "orders", "id": "t-2\n"}

    with nothing_written(api), pytest.raises(InvalidInput, match="instance id"):
        api.trigger(event)


def test_delivery_id_with_a_trailing_newline_derives_a_hashed_id(api: Api) -> None:
    # a messageId ending in a newline is no valid id suffix: hashed, not taken as is
    derived = derived_id("sqs", "m-2\n")

    assert derived != "sqs-m-2\n"
    assert check_id(derived) == derived
    response = api.trigger({"Records": [sqs_record("m-2\n", {"workflow": "orders"})]})
    assert response == {"batchItemFailures": []}
    assert api.request("GET", f"{INSTANCES}/{derived}").status == 200
