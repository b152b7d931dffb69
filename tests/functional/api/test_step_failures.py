"""GET /workflows/{name}/instances/{id} on the real ApiFunction handler and DynamoDB (moto)
shows every attempt of a failing step with its own start, end, error and the user's traceback;
a wait's event type and payload; a sleep's wake-up time. The OpenAPI document describes them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.tracebacks import MAX_TRACEBACK_BYTES
from lambda_workflows.testing import WorkflowTestEnv

from .conftest import Api

ISO = "2000-01-01T00:00:00.000Z"  # the shape of every time the API shows


def reserve_stock(sku: str, attempt: int) -> None:
    raise LookupError(f"no stock for {sku} (attempt {attempt})")


class Reserve(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def reserve(ctx: Any) -> None:
            reserve_stock("cat-poster", ctx.attempt)

        retries = {"limit": 2, "delay": "30 seconds", "backoff": "constant"}
        return await step.do("reserve", {"retries": retries}, reserve)


def descend(depth: int) -> None:
    if depth == 0:
        raise ValueError("bottom of the stack")
    return climb(depth - 1)


def climb(depth: int) -> None:
    return descend(depth)


class Deep(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("deep", {"retries": {"limit": 0}}, lambda: descend(400))


class Approval(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("cool down", "3 hours")
        approval = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return approval.payload


@pytest.fixture(scope="module")
def failures_api() -> Iterator[Api]:
    env = WorkflowTestEnv({"reserve": Reserve, "deep": Deep, "approval": Approval}, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


def run_to_the_end(api: Api, workflow: str, instance_id: str) -> dict[str, Any]:
    created = api.request("POST", f"/workflows/{workflow}/instances", {"id": instance_id})
    assert created.status == 201
    api.env.run_until_idle()
    answer = api.request("GET", f"/workflows/{workflow}/instances/{instance_id}")
    assert answer.status == 200
    return dict(answer.body)


def test_a_step_that_failed_three_times_shows_each_attempt_and_its_traceback(
    failures_api: Api,
) -> None:
    # GIVEN a step that fails on each of its three attempts, 30 s apart
    # WHEN the instance has errored and its status is read over HTTP
    body = run_to_the_end(failures_api, "reserve", "r-1")
    # THEN its row keeps the attempt count and lists the three attempts
    assert body["status"] == "errored"
    [row] = body["steps"]
    assert row["attempts"] == 3
    history = row["attempt_history"]
    assert [a["attempt"] for a in history] == [1, 2, 3]
    assert [a["success"] for a in history] == [False, False, False]
    starts = [a["start"] for a in history]
    assert len(set(starts)) == 3 and starts == sorted(starts)  # each its own start
    for n, attempt in enumerate(history, start=1):
        assert len(attempt["start"]) == len(attempt["end"]) == len(ISO)
        error = attempt["error"]
        assert (error["name"], error["message"]) == (
            "LookupError",
            f"no stock for cat-poster (attempt {n})",
        )
        # AND the traceback is the user's: a frame of this file, none of the library
        trace = error["traceback"]
        assert f'File "{__file__}"' in trace
        assert "in reserve_stock" in trace and 'reserve_stock("cat-poster", ctx.attempt)' in trace
        assert "handler/lambda_workflows" not in trace and "asyncio" not in trace
    # AND the row's own error keeps its two keys
    assert row["error"] == {"name": "LookupError", "message": "no stock for cat-poster (attempt 3)"}


def test_dynamodb_keeps_each_attempts_start_and_traceback(failures_api: Api) -> None:
    run_to_the_end(failures_api, "reserve", "r-2")
    items = sorted(
        (
            i
            for i in failures_api.table()
            if i["pk"]["S"] == "I#reserve#r-2" and i.get("name", {}).get("S") == "reserve"
        ),
        key=lambda i: int(i["attempt"]["N"]),
    )
    assert [i["kind"]["S"] for i in items] == ["attempt", "attempt", "step"]
    starts = [float(i["attempt_started_at"]["N"]) for i in items]
    assert starts[1] - starts[0] == starts[2] - starts[1] == 30
    for item in items:
        assert "in reserve_stock" in item["error"]["M"]["traceback"]["S"]


def test_a_deep_traceback_is_capped_through_the_api(failures_api: Api) -> None:
    body = run_to_the_end(failures_api, "deep", "d-1")
    trace = body["steps"][0]["attempt_history"][0]["error"]["traceback"]
    assert len(trace.encode()) <= MAX_TRACEBACK_BYTES
    # its head (where run() called in), a marker, and its tail (where it was raised)
    assert trace.startswith("Traceback (most recent call last):\n")
    assert "lambda: descend(400))" in trace.split("frame(s) cut here")[0]
    assert trace.count("frame(s) cut here") == 1
    assert trace.rstrip().endswith("ValueError: bottom of the stack")


def test_wait_and_sleep_rows_show_the_event_type_payload_and_wake_up(failures_api: Api) -> None:
    # GIVEN an instance that slept and now waits for "approved"
    body = run_to_the_end(failures_api, "approval", "a-1")
    nap, wait = body["steps"]
    assert (nap["type"], nap["status"]) == ("sleep", "complete")
    assert nap["wake_at"] == nap["end"] and len(nap["wake_at"]) == len(ISO)
    assert (wait["status"], wait["event_type"], wait["output"]) == ("waiting", "approved", None)
    # WHEN the event is sent over HTTP and the instance resumes
    sent = failures_api.request(
        "POST", "/workflows/approval/instances/a-1/events/approved", {"user": "ana"}
    )
    assert sent.status == 202
    failures_api.env.run_until_idle()
    body = failures_api.request("GET", "/workflows/approval/instances/a-1").body
    # THEN the wait row shows the payload it received
    _, wait = body["steps"]
    assert (wait["status"], wait["event_type"], wait["output"]) == (
        "complete",
        "approved",
        {"user": "ana"},
    )
    assert body["output"] == {"user": "ana"}


def test_a_timed_out_wait_shows_its_type_and_the_timeout(failures_api: Api) -> None:
    run_to_the_end(failures_api, "approval", "a-2")
    failures_api.env.clock.advance(timedelta(days=1))
    failures_api.env.run_until_idle()
    body = failures_api.request("GET", "/workflows/approval/instances/a-2").body
    _, wait = body["steps"]
    assert (wait["status"], wait["event_type"]) == ("errored", "approved")
    assert wait["error"]["name"] == "WorkflowTimeoutError"


def test_the_openapi_document_describes_attempts_waits_and_sleeps() -> None:
    from lambda_workflows.entrypoints.api import app

    document = json.loads(app.get_openapi_json_schema())
    validate(document, cls=OpenAPIV31SpecValidator)
    schemas = document["components"]["schemas"]
    step = schemas["StepView"]["properties"]
    assert {"attempts", "attempt_history", "event_type", "wake_at"} <= set(step)
    assert step["attempt_history"]["items"] == {"$ref": "#/components/schemas/AttemptView"}
    attempt = schemas["AttemptView"]["properties"]
    assert set(attempt) == {"attempt", "start", "end", "success", "error"}
    error = json.dumps(attempt["error"])
    assert "#/components/schemas/AttemptError" in error
    assert "traceback" in schemas["AttemptError"]["properties"]
