"""Each route of the API is declared once (``entrypoints/_api_routes.py``) and both request
paths are built from it.

The direct path's routes are the table's (it builds them from it: checked here by identity).
The resolver registers each route under its function's name with the table's method, rule,
codes and words; here the OpenAPI document it serves is derived from the table, operation by
operation, so a route, a code, a query parameter's bound or default, a body or an answer model
that the resolver declares otherwise fails.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from lambda_workflows.entrypoints import _api_direct as direct
from lambda_workflows.entrypoints import _api_ops as ops
from lambda_workflows.entrypoints import _api_resolver, api_models
from lambda_workflows.entrypoints._api_routes import ROUTES, RouteDeclaration
from lambda_workflows.entrypoints._api_wire import SHAPES

ERRORS = {"$ref": "#/components/schemas/ErrorBody"}


def document() -> dict[str, Any]:
    return _api_resolver.app.get_openapi_schema().model_dump(
        mode="json", by_alias=True, exclude_none=True
    )


def operation(route: RouteDeclaration) -> dict[str, Any]:
    path = re.sub(r"<(\w+)>", r"{\1}", route.rule)
    found: dict[str, Any] = document()["paths"][path][route.method.lower()]
    return found


def answer_schema(response: dict[str, Any]) -> Any:
    return response["content"]["application/json"]["schema"]


IDS = [f"{r.method} {r.rule}" for r in ROUTES]


def test_the_direct_path_serves_the_declared_routes_in_their_order() -> None:
    assert [route.declared for route in direct.ROUTES] == list(ROUTES)
    for route in direct.ROUTES:
        assert route.call is getattr(ops, route.declared.operation)
    # a shape for each answer model, and none for a model no route answers with
    assert set(SHAPES) == {route.answer for route in ROUTES}


def test_the_document_has_exactly_the_declared_routes() -> None:
    served = {
        (method.upper(), path)
        for path, methods in document()["paths"].items()
        for method in methods
    }
    declared = {(r.method, re.sub(r"<(\w+)>", r"{\1}", r.rule)) for r in ROUTES}
    assert served == declared


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_each_operation_is_derived_from_its_declaration(route: RouteDeclaration) -> None:
    found = operation(route)
    assert found["operationId"].startswith(route.handler + "_")
    assert found["summary"] == route.summary
    assert found.get("description") == route.description
    assert found["tags"] == [route.tag]
    codes = {*route.ok, *route.fails, 422, 503}
    assert {int(code) for code in found["responses"]} == codes
    for code in codes - set(route.ok):
        assert answer_schema(found["responses"][str(code)]) == ERRORS, code
    answered = answer_schema(found["responses"][str(route.ok[0])])
    assert answered == {"$ref": f"#/components/schemas/{route.answer}"}
    assert hasattr(api_models, route.answer)


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_each_query_parameter_is_the_declared_one(route: RouteDeclaration) -> None:
    found = operation(route)
    queries = [p for p in found.get("parameters", []) if p["in"] == "query"]
    assert [q["name"] for q in queries] == [q.name for q in route.queries]
    for shown, declared in zip(queries, route.queries, strict=True):
        assert shown["description"] == declared.description
        assert not shown["required"]
        schema = shown["schema"]
        assert schema.get("default") == declared.default, declared.name
        assert schema.get("minimum") == declared.low, declared.name
        assert schema.get("maximum") == declared.high, declared.name


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_each_body_is_the_declared_one(route: RouteDeclaration) -> None:
    body = operation(route).get("requestBody")
    assert (body is not None) == (route.body is not None)
    if body is not None and route.body not in (None, "JsonValue"):
        schema = answer_schema(body)
        refs = [schema, *schema.get("anyOf", ())]
        assert {"$ref": f"#/components/schemas/{route.body}"} in refs
