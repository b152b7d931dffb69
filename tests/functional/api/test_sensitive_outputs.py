"""GET /workflows/{name}/instances/{id} shows a sensitive step's output as "[REDACTED]", on the
real ApiFunction handler and DynamoDB (moto), while the workflow's output keeps the value."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.testing import WorkflowTestEnv

from .conftest import Api

SECRET = "pw-71c2-do-not-show"


class Credentials(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        password = await step.do("make password", {"sensitive": "output"}, lambda: SECRET)
        length = await step.do("store it", lambda: len(password))
        return {"password": password, "length": length}


@pytest.fixture(scope="module")
def vault_api() -> Iterator[Api]:
    env = WorkflowTestEnv({"vault": Credentials}, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


def test_the_api_redacts_a_sensitive_step_but_not_the_output(vault_api: Api) -> None:
    # GIVEN an instance created over HTTP whose first step is sensitive
    created = vault_api.request("POST", "/workflows/vault/instances", {"id": "v-1"})
    assert created.status == 201
    # WHEN it has run to the end and its status is read over HTTP
    vault_api.env.run_until_idle()
    answer = vault_api.request("GET", "/workflows/vault/instances/v-1")
    # THEN the step shows "[REDACTED]"; the later step and the output saw the real value
    assert answer.status == 200
    steps = answer.body["steps"]
    assert [(s["name"], s["status"], s["output"]) for s in steps] == [
        ("make password", "complete", "[REDACTED]"),
        ("store it", "complete", len(SECRET)),
    ]
    assert answer.body["output"] == {"password": SECRET, "length": len(SECRET)}
    assert SECRET not in json.dumps(steps)
    # AND the journal item in DynamoDB holds the value with its flag
    items = [i for i in vault_api.table() if i.get("name", {}).get("S") == "make password"]
    assert len(items) == 1
    assert items[0]["sensitive"] == {"BOOL": True}
    assert SECRET in items[0]["result"]["S"]


def test_the_openapi_document_says_where_outputs_are_redacted() -> None:
    from lambda_workflows.entrypoints.api import app

    document = json.loads(app.get_openapi_json_schema())
    output = document["components"]["schemas"]["StepView"]["properties"]["output"]
    assert "[REDACTED]" in output["description"]
