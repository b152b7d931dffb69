"""Every route of the HTTP API (docs/semantics.md) on its success path, through the real ApiFunction
handler, on the sample events in tests/events/."""

from __future__ import annotations

import json
import re

from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.entrypoints.api import app

from .conftest import Api


def test_get_workflows_lists_the_registered_names(api: Api) -> None:
    # WHEN the sample GET /workflows arrives
    answer = api.sample("api_list_workflows.json")

    # THEN it names the registered workflows, with their versions and instances in flight
    assert answer.status == 200
    assert answer.body["workflows"] == ["orders"]
    assert [(v["version"], v["in_flight"]) for v in answer.body["versions"]["orders"]] == [("1", 0)]
    assert answer.headers["Content-Type"] == "application/json"


def test_create_answers_201_with_the_id_and_queues_the_first_run(api: Api) -> None:
    # WHEN the sample POST /workflows/orders/instances arrives
    answer = api.sample("api_create_instance.json", instance_id="create-1")

    # THEN the instance exists, queued, and its first run is on the work queue
    assert answer.status == 201
    assert answer.body == {"id": "create-1", "status": "queued"}
    assert api.drain() == [{"workflow": "orders", "id": "create-1"}]
    assert api.request("GET", "/workflows/orders/instances/create-1").body["status"] == "queued"


def test_create_without_a_body_generates_an_id(api: Api) -> None:
    answer = api.request("POST", "/workflows/orders/instances")

    assert answer.status == 201
    assert len(answer.body["id"]) == 36  # a UUID
    assert api.drain() == [{"workflow": "orders", "id": answer.body["id"]}]


def test_create_accepts_id_as_well_as_instance_id(api: Api) -> None:
    answer = api.request("POST", "/workflows/orders/instances", {"id": "alias-1", "params": {}})

    assert (answer.status, answer.body["id"]) == (201, "alias-1")


def test_create_accepts_a_base64_encoded_body(api: Api) -> None:
    # GIVEN the sample whose body API Gateway delivered base64-encoded (binary media types)
    answer = api.sample("api_create_instance_base64.json")

    assert answer.status == 201
    assert answer.body == {"id": "order-1002", "status": "queued"}


def test_create_keeps_the_params_for_the_run(api: Api) -> None:
    # GIVEN an instance created with params through the API
    api.request("POST", "/workflows/orders/instances", {"id": "params-1", "params": {"amount": 9}})

    # WHEN it runs up to its wait for approval
    api.env.run_until_idle()

    # THEN its first step saw the params
    steps = api.request("GET", "/workflows/orders/instances/params-1").body["steps"]
    assert steps[0]["name"] == "charge"
    assert steps[0]["output"] == {"charged": 9}


def test_batch_creates_every_item_and_answers_201(api: Api) -> None:
    # WHEN the sample batch (two ids, one generated) arrives
    answer = api.sample("api_create_batch.json")

    # THEN all three exist and are queued
    assert answer.status == 201
    assert answer.body["created"][:2] == ["order-2001", "order-2002"]
    assert len(answer.body["created"]) == 3
    assert answer.body["errors"] == []
    assert {m["id"] for m in api.drain()} == set(answer.body["created"])


def test_batch_skips_existing_ids_and_reports_them(api: Api) -> None:
    # GIVEN an instance that exists
    api.request("POST", "/workflows/orders/instances", {"id": "b-old"})
    api.drain()
    before = api.request("GET", "/workflows/orders/instances/b-old").body

    # WHEN a batch names it along with a new id
    answer = api.request(
        "POST",
        "/workflows/orders/instances/batch",
        [{"id": "b-old", "params": {"amount": 1}}, {"instance_id": "b-new"}],
    )

    # THEN only the new one is created, the existing one is reported and left alone
    assert answer.status == 201
    assert answer.body["created"] == ["b-new"]
    [error] = answer.body["errors"]
    assert error["index"] == 0
    assert error["id"] == "b-old"
    assert error["code"] == "instance_exists"
    assert "already exists" in error["message"]
    assert api.drain() == [{"workflow": "orders", "id": "b-new"}]
    assert api.request("GET", "/workflows/orders/instances/b-old").body == before


def test_batch_of_only_existing_ids_answers_200_and_creates_nothing(api: Api) -> None:
    items = [{"id": "again-1"}, {"id": "again-2"}]
    assert api.request("POST", "/workflows/orders/instances/batch", items).status == 201
    api.drain()

    answer = api.request("POST", "/workflows/orders/instances/batch", items)

    assert answer.status == 200
    assert answer.body["created"] == []
    assert [e["id"] for e in answer.body["errors"]] == ["again-1", "again-2"]
    assert api.drain() == []


def test_list_pages_through_instances_newest_first(api: Api) -> None:
    # GIVEN three more instances
    ids = [f"page-{n}" for n in range(3)]
    for instance_id in ids:
        api.env.clock.advance(1)  # distinct creation times
        api.request("POST", "/workflows/orders/instances", {"id": instance_id})

    # WHEN the list is read two at a time
    first = api.request("GET", "/workflows/orders/instances", query={"limit": "2"})
    second = api.request(
        "GET", "/workflows/orders/instances", query={"limit": "2", "cursor": first.body["cursor"]}
    )

    # THEN the newest come first and the cursor continues where the first page ended
    assert first.status == second.status == 200
    assert [i["id"] for i in first.body["instances"]] == ["page-2", "page-1"]
    assert second.body["instances"][0]["id"] == "page-0"
    assert set(first.body["instances"][0]) == {"id", "status", "created", "finished"}


