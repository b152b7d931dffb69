"""`lambda-workflows dev` serves the dashboard at / and its files under /dashboard/, and nothing
else: the API keeps every other path (issue 16)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.local.wire import DevHttp, dev_http

ASSETS = {
    "/dashboard/app.js": "text/javascript; charset=utf-8",
    "/dashboard/timeline.js": "text/javascript; charset=utf-8",
    "/dashboard/style.css": "text/css; charset=utf-8",
    "/dashboard/favicon.svg": "image/svg+xml",
}


@pytest.fixture(scope="module")
def dev() -> Iterator[DevHttp]:
    with dev_http(worker=False) as server:
        yield server


def test_the_root_is_the_dashboard_page_allowing_nothing_but_its_own_origin(dev: DevHttp) -> None:
    # WHEN a browser asks for /
    reply = dev.connect().request("GET", "/")

    # THEN it gets the HTML page, which loads its module from this server only
    assert reply.status == 200
    assert reply.headers["content-type"] == "text/html; charset=utf-8"
    assert b'<script type="module" src="/dashboard/app.js">' in reply.body
    policy = reply.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert b"http://" not in reply.body and b"https://" not in reply.body  # no CDN


@pytest.mark.parametrize(("path", "content_type"), sorted(ASSETS.items()))
def test_each_asset_has_its_content_type(dev: DevHttp, path: str, content_type: str) -> None:
    reply = dev.connect().request("GET", path)
    assert (reply.status, reply.headers["content-type"]) == (200, content_type)
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert reply.body


def test_head_answers_like_get_without_a_body(dev: DevHttp) -> None:
    reply = dev.connect().send(b"HEAD /dashboard/app.js HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD")
    assert reply.status == 200
    assert int(reply.headers["content-length"]) > 0
    assert reply.body == b""


@pytest.mark.parametrize(
    "path",
    [
        "/dashboard/../pyproject.toml",
        "/dashboard/%2e%2e/files.py",
        "/dashboard/..%2Ffiles.py",
        "/dashboard/%2Fetc%2Fpasswd",
        "/dashboard/..\\files.py",
        "/dashboard/files.py",
        "/dashboard/__init__.py",
        "/dashboard/",
        "/dashboard/index.html",
        "/dashboard/nope.js",
    ],
)
def test_anything_but_a_shipped_file_is_a_json_404(dev: DevHttp, path: str) -> None:
    # WHEN a path under /dashboard/ names no shipped file (a traversal, a source file, nothing)
    reply = dev.connect().request("GET", path)

    # THEN it is a 404 in the API's error shape, saying where the dashboard is
    assert reply.status == 404, reply
    assert reply.error["code"] == "not_found"
    assert "open the dashboard at /" in reply.error["message"]


def test_the_api_keeps_its_paths(dev: DevHttp) -> None:
    connection = dev.connect()
    assert connection.request("GET", "/workflows").json()["workflows"]
    assert connection.request("GET", "/openapi.json").json()["openapi"].startswith("3.")
    assert connection.request("GET", "/docs").status == 200
    # a method the dashboard does not serve is still the API's to refuse, in its own words
    reply = connection.request("POST", "/")
    assert reply.status == 404
    assert reply.error["message"] == "no route POST /; see /docs for the API"


# --- the diagram route -------------------------------------------------------------------------


def test_a_registered_workflows_diagram_is_served_as_json(dev: DevHttp) -> None:
    # WHEN the diagram of the subscription example is asked for
    reply = dev.connect().request("GET", "/_dashboard/workflows/subscription/diagram")

    # THEN it is its run()'s steps, from its source, in order
    assert reply.status == 200, reply
    assert reply.headers["content-type"] == "application/json"
    diagram = reply.json()
    assert (diagram["workflow"], diagram["class_name"]) == ("subscription", "SubscriptionWorkflow")
    assert diagram["module"] == "lambda_workflows.examples.showcase" and diagram["steps"] == 3
    steps = [(node["method"], node["label"]) for node in diagram["nodes"]]
    assert steps == [("do", "charge {customer}"), ("sleep", "cool down"),
                     ("wait_for_event", "approval")]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/_dashboard/workflows/never-registered/diagram", "unknown_workflow"),
        ("/_dashboard/workflows/subscription", "not_found"),
        ("/_dashboard/anything", "not_found"),
    ],
)
def test_a_diagram_of_nothing_registered_is_a_json_404(dev: DevHttp, path: str, code: str) -> None:
    reply = dev.connect().request("GET", path)
    assert reply.status == 404, reply
    assert reply.error["code"] == code


def test_the_diagram_route_takes_only_get(dev: DevHttp) -> None:
    # a POST is not the dashboard's: the API answers it, in its own words
    reply = dev.connect().request("POST", "/_dashboard/workflows/subscription/diagram", {})
    assert reply.status == 404
    assert reply.error["message"].startswith("no route POST /_dashboard/")
