"""The OpenAPI document (``/openapi.json``, and the one the Swagger UI at ``/docs`` uses) names
the server it was served from, so "Try it out" calls the API there: the stage path on API
Gateway's execute-api domain, ``/`` on a custom domain and in ``lambda-workflows dev``."""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import urljoin

import pytest

from .conftest import Api, sample

EXECUTE_API = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"


def fetched(api: Api, event: dict[str, Any]) -> dict[str, Any]:
    answer = api.send(event)
    assert answer.status == 200, answer.body
    if event["path"] == "/docs":
        return embedded_spec(str(answer.body))
    return dict(answer.body)


def embedded_spec(html: str) -> dict[str, Any]:
    """The document the Swagger UI page carries (``spec: {...}`` in its script)."""
    start = html.index("spec: ") + len("spec: ")
    spec, _ = json.JSONDecoder().raw_decode(html, start)
    return dict(spec)


def through_api_gateway(
    route: str, *, stage: str, called: str, domain: str = EXECUTE_API
) -> dict[str, Any]:
    """The event API Gateway delivers for GET ``https://<domain><called>`` on ``stage``."""
    event = copy.deepcopy(sample("api_get_openapi.json"))
    event.update(path=route, resource=route)
    event["requestContext"].update(path=called, resourcePath=route, stage=stage, domainName=domain)
    event["headers"]["Host"] = event["multiValueHeaders"]["Host"][0] = domain
    return event


@pytest.mark.parametrize("route", ["/openapi.json", "/docs"])
def test_on_the_execute_api_domain_the_server_is_the_stage_path(api: Api, route: str) -> None:
    # GIVEN the document fetched from https://<api>.execute-api.../prod<route>
    event = through_api_gateway(route, stage="prod", called=f"/prod{route}")

    document = fetched(api, event)

    # THEN its server is the stage, and resolved against where it was fetched from, it
    # is the stage's URL (where GET /workflows is https://<api>.execute-api.../prod/workflows)
    assert document["servers"] == [{"url": "/prod"}]
    base = urljoin(f"https://{EXECUTE_API}/prod{route}", document["servers"][0]["url"])
    assert base.rstrip("/") + "/workflows" == f"https://{EXECUTE_API}/prod/workflows"


def test_the_sample_stage_is_named_as_it_is(api: Api) -> None:
    answer = api.sample("api_get_openapi.json")

    assert answer.body["servers"] == [{"url": "/v1"}]


@pytest.mark.parametrize("route", ["/openapi.json", "/docs"])
def test_on_a_custom_domain_the_server_is_the_root(api: Api, route: str) -> None:
    # GIVEN a custom domain mapped to the stage: its URLs carry no stage
    event = through_api_gateway(route, stage="prod", called=route, domain="api.example.com")

    assert fetched(api, event)["servers"] == [{"url": "/"}]


def test_a_stage_named_like_a_route_is_not_taken_for_a_prefix(api: Api) -> None:
    # GIVEN a custom domain, and a stage whose name is also the first segment of a route
    event = through_api_gateway("/docs", stage="docs", called="/docs", domain="api.example.com")

    assert fetched(api, event)["servers"] == [{"url": "/"}]


@pytest.mark.parametrize("route", ["/openapi.json", "/docs"])
def test_an_event_not_from_api_gateway_is_served_at_the_root(api: Api, route: str) -> None:
    # GIVEN an event as lambda-workflows dev builds it: a stage "local" in no URL, no domain name
    event = through_api_gateway(route, stage="local", called=f"/local{route}")
    del event["requestContext"]["domainName"]

    assert fetched(api, event)["servers"] == [{"url": "/"}]
