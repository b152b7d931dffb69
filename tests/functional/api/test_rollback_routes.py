"""``PATCH …/status {"status": "terminate", "rollback": true}`` and the rollback an instance's
status shows, through the real ApiFunction handler on moto; the OpenAPI document says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.entrypoints.api import app
from lambda_workflows.testing import WorkflowTestEnv

from .conftest import Api

undone: list[str] = []


class Transfer(WorkflowEntrypoint):
    """Debit, credit, then wait for a confirmation that may never come."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def undo(ctx: Any, output: Any, error: Any) -> None:
            undone.append(f"{ctx.step.name}: {error.name}")

        await step.do("debit", lambda: {"debited": 10}, rollback=undo)
        await step.do("credit", lambda: {"credited": 10}, rollback=undo)
        await step.wait_for_event("confirmation", type="confirmed", timeout="1 day")


@pytest.fixture(scope="module")
def module_api() -> Iterator[Api]:
    env = WorkflowTestEnv({"transfers": Transfer}, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


@pytest.fixture
def api(module_api: Api) -> Api:
    module_api.writes.calls.clear()
    undone.clear()
    return module_api


def waiting(api: Api, instance_id: str) -> str:
    """A new transfer, run until it waits for its confirmation; its status path."""
    created = api.request("POST", "/workflows/transfers/instances", {"id": instance_id})
    assert created.status == 201
    api.env.run_until_idle()
    path = f"/workflows/transfers/instances/{instance_id}"
    assert api.request("GET", path).body["status"] == "waiting"
    return path


def test_patch_terminate_with_rollback_runs_the_rollbacks_then_terminates(api: Api) -> None:
    path = waiting(api, "t-1")
    # WHEN PATCH {status: terminate, rollback: true} arrives
    answer = api.request("PATCH", f"{path}/status", {"status": "terminate", "rollback": True})
    # THEN it answers 200: the instance runs its rollbacks first
    assert (answer.status, answer.body) == (200, {"id": "t-1", "status": "running"})
    api.env.run_until_idle()
    # AND then it is terminated, its rollbacks ran newest first, and its status shows them
    assert undone == ["credit: Terminated", "debit: Terminated"]
    body = api.request("GET", path).body
    assert body["status"] == "terminated"
    assert body["rollback"] == {
        "status": "complete",
        "ends_as": "terminated",
        "cause": {"name": "Terminated", "message": "Instance terminated during rollback"},
        "failed_step": None,
        "error": None,
    }
    rows = [(s["type"], s["name"], s["status"]) for s in body["steps"]]
    assert rows[-2:] == [("rollback", "credit", "complete"), ("rollback", "debit", "complete")]


def test_patch_terminate_without_rollback_runs_none(api: Api) -> None:
    path = waiting(api, "t-2")
    answer = api.request("PATCH", f"{path}/status", {"status": "terminate", "rollback": False})
    assert (answer.status, answer.body["status"]) == (200, "terminated")
    api.env.run_until_idle()
    assert undone == []
    assert api.request("GET", path).body["rollback"] is None


@pytest.mark.parametrize("action", ["pause", "resume", "restart"])
def test_rollback_with_another_action_is_refused_and_writes_nothing(api: Api, action: str) -> None:
    path = waiting(api, f"other-{action}")
    api.writes.calls.clear()
    answer = api.request("PATCH", f"{path}/status", {"status": action, "rollback": True})
    assert (answer.status, answer.code) == (400, "invalid_body")
    assert "rollback applies to terminate only" in answer.message
    assert api.writes.calls == []
    assert api.request("GET", path).body["status"] == "waiting"


@pytest.mark.parametrize(
    ("value", "instance_id"), [("yes", "b-yes"), (1, "b-one"), (None, "b-null"), ({}, "b-obj")]
)
def test_rollback_must_be_true_or_false(api: Api, value: Any, instance_id: str) -> None:
    path = waiting(api, instance_id)
    api.writes.calls.clear()
    answer = api.request("PATCH", f"{path}/status", {"status": "terminate", "rollback": value})
    assert (answer.status, answer.code) == (422, "validation_error")
    assert "rollback" in answer.message
    assert api.request("GET", path).body["status"] == "waiting"
    assert api.writes.calls == []


def test_the_openapi_document_describes_rollback() -> None:
    schemas = json.loads(app.get_openapi_json_schema())["components"]["schemas"]
    change = schemas["StatusChange"]["properties"]["rollback"]
    assert change["type"] == "boolean" and "terminate only" in change["description"]
    details = schemas["InstanceDetails"]["properties"]["rollback"]
    assert "RollbackView" in json.dumps(details)
    assert set(schemas["RollbackView"]["properties"]) == {
        "status",
        "ends_as",
        "cause",
        "failed_step",
        "error",
    }
    assert "rollback" in json.dumps(schemas["StepView"]["properties"]["type"])