def test_list_filters_by_status(api: Api) -> None:
    # GIVEN an instance waiting for its approval event, and one still queued
    api.request("POST", "/workflows/orders/instances", {"id": "st-wait", "params": {"amount": 1}})
    api.env.run_until_idle()
    api.request("POST", "/workflows/orders/instances", {"id": "st-queued"})

    # WHEN the sample list (?status=waiting&limit=10) arrives
    answer = api.sample("api_list_instances.json")

    # THEN only waiting instances are listed
    assert answer.status == 200
    listed = {i["id"]: i["status"] for i in answer.body["instances"]}
    assert listed["st-wait"] == "waiting"
    assert "st-queued" not in listed
    assert set(listed.values()) == {"waiting"}


def test_get_shows_status_output_error_and_steps(api: Api) -> None:
    # GIVEN an instance that ran to completion
    api.request("POST", "/workflows/orders/instances", {"id": "get-1", "params": {"amount": 4}})
    api.env.run_until_idle()
    api.request("POST", "/workflows/orders/instances/get-1/events/approved", {"user": "ana"})
    api.env.run_until_idle()

    # WHEN the sample GET arrives
    answer = api.sample("api_get_instance.json", instance_id="get-1")

    # THEN it shows the outcome and the timeline
    assert answer.status == 200
    body = answer.body
    assert (body["id"], body["workflow"], body["status"]) == ("get-1", "orders", "complete")
    assert body["output"] == {"receipt": {"charged": 4}, "by": "ana"}
    assert body["error"] is None
    assert body["finished"] is not None
    assert [(s["name"], s["type"], s["status"]) for s in body["steps"]] == [
        ("charge", "do", "complete"),
        ("cool down", "sleep", "complete"),
        ("approval", "waitForEvent", "complete"),
    ]


def test_patch_status_pauses_resumes_terminates_and_restarts(api: Api) -> None:
    # GIVEN a queued instance
    api.request("POST", "/workflows/orders/instances", {"id": "ctl-1", "params": {"amount": 2}})
    api.drain()

    # WHEN the sample PATCH {status: pause} arrives, then resume, terminate, restart
    paused = api.sample("api_change_status.json", instance_id="ctl-1")
    path = "/workflows/orders/instances/ctl-1/status"
    resumed = api.request("PATCH", path, {"status": "resume"})
    terminated = api.request("PATCH", path, {"status": "terminate"})
    restarted = api.request("PATCH", path, {"status": "restart"})

    # THEN each answers 200 with the status it led to
    assert (paused.status, paused.body) == (200, {"id": "ctl-1", "status": "paused"})
    assert (resumed.status, resumed.body["status"]) == (200, "queued")
    assert (terminated.status, terminated.body["status"]) == (200, "terminated")
    assert (restarted.status, restarted.body["status"]) == (200, "queued")

    # AND the restarted instance runs again from the top
    api.env.run_until_idle()
    assert api.request("GET", "/workflows/orders/instances/ctl-1").body["status"] == "waiting"


def test_event_answers_202_and_reaches_the_waiting_instance(api: Api) -> None:
    # GIVEN an instance waiting for "approved"
    api.request("POST", "/workflows/orders/instances", {"id": "ev-1", "params": {"amount": 3}})
    api.env.run_until_idle()
    api.drain()

    # WHEN the sample event arrives
    answer = api.sample("api_send_event.json", instance_id="ev-1")

    # THEN it is accepted, wakes the instance, and the run completes with its payload
    assert answer.status == 202
    assert answer.body["instance_id"] == "ev-1"
    assert answer.body["type"] == "approved"
    assert answer.body["event_id"]
    api.env.run_until_idle()  # only the event's wake-up can move it now
    final = api.request("GET", "/workflows/orders/instances/ev-1").body
    assert (final["status"], final["output"]["by"]) == ("complete", "ana")


def test_event_with_an_empty_body_has_a_null_payload(api: Api) -> None:
    api.request("POST", "/workflows/orders/instances", {"id": "ev-2", "params": {"amount": 3}})

    answer = api.request("POST", "/workflows/orders/instances/ev-2/events/ping")

    assert answer.status == 202
    [event] = api.env.store.load(InstanceRef("orders", "ev-2")).events
    assert (event.type, event.payload) == ("ping", "null")


def test_openapi_json_serves_the_resolvers_document(api: Api) -> None:
    answer = api.sample("api_get_openapi.json")

    assert answer.status == 200
    # the resolver's document, naming the server it was fetched from (the sample's stage, v1)
    assert answer.body == {**json.loads(app.get_openapi_json_schema()), "servers": [{"url": "/v1"}]}
    assert answer.body["info"] == {
        "title": "Workflows",
        "version": "1.0",
        "description": answer.body["info"]["description"],
    }


def test_docs_serve_swagger_ui_with_bundled_assets(api: Api) -> None:
    answer = api.request("GET", "/docs")

    assert answer.status == 200
    assert answer.headers["Content-Type"] == "text/html"
    assert "SwaggerUIBundle" in answer.body
    assert re.search(r'<(script|link)[^>]+(src|href)="https?://', answer.body) is None
    assert '"/workflows/{name}/instances"' in answer.body
