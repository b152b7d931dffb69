"""Restart from a step, one step's output, and delete, through the real ApiFunction handler on
moto; the OpenAPI document says so."""

from __future__ import annotations

import base64
import json
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.entrypoints.api import STEP_OUTPUT_CAP, app
from lambda_workflows.testing import WorkflowTestEnv
from lambda_workflows.text_timeline import render
from tests.aws_faults import Faults

from .conftest import Api

calls: Counter[str] = Counter()
BIG = base64.b64encode(os.urandom(90_000)).decode()  # 120 KB: over the status answer's cap


class Steps(WorkflowEntrypoint):
    """Steps with awkward names and outputs, then a wait for approval."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def counted(name: str) -> int:
            calls[f"{event.instance_id} {name}"] += 1
            return calls[f"{event.instance_id} {name}"]

        first = await step.do("fetch page", lambda: counted("fetch page"))
        await step.do("a/b big", lambda: {"blob": BIG})
        await step.do("token", {"sensitive": "output"}, lambda: "s3cr3t")
        second = await step.do("tick", lambda: counted("tick"))
        third = await step.do("tick", lambda: counted("tick"))
        got = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return [first, second, third, got.payload]


@pytest.fixture(scope="module")
def module_api() -> Iterator[Api]:
    env = WorkflowTestEnv({"steps": Steps}, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


@pytest.fixture
def api(module_api: Api) -> Api:
    module_api.writes.calls.clear()
    return module_api


def waiting(api: Api, instance_id: str) -> str:
    """A new instance, run until it waits for approval; its path."""
    assert api.request("POST", "/workflows/steps/instances", {"id": instance_id}).status == 201
    api.env.run_until_idle()
    path = f"/workflows/steps/instances/{instance_id}"
    assert api.request("GET", path).body["status"] == "waiting"
    return path


# --- restart from a step ---------------------------------------------------------------------


def test_patch_restart_from_a_step_keeps_the_steps_before_it(api: Api) -> None:
    path = waiting(api, "r-1")
    api.request("POST", f"{path}/events/approved", {"by": "ana"})
    api.env.run_until_idle()
    assert api.request("GET", path).body["output"] == [1, 1, 2, {"by": "ana"}]

    # WHEN it restarts from the second occurrence of "tick"
    change = {"status": "restart", "from_step": {"name": "tick", "count": 2, "type": "do"}}
    answer = api.request("PATCH", f"{path}/status", change)
    assert (answer.status, answer.body) == (200, {"id": "r-1", "status": "queued"})
    api.env.run_until_idle()

    # THEN everything before it was kept; it ran again, and the wait waits for a new event
    body = api.request("GET", path).body
    assert body["status"] == "waiting"
    assert calls["r-1 fetch page"] == 1 and calls["r-1 tick"] == 3
    api.request("POST", f"{path}/events/approved", {"by": "bo"})
    api.env.run_until_idle()
    assert api.request("GET", path).body["output"] == [1, 1, 3, {"by": "bo"}]


def test_restart_from_an_unknown_step_is_a_400_naming_the_steps_and_writes_nothing(
    api: Api,
) -> None:
    path = waiting(api, "r-2")
    api.writes.calls.clear()
    before = api.table()

    answer = api.request(
        "PATCH", f"{path}/status", {"status": "restart", "from_step": {"name": "nope"}}
    )

    assert (answer.status, answer.code) == (400, "invalid_input")
    assert "'nope'" in answer.message
    assert "recorded steps: 'fetch page' (do), 'a/b big' (do), 'token' (do)" in answer.message
    assert api.writes.calls == []
    assert api.table() == before


def test_from_step_with_another_action_is_a_400(api: Api) -> None:
    change = {"status": "pause", "from_step": {"name": "tick"}}
    answer = api.request("PATCH", "/workflows/steps/instances/r-3/status", change)
    assert (answer.status, answer.code) == (400, "invalid_body")
    assert "from_step applies to restart only" in answer.message
    assert api.writes.calls == []


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"status": "restart", "from_step": {"name": "tick", "count": 0}}, "count"),
        ({"status": "restart", "from_step": {"name": "tick", "count": "2"}}, "count"),
        ({"status": "restart", "from_step": {"name": "tick", "type": "wait"}}, "type"),
        ({"status": "restart", "from_step": {"count": 1}}, "name"),
        ({"status": "restart", "from_step": {"name": "tick", "x": 1}}, "x"),
    ],
)
def test_a_malformed_from_step_is_a_422(api: Api, change: dict[str, Any], says: str) -> None:
    answer = api.request("PATCH", "/workflows/steps/instances/r-3/status", change)
    assert (answer.status, answer.code) == (422, "validation_error")
    assert says in answer.message
    assert api.writes.calls == []


# --- one step's output -----------------------------------------------------------------------


def test_the_status_answer_leaves_out_large_outputs_and_the_step_route_has_them(api: Api) -> None:
    path = waiting(api, "o-1")
    body = api.request("GET", path).body
    steps = {(s["name"], s["count"]): s for s in body["steps"]}

    # the status answer: a large output is left out and says so; small ones are there
    big = steps[("a/b big", 1)]
    assert (big["output"], big["output_truncated"]) == (None, True)
    assert len(json.dumps({"blob": BIG})) > STEP_OUTPUT_CAP
    assert (steps[("tick", 2)]["output"], steps[("tick", 2)]["output_truncated"]) == (2, False)
    assert steps[("token", 1)]["output"] == "[REDACTED]"
    big_line = next(line for line in render(body).splitlines() if "'a/b big'" in line)
    assert big_line.endswith("-> (over 64 KiB: lambda-workflows instances step shows it)")

    # the step route: the whole of it, by its percent-encoded name
    answer = api.request("GET", f"{path}/steps/{quote('a/b big', safe='')}")
    assert answer.status == 200
    assert answer.body == {
        "name": "a/b big",
        "count": 1,
        "type": "do",
        "status": "complete",
        "output": {"blob": BIG},
    }
    tick = api.request("GET", f"{path}/steps/tick", query={"count": "2"})
    assert (tick.status, tick.body["output"]) == (200, 2)
    token = api.request("GET", f"{path}/steps/token")
    assert token.body["output"] == "[REDACTED]"
    wait = api.request("GET", f"{path}/steps/approval")
    assert (wait.body["type"], wait.body["status"], wait.body["output"]) == (
        "waitForEvent",
        "waiting",
        None,
    )


def test_an_unknown_step_is_a_404_step_not_found_naming_the_steps(api: Api) -> None:
    path = waiting(api, "o-2")
    for target, query, says in [
        (f"{path}/steps/nope", None, "'nope'"),
        (f"{path}/steps/tick", {"count": "3"}, "occurrence 3"),
    ]:
        answer = api.request("GET", target, query=query)
        assert (answer.status, answer.code) == (404, "step_not_found")
        assert says in answer.message
        assert "recorded steps: 'fetch page' (do)" in answer.message
    missing = api.request("GET", "/workflows/steps/instances/never/steps/tick")
    assert (missing.status, missing.code) == (404, "instance_not_found")
    bad = api.request("GET", f"{path}/steps/tick", query={"count": "0"})
    assert (bad.status, bad.code) == (422, "validation_error")


# --- delete ----------------------------------------------------------------------------------


def test_delete_answers_200_with_the_id_then_404_and_the_instance_is_gone(api: Api) -> None:
    path = waiting(api, "d-1")

    answer = api.request("DELETE", path)

    assert (answer.status, answer.body) == (200, {"id": "d-1", "deleted": True})
    assert api.request("GET", path).code == "instance_not_found"
    listed = api.request("GET", "/workflows/steps/instances").body["instances"]
    assert "d-1" not in {row["id"] for row in listed}
    assert not [i for i in api.table() if i["pk"]["S"].endswith("#d-1") and "deleted_at" not in i]

    # again: a 404, and nothing is written
    api.writes.calls.clear()
    again = api.request("DELETE", path)
    assert (again.status, again.code) == (404, "instance_not_found")
    assert "d-1" in again.message
    assert api.writes.calls == []


def test_a_delete_retried_after_its_commit_timed_out_answers_200_then_404(api: Api) -> None:
    # GIVEN a DELETE whose tombstone write happened but timed out on the way back
    path = waiting(api, "d-t")
    faults = Faults.on(api.aws.runtime)
    committed = ("dynamodb.PutItem", "dynamodb.TransactWriteItems")
    for operation in committed:
        faults.arm(operation, "timeout", match=lambda p: "deleted_at" in json.dumps(p))

    # WHEN the client sends it again after the 503
    first = api.request("DELETE", path)
    retry = api.request("DELETE", path)

    # THEN the retry completes it and answers as a delete does; the next one is a 404
    assert sum(faults.fired(operation) for operation in committed) == 1
    assert (first.status, first.code) == (503, "storage_error")
    assert (retry.status, retry.body) == (200, {"id": "d-t", "deleted": True})
    assert not [i for i in api.table() if i["pk"]["S"].endswith("#d-t") and "deleted_at" not in i]
    assert api.request("DELETE", path).code == "instance_not_found"


def test_post_delete_answers_each_id(api: Api) -> None:
    waiting(api, "d-2")
    waiting(api, "d-3")

    answer = api.request(
        "POST", "/workflows/steps/instances/delete", {"ids": ["d-2", "missing", "d-3", "d-2"]}
    )

    assert answer.status == 200
    assert answer.body["deleted"] == [{"id": "d-2"}, {"id": "d-3"}, {"id": "d-2"}]
    [error] = answer.body["errors"]
    assert (error["index"], error["id"], error["code"]) == (1, "missing", "not_found")
    for gone in ("d-2", "d-3"):
        assert api.request("GET", f"/workflows/steps/instances/{gone}").status == 404


@pytest.mark.parametrize(
    "body",
    [
        {"ids": [f"x{n}" for n in range(101)]},
        {"ids": ["a", 1]},
        {"ids": "a"},
        {},
        {"ids": [], "extra": 1},
    ],
)
def test_a_malformed_batch_delete_is_a_422_and_deletes_nothing(api: Api, body: Any) -> None:
    answer = api.request("POST", "/workflows/steps/instances/delete", body)
    assert (answer.status, answer.code) == (422, "validation_error")
    assert api.writes.calls == []


# --- the OpenAPI document --------------------------------------------------------------------


def test_the_openapi_document_describes_the_new_routes() -> None:
    document = json.loads(app.get_openapi_json_schema())
    paths = document["paths"]
    instance = paths["/workflows/{name}/instances/{instance_id}"]
    assert "DELETE" in {m.upper() for m in instance}
    assert set(instance["delete"]["responses"]) >= {"200", "404"}
    batch = paths["/workflows/{name}/instances/delete"]["post"]
    assert set(batch["responses"]) >= {"200", "422"}
    step = paths["/workflows/{name}/instances/{instance_id}/steps/{step_name}"]["get"]
    assert {p["name"] for p in step["parameters"]} == {"name", "instance_id", "step_name", "count"}
    assert set(step["responses"]) >= {"200", "404"}
    schemas = document["components"]["schemas"]
    assert "from_step" in schemas["StatusChange"]["properties"]
    assert {"name", "count", "type"} <= set(schemas["FromStep"]["properties"])
    assert "output_truncated" in schemas["StepView"]["properties"]
    assert {"deleted", "errors"} <= set(schemas["DeleteBatchResultBody"]["properties"])
