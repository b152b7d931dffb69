"""POST /workflows/{name}/instances/batch answers for each item: an item that cannot be created
is in ``errors`` with its index, id, code and message, the others are created (201); a body that
is not a list of at most 100 objects is refused whole, writing nothing (test_api_rejections)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.entrypoints.api import app

from .conftest import Api

BATCH = "/workflows/orders/instances/batch"


def exists(api: Api, instance_id: str) -> bool:
    answer = api.request("GET", f"/workflows/orders/instances/{instance_id}")
    assert answer.status in (200, 404), answer.body
    return answer.status == 200


def test_a_bad_id_is_reported_by_index_and_the_rest_are_created(api: Api) -> None:
    # WHEN a batch holds one id no instance may have, between two good items
    answer = api.request(
        "POST",
        BATCH,
        [{"id": "bi-1", "params": {"amount": 1}}, {"id": "bad id"}, {"instance_id": "bi-3"}],
    )

    # THEN the good ones are created and queued, the bad one reported, not refused as a 422
    assert answer.status == 201, answer.body
    assert answer.body["created"] == ["bi-1", "bi-3"]
    [error] = answer.body["errors"]
    assert (error["index"], error["id"], error["code"]) == (1, "bad id", "invalid_input")
    assert "may only contain letters" in error["message"]
    assert exists(api, "bi-1") and exists(api, "bi-3")
    assert sorted(m["id"] for m in api.drain()) == ["bi-1", "bi-3"]


def test_every_kind_of_item_problem_is_reported_in_item_order(api: Api) -> None:
    # GIVEN a taken id
    assert api.request("POST", "/workflows/orders/instances", {"id": "bk-taken"}).status == 201

    # WHEN a batch holds it, a repeated id, an unknown key and both id keys
    answer = api.request(
        "POST",
        BATCH,
        [
            {"id": "bk-taken"},
            {"id": "bk-new", "params": {"amount": 2}},
            {"id": "bk-new"},
            {"id": "bk-typo", "param": {"amount": 3}},
            {"id": "bk-x", "instance_id": "bk-y"},
            {"id": 12},
        ],
    )

    # THEN only the first new id is created; each other item has its own code and message
    assert answer.status == 201, answer.body
    assert answer.body["created"] == ["bk-new"]
    reported = [(e["index"], e["id"], e["code"]) for e in answer.body["errors"]]
    assert reported == [
        (0, "bk-taken", "instance_exists"),
        (2, "bk-new", "duplicate_id"),
        (3, "bk-typo", "invalid_input"),
        (4, "bk-x", "invalid_input"),
        (5, None, "invalid_input"),
    ]
    messages = [e["message"] for e in answer.body["errors"]]
    assert "already exists" in messages[0]
    assert "item 1" in messages[1]
    assert "'param'" in messages[2]
    assert "either instance_id or id" in messages[3]
    assert "must be a string" in messages[4]
    assert not exists(api, "bk-typo") and not exists(api, "bk-x") and not exists(api, "bk-y")


def test_a_batch_with_nothing_creatable_answers_200_and_writes_nothing(api: Api) -> None:
    before = api.table()

    answer = api.request("POST", BATCH, [{"id": "no.pe"}, {"id": "-dash"}])

    assert answer.status == 200, answer.body
    assert answer.body["created"] == []
    assert [(e["index"], e["code"]) for e in answer.body["errors"]] == [
        (0, "invalid_input"),
        (1, "invalid_input"),
    ]
    assert api.table() == before
    assert api.writes.calls == [] and api.drain() == []


def test_the_created_items_keep_their_params(api: Api) -> None:
    answer = api.request(
        "POST", BATCH, [{"id": "bp-1", "params": {"amount": 7}}, {"id": "bp 2", "params": {}}]
    )

    assert answer.status == 201
    state = api.env.store.load(InstanceRef("orders", "bp-1"))
    assert json.loads(state.record.params) == {"amount": 7}


@pytest.fixture(scope="module")
def operation() -> dict[str, Any]:
    document = json.loads(app.get_openapi_json_schema())
    return dict(document["paths"]["/workflows/{name}/instances/batch"]["post"])


def test_the_document_says_items_are_reported_one_by_one(operation: dict[str, Any]) -> None:
    for code in ("invalid_input", "duplicate_id", "instance_exists"):
        assert code in operation["description"]
    assert "refused whole" in operation["description"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    listed, counted, instances = schema["oneOf"]
    # an item is documented as a create's body, at most 100 of them
    assert listed["items"] == {"$ref": "#/components/schemas/NewInstanceBody"}
    assert listed["maxItems"] == 100
    # and the object forms: {count (1..100), params?}, {instances: [...]}, nothing else
    assert counted["required"] == ["count"] and counted["additionalProperties"] is False
    assert (
        counted["properties"]["count"]["minimum"],
        counted["properties"]["count"]["maximum"],
    ) == (1, 100)
    assert instances["properties"]["instances"]["items"] == listed["items"]


def test_the_documented_error_has_a_nullable_id_and_names_its_codes() -> None:
    schemas = json.loads(app.get_openapi_json_schema())["components"]["schemas"]
    error = schemas["BatchError"]
    assert {"type": "null"} in error["properties"]["id"]["anyOf"]
    for code in ("invalid_input", "duplicate_id", "instance_exists"):
        assert code in error["properties"]["code"]["description"]


def test_count_creates_that_many_instances_with_generated_ids_and_the_same_params(
    api: Api,
) -> None:
    # WHEN Cloudflare's object form asks for 3 instances
    answer = api.request("POST", BATCH, {"count": 3, "params": {"amount": 9}})

    # THEN 3 instances with distinct generated ids are created, queued, with those params
    assert answer.status == 201, answer.body
    assert answer.body["errors"] == []
    created = answer.body["created"]
    assert len(set(created)) == 3
    for instance_id in created:
        state = api.env.store.load(InstanceRef("orders", instance_id))
        assert json.loads(state.record.params) == {"amount": 9}
    assert sorted(m["id"] for m in api.drain()) == sorted(created)


def test_instances_form_answers_as_the_list_does(api: Api) -> None:
    # GIVEN a taken id
    assert api.request("POST", "/workflows/orders/instances", {"id": "bo-taken"}).status == 201

    # WHEN the instances form holds it, a new id and a bad one
    items = [{"id": "bo-taken"}, {"id": "bo-new", "params": {"amount": 1}}, {"id": "bad id"}]
    answer = api.request("POST", BATCH, {"instances": items})

    # THEN the answer is Cloudflare's {created, errors}, each error by index, id, code, message
    assert answer.status == 201, answer.body
    assert answer.body["created"] == ["bo-new"]
    assert [(e["index"], e["id"], e["code"]) for e in answer.body["errors"]] == [
        (0, "bo-taken", "instance_exists"),
        (2, "bad id", "invalid_input"),
    ]
    assert all(set(e) == {"index", "id", "code", "message"} for e in answer.body["errors"])


def test_a_malformed_object_form_writes_nothing(api: Api) -> None:
    before = api.table()

    answer = api.request("POST", BATCH, {"count": 2, "instances": [{"id": "bm-1"}]})

    assert (answer.status, answer.code) == (400, "invalid_input")
    assert "either" not in answer.message or "count" in answer.message
    assert api.table() == before
    assert api.writes.calls == [] and api.drain() == []
