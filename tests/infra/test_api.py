"""The API in front of ApiFunction: an HTTP API with IAM auth by default (``ApiType=HTTP``,
``ApiAuth=AWS_IAM``), or the REST API of earlier stacks (``ApiType=REST``). Either way every
route the function serves (its OpenAPI document, the Swagger UI, the document itself) is
reachable through it, with the authorization ``ApiAuth`` says, and ``ApiUrl`` is where those
routes are served.

The template is read as CloudFormation deploys it for given parameters: each ``Fn::If`` decided
by the template's own conditions, ``AWS::NoValue`` dropped, resources whose condition is false
left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

from lambda_workflows.engine.links import LINK_PATH
from lambda_workflows.entrypoints._api_direct import ROUTES
from lambda_workflows.entrypoints._api_resolver import app
from lambda_workflows.infra.template import load_template, parameter_defaults

TEMPLATE = load_template()
API_TYPES = {"HTTP": "AWS::Serverless::HttpApi", "REST": "AWS::Serverless::Api"}
NO_VALUE = {"Ref": "AWS::NoValue"}
FUNCTION_URI = (
    "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/"
    "${ApiFunction.Arn}/invocations"
)


# --- the template as deployed ----------------------------------------------------------------


def holds(condition: Any, parameters: dict[str, Any]) -> bool:
    """Whether a condition (by name, or a condition function) holds for ``parameters``."""
    if isinstance(condition, str):
        return holds(TEMPLATE["Conditions"][condition], parameters)
    ((function, argument),) = condition.items()
    if function == "Condition":
        return holds(argument, parameters)
    if function == "Fn::Equals":
        left, right = (parameters[a["Ref"]] if isinstance(a, dict) else a for a in argument)
        return str(left) == str(right)
    if function == "Fn::Not":
        return not holds(argument[0], parameters)
    if function == "Fn::And":
        return all(holds(c, parameters) for c in argument)
    if function == "Fn::Or":
        return any(holds(c, parameters) for c in argument)
    raise AssertionError(f"not a condition function: {function}")


def deployed(value: Any, parameters: dict[str, Any]) -> Any:
    """``value`` with every ``Fn::If`` decided, ``AWS::NoValue`` dropped and each parameter's
    ``Ref`` replaced by its value."""
    if isinstance(value, list):
        items = [deployed(item, parameters) for item in value]
        return [item for item in items if item != NO_VALUE]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"} and value["Ref"] in parameters:
        return parameters[value["Ref"]]
    if set(value) == {"Fn::If"}:
        condition, then, otherwise = value["Fn::If"]
        return deployed(then if holds(condition, parameters) else otherwise, parameters)
    items = {key: deployed(item, parameters) for key, item in value.items()}
    return {key: item for key, item in items.items() if item != NO_VALUE}


def stack(**overrides: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The resources and outputs deployed with these parameters (the others: defaults)."""
    parameters = {**parameter_defaults(TEMPLATE), **overrides}
    resources = {
        name: deployed(resource, parameters)
        for name, resource in TEMPLATE["Resources"].items()
        if "Condition" not in resource or holds(resource["Condition"], parameters)
    }
    outputs = {
        name: deployed(output["Value"], parameters)
        for name, output in TEMPLATE["Outputs"].items()
        if "Condition" not in output or holds(output["Condition"], parameters)
    }
    return resources, outputs


