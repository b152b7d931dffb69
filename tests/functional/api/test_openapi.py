"""The OpenAPI document: valid OpenAPI 3.1, documenting each route of docs/semantics.md with its
request and response models."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from lambda_workflows.entrypoints.api import app

from .conftest import Api

INSTANCE = "/workflows/{name}/instances/{instance_id}"
# (method, path) → (success status, its schema, request body schema or None)
ROUTES: dict[tuple[str, str], tuple[str, str, str | None]] = {
    ("get", "/workflows"): ("200", "WorkflowList", None),
    ("get", "/workflows/{name}"): ("200", "WorkflowDetails", None),
    ("post", "/workflows/{name}/instances"): ("201", "InstanceHandle", "NewInstanceBody"),
    ("post", "/workflows/{name}/instances/batch"): ("201", "BatchResultBody", "NewInstanceBody"),
    ("get", "/workflows/{name}/instances"): ("200", "InstanceList", None),
    ("get", INSTANCE): ("200", "InstanceDetails", None),
    ("patch", f"{INSTANCE}/status"): ("200", "InstanceHandle", "StatusChange"),
    ("post", f"{INSTANCE}/events/{{event_type}}"): ("202", "EventAccepted", "any JSON"),
    ("delete", INSTANCE): ("200", "Deleted", None),
    ("post", "/workflows/{name}/instances/delete"): (
        "200",
        "DeleteBatchResultBody",
        "DeleteBatchBody",
    ),
    ("get", f"{INSTANCE}/steps"): ("200", "StepPageBody", None),
    ("get", f"{INSTANCE}/steps/{{step_name}}"): ("200", "StepOutputBody", None),
    ("get", f"{INSTANCE}/history"): ("200", "HistoryBody", None),
    ("get", f"{INSTANCE}/subscribe"): ("200", "SubscriptionBody", None),
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return dict(json.loads(app.get_openapi_json_schema()))


def test_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1")
    validate(document, cls=OpenAPIV31SpecValidator)  # raises on any violation


def test_document_has_a_title_and_version(document: dict[str, Any]) -> None:
    assert document["info"]["title"] == "Workflows"
    assert document["info"]["version"] == "1.0"


def test_document_lists_exactly_the_routes_of_the_design(document: dict[str, Any]) -> None:
    documented = {(m, p) for p, ops in document["paths"].items() for m in ops}
    assert documented == set(ROUTES)


@pytest.mark.parametrize("route", list(ROUTES), ids=[f"{m} {p}" for m, p in ROUTES])
def test_route_documents_its_request_and_response_models(
    document: dict[str, Any], route: tuple[str, str]
) -> None:
    method, path = route
    status, answer, request = ROUTES[route]
    operation = document["paths"][path][method]
    schemas = document["components"]["schemas"]

    # the success answer names its model, and the model is in the document
    success = operation["responses"][status]["content"]["application/json"]["schema"]
    assert success == {"$ref": f"#/components/schemas/{answer}"}
    assert answer in schemas

    # every error answer is the one error shape
    errors = {c: r for c, r in operation["responses"].items() if c.startswith(("4", "5"))}
    assert "422" in errors
    for response in errors.values():
        ref = response["content"]["application/json"]["schema"]["$ref"]
        assert ref == "#/components/schemas/ErrorBody"

    # the request body, where the route takes one
    if request is None:
        assert "requestBody" not in operation
    else:
        body = json.dumps(operation["requestBody"]["content"]["application/json"]["schema"])
        assert request == "any JSON" or f"#/components/schemas/{request}" in body

    # path parameters are all declared
    declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
    assert declared == set(re.findall(r"{(\w+)}", path))


def test_request_models_carry_the_limits(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    id_schema = schemas["NewInstanceBody"]["properties"]["instance_id"]["anyOf"][0]
    assert id_schema["maxLength"] == 100
    assert id_schema["pattern"] == r"^[a-zA-Z0-9_][a-zA-Z0-9\-_]*$"
    assert schemas["NewInstanceBody"]["additionalProperties"] is False
    batch = document["paths"]["/workflows/{name}/instances/batch"]["post"]["requestBody"]
    assert batch["content"]["application/json"]["schema"]["oneOf"][0]["maxItems"] == 100
    actions = schemas["StatusChange"]["properties"]["status"]["enum"]
    assert actions == ["pause", "resume", "terminate", "restart"]


@pytest.mark.parametrize("route", list(ROUTES), ids=[f"{m} {p}" for m, p in ROUTES])
def test_every_documented_route_is_served(api: Api, route: tuple[str, str]) -> None:
    method, path = route
    concrete = path.replace("{name}", "orders").replace("{instance_id}", "nobody")
    concrete = concrete.replace("{event_type}", "approved").replace("{step_name}", "charge")

    answer = api.request(method.upper(), concrete, {"status": "pause"})

    assert answer.code not in ("not_found", "method_not_allowed")