def the_api(resources: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The one API Gateway API of a deployed stack: its logical id and resource."""
    (api,) = [(n, r) for n, r in resources.items() if r["Type"] in API_TYPES.values()]
    return api


# --- its routes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """A route of the API's OpenAPI body: its method (ANY for any), path, authorization and
    integration."""

    method: str
    path: str
    auth: str
    integration: dict[str, Any]

    def serves(self, method: str, path: str) -> bool:
        """Whether API Gateway sends ``method path`` to this route (a greedy ``{proxy+}``
        takes one segment or more, any other ``{param}`` one segment)."""
        pattern = re.sub(r"\\\{[^/]+?\\\+\\\}", ".+", re.escape(self.path))
        pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", pattern)
        return self.method in ("ANY", method) and re.fullmatch(pattern, path) is not None


LINKS = "/links/{token}"
"""The approval links' route: open whatever ApiAuth says (the token is the credential)."""


def guarded(api: dict[str, Any]) -> set[str]:
    """The authorizations of every route but the approval links'."""
    return {route.auth for route in routes(api) if route.path != LINKS}


def routes(api: dict[str, Any]) -> list[Route]:
    """Every route of a deployed API's OpenAPI body."""
    body = api["Properties"]["DefinitionBody"]
    schemes = body.get("components", {}).get("securitySchemes", {})
    found = []
    for path, operations in body["paths"].items():
        for key, operation in operations.items():
            method = "ANY" if key == "x-amazon-apigateway-any-method" else key.upper()
            found.append(
                Route(
                    method,
                    path,
                    authorization(operation, schemes),
                    operation["x-amazon-apigateway-integration"],
                )
            )
    return found


def authorization(operation: dict[str, Any], schemes: dict[str, Any]) -> str:
    """AWS_IAM or NONE: a REST API's x-amazon-apigateway-auth, an HTTP API's security (a
    SigV4 scheme, or none)."""
    if "x-amazon-apigateway-auth" in operation:
        return str(operation["x-amazon-apigateway-auth"]["type"])
    required = [name for requirement in operation.get("security", []) for name in requirement]
    if not required:
        return "NONE"
    (name,) = required
    assert schemes[name] == {
        "type": "apiKey",
        "name": "Authorization",
        "in": "header",
        "x-amazon-apigateway-authtype": "awsSigv4",
    }
    return "AWS_IAM"


def served_by_the_function() -> list[tuple[str, str]]:
    """Every method and path ApiFunction answers: its OpenAPI document's operations, the
    direct path's routes, and the two documents (each parameter as one segment)."""
    document = app.get_openapi_schema()
    served = [
        (method.upper(), re.sub(r"\{\w+\}", "x", path))
        for path, item in (document.paths or {}).items()
        for method in ("get", "put", "post", "delete", "patch")
        if getattr(item, method) is not None
    ]
    served += [(route.method, re.sub(r"<\w+>", "x", route.rule)) for route in ROUTES]
    links = [("GET", LINK_PATH + "x"), ("POST", LINK_PATH + "x")]  # entrypoints._links
    return sorted({*served, *links, ("GET", "/openapi.json"), ("GET", "/docs")})


# --- the default: an HTTP API with IAM auth --------------------------------------------------


def test_the_default_api_is_an_http_api_with_iam_auth_on_every_route() -> None:
    # GIVEN the stack deployed with the template's defaults
    assert TEMPLATE["Parameters"]["ApiType"]["Default"] == "HTTP"
    assert TEMPLATE["Parameters"]["ApiAuth"]["Default"] == "AWS_IAM"
    resources, _ = stack()

    # THEN its one API is an HTTP API, and every route takes SigV4-signed requests only
    name, api = the_api(resources)
    assert (name, api["Type"]) == ("WorkflowsHttpApi", "AWS::Serverless::HttpApi")
    assert guarded(api) == {"AWS_IAM"}


def test_api_type_rest_keeps_the_rest_api_earlier_stacks_have() -> None:
    # GIVEN a stack deployed before the HTTP API was the default, updated with ApiType=REST
    resources, _ = stack(ApiType="REST")

    # THEN it keeps its REST API (same logical id: same API, same URL) and its stage v1
    name, api = the_api(resources)
    assert (name, api["Type"]) == ("WorkflowsApi", "AWS::Serverless::Api")
    assert api["Properties"]["StageName"] == "v1"
    assert guarded(api) == {"AWS_IAM"}


@pytest.mark.parametrize("api_type", sorted(API_TYPES))
@pytest.mark.parametrize("auth", ["AWS_IAM", "NONE"])
def test_api_auth_sets_every_routes_authorization(api_type: str, auth: str) -> None:
    resources, _ = stack(ApiType=api_type, ApiAuth=auth)

    _, api = the_api(resources)
    assert api["Type"] == API_TYPES[api_type]
    assert guarded(api) == {auth}


@pytest.mark.parametrize("api_type", sorted(API_TYPES))
@pytest.mark.parametrize("auth", ["AWS_IAM", "NONE"])
def test_only_the_approval_links_route_is_open_whatever_api_auth_says(
    api_type: str, auth: str
) -> None:
    resources, _ = stack(ApiType=api_type, ApiAuth=auth)

    _, api = the_api(resources)
    open_routes = {(r.method, r.path) for r in routes(api) if r.auth == "NONE"}
    expected = {("GET", LINKS), ("POST", LINKS)}
    assert open_routes == (expected if auth == "AWS_IAM" else open_routes)
    assert {(r.method, r.auth) for r in routes(api) if r.path == LINKS} == {
        ("GET", "NONE"),
        ("POST", "NONE"),
    }


@pytest.mark.parametrize("api_type", sorted(API_TYPES))
def test_every_route_hands_the_rest_event_to_the_api_function(api_type: str) -> None:
    resources, _ = stack(ApiType=api_type)

    _, api = the_api(resources)
    for route in routes(api):
        integration = route.integration
        assert (integration["type"], integration["httpMethod"]) == ("aws_proxy", "POST")
        assert integration["uri"] == {"Fn::Sub": FUNCTION_URI}
        if api_type == "HTTP":  # the REST API's event (what the handler reads), not 2.0's
            assert integration["payloadFormatVersion"] == "1.0"


@pytest.mark.parametrize("api_type", sorted(API_TYPES))
def test_every_route_the_function_serves_is_reachable_and_no_other(api_type: str) -> None:
    # GIVEN the API's routes
    resources, _ = stack(ApiType=api_type)
    _, api = the_api(resources)
    declared = routes(api)
    served = served_by_the_function()
    assert ("POST", "/workflows/x/instances/x/events/x") in served  # the document was read

    # THEN every method and path the function answers reaches it through a route
    unreachable = [(m, p) for m, p in served if not any(r.serves(m, p) for r in declared)]
    assert unreachable == []
    # AND every route leads to something the function answers
    for route in declared:
        assert any(route.serves(m, p) for m, p in served), route


def test_the_http_api_is_served_from_its_default_stage_at_the_root_of_api_url() -> None:
    # GIVEN the default stack
    resources, outputs = stack()
    _, api = the_api(resources)

    # THEN the API has no named stage (SAM gives it $default, deployed on every change), so its
    # routes are at the root of its execute-api URL, which ApiUrl is
    assert "StageName" not in api["Properties"]
    assert outputs["ApiUrl"] == {
        "Fn::Sub": "https://${WorkflowsHttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"
    }
    assert outputs["ApiType"] == "HTTP"


def test_the_rest_apis_url_keeps_its_stage() -> None:
    _, outputs = stack(ApiType="REST")

    assert outputs["ApiUrl"] == {
        "Fn::Sub": "https://${WorkflowsApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/v1"
    }
    assert outputs["ApiType"] == "REST"


@pytest.mark.parametrize("api_type", sorted(API_TYPES))
def test_api_gateway_may_invoke_the_function_from_the_deployed_api_only(api_type: str) -> None:
    resources, _ = stack(ApiType=api_type)
    name, _ = the_api(resources)

    permission = resources["ApiFunctionInvokePermission"]["Properties"]
    assert permission["FunctionName"] == {"Ref": "ApiFunction"}
    assert permission["Principal"] == "apigateway.amazonaws.com"
    assert permission["SourceArn"] == {
        "Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:"
        f"${{{name}}}/*"
    }
