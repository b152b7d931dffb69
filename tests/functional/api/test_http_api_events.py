"""The template's default API is an HTTP API whose Lambda integration sends payload format 1.0:
the REST API's event, with header names in lower case, the ``$default`` stage (in no path), a
``version`` field and no deployment id. ApiFunction answers such an event exactly as it answers
the REST API's, on its direct path and on the resolver's (see ``entrypoints/api.py``).

Each test replays one series of requests in fresh stacks, once as the REST API delivers them and
once as the HTTP API does, and compares every answer: status, headers and body. The only
expected difference is the server the OpenAPI document names: the REST API's stage (``/v1``)
there, the API's root (``/``) here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lambda_workflows.entrypoints import _api_direct
from lambda_workflows.testing import WorkflowTestEnv

from .conftest import WORKFLOWS, Answer, Api, as_http_api, build_event, sample

INSTANCES = "/workflows/orders/instances"
RUN = "run until idle"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SERVER = re.compile(r'("url":\s*)"(/v1|/)"')

Request = tuple[Any, ...]  # a sample's name, or method, path[, body, query, headers, raw]
Step = str | Request


SAMPLES: list[Step] = [
    ("api_list_workflows.json",),
    ("api_create_instance.json",),
    ("api_create_instance_base64.json",),
    ("api_create_batch.json",),
    RUN,
    ("api_list_instances.json",),
    ("api_get_instance.json",),
    ("api_send_event.json",),
    RUN,
    ("api_get_instance.json",),
    ("api_change_status.json",),
    ("api_get_openapi.json",),
]
"""Every sample of tests/events/api_*.json (those of http_api_*.json are their counterparts)."""

EVERY_ROUTE: list[Step] = [
    ("GET", "/workflows"),
    ("GET", "/workflows/orders"),
    ("POST", INSTANCES, {"id": "h-1", "params": {"amount": 4}}),
    ("POST", INSTANCES + "/batch", [{"id": "h-2", "params": {"amount": 1}}, {"id": "h-1"}]),
    RUN,
    ("GET", INSTANCES, None, {"status": "waiting", "limit": "10"}),
    ("GET", INSTANCES + "/h-1"),
    ("GET", INSTANCES + "/h-1/steps/charge", None, {"count": "1"}),
    ("GET", INSTANCES + "/h-1/history"),
    ("POST", INSTANCES + "/h-1/events/approved", {"user": "ana"}, None, {"Idempotency-Key": "k-1"}),
    ("POST", INSTANCES + "/h-1/events/approved", {"user": "bob"}, None, {"Idempotency-Key": "k-1"}),
    RUN,
    ("GET", INSTANCES + "/h-1"),
    ("PATCH", INSTANCES + "/h-2/status", {"status": "pause"}),
    ("PATCH", INSTANCES + "/h-2/status", {"status": "resume"}),
    ("PATCH", INSTANCES + "/h-2/status", {"status": "terminate"}),
    ("DELETE", INSTANCES + "/h-2"),
    ("POST", INSTANCES + "/delete", {"ids": ["h-1", "nope"]}),
    # refused: each by the resolver, whichever path the request took first
    ("POST", INSTANCES, {"id": "h-3", "bogus": 1}),
    ("GET", INSTANCES, None, {"limit": "0"}),
    ("PUT", "/workflows"),
    ("GET", "/workflows/orders/nope"),
    ("GET", "/workflows/nope/instances/h-1"),
    ("POST", INSTANCES, None, None, {"Content-Type": "text/plain"}, "x"),
    ("POST", INSTANCES, None, None, None, "{not json"),
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
]
"""Every route of the API (entrypoints/_api_direct.ROUTES and the two documents) and the ways a
request is refused."""


@pytest.fixture
def stacks() -> Iterator[Callable[[], Api]]:
    """Fresh stacks on moto, closed after the test."""
    opened: list[WorkflowTestEnv] = []

    def new() -> Api:
        env = WorkflowTestEnv(WORKFLOWS, backend="aws")
        opened.append(env)
        return Api(env)

    yield new
    for env in opened:
        env.close()


def rest_event(request: Request) -> dict[str, Any]:
    """The REST API's event for ``request``: a sample, or one built like them."""
    if len(request) == 1:
        return sample(request[0])
    method, path, body, query, headers, raw = (*request, None, None, None, None)[:6]
    options = {"query": query, "headers": headers, "raw": raw}
    return (
        build_event(method, path, body, **options) if body else build_event(method, path, **options)
    )


def http_event(request: Request) -> dict[str, Any]:
    """The HTTP API's event for ``request``: a sample's counterpart (http_api_*.json), or the
    REST API's event as the HTTP API delivers it."""
    if len(request) == 1:
        return sample("http_" + request[0])
    return as_http_api(rest_event(request))


def replay(api: Api, steps: list[Step], event: Callable[[Request], dict[str, Any]]) -> list[Answer]:
    """Send each step's request to ``api`` as ``event`` builds it (RUN: run the instances)."""
    answers = []
    for step in steps:
        if isinstance(step, str):
            api.env.run_until_idle()
        else:
            answers.append(api.send(event(step)))
    return answers


def comparable(answer: Answer) -> tuple[int, dict[str, str], str]:
    """The answer, with generated ids and the document's server written alike."""
    body = answer.body if isinstance(answer.body, str) else json.dumps(answer.body)
    return answer.status, answer.headers, SERVER.sub(r'\1"<server>"', UUID.sub("<uuid>", body))


def test_every_http_api_sample_is_its_rest_samples_request() -> None:
    # GIVEN each sample's HTTP API counterpart
    for name in [step[0] for step in SAMPLES if isinstance(step, tuple)]:
        delivered = sample("http_" + name)
        ours = as_http_api(sample(name))
        # THEN it is the request of the REST API's sample, as the HTTP API delivers it
        for field in ("version", "resource", "path", "httpMethod", "body", "isBase64Encoded"):
            assert delivered[field] == ours[field], (name, field)
        assert delivered["queryStringParameters"] == ours["queryStringParameters"], name
        assert delivered["requestContext"]["stage"] == "$default"
        assert delivered["requestContext"]["path"] == delivered["path"]
        assert all(k == k.lower() for k in delivered["headers"]), name


def test_every_sample_gets_the_same_answer_through_either_api(
    stacks: Callable[[], Api],
) -> None:
    # WHEN the samples arrive through the REST API, and their counterparts through the HTTP API
    through_rest = replay(stacks(), SAMPLES, rest_event)
    through_http = replay(stacks(), SAMPLES, http_event)

    # THEN every answer is the same (each GET also answered again by the resolver alone)
    assert [a.status for a in through_http] == [200, 201, 201, 201, 200, 200, 202, 200, 409, 200]
    assert list(map(comparable, through_http)) == list(map(comparable, through_rest))


def test_every_route_answers_alike_through_either_api_on_both_paths(
    stacks: Callable[[], Api], monkeypatch: pytest.MonkeyPatch
) -> None:
    # WHEN every route is called through the REST API and through the HTTP API
    through_rest = replay(stacks(), EVERY_ROUTE, rest_event)
    through_http = replay(stacks(), EVERY_ROUTE, http_event)
    # AND through the HTTP API once more, every request left to the resolver
    monkeypatch.setattr(_api_direct, "answer", lambda event: None)
    resolved = replay(stacks(), EVERY_ROUTE, http_event)

    # THEN the answers are the same, refusals included
    assert [a.status for a in through_http] == [
        *(200, 200, 201, 201, 200, 200, 200, 200, 202, 202),  # ... the event, sent twice
        *(200, 200, 200, 200, 200, 200),  # ... the batch delete
        *(422, 422, 405, 404, 404, 415, 400),  # the refusals
        *(200, 200),  # the documents
    ]
    assert list(map(comparable, through_http)) == list(map(comparable, through_rest))
    assert list(map(comparable, resolved)) == list(map(comparable, through_http))


def test_a_lower_case_idempotency_key_makes_a_second_send_a_no_op(
    stacks: Callable[[], Api],
) -> None:
    # GIVEN an instance waiting for "approved"
    api = stacks()
    replay(api, [*EVERY_ROUTE[2:3], RUN], http_event)

    # WHEN the same event is sent twice with one key, its header name in lower case
    first, second = replay(api, EVERY_ROUTE[9:11], http_event)

    # THEN the second send answers with the event stored the first time, and the run ends with
    # the first payload
    assert (first.status, second.status) == (202, 202)
    assert second.body == first.body
    api.env.run_until_idle()
    assert api.request("GET", INSTANCES + "/h-1").body["output"]["by"] == "ana"


@pytest.mark.parametrize("route", ["/openapi.json", "/docs"])
def test_the_documents_name_the_root_of_an_http_api_as_their_server(
    stacks: Callable[[], Api], route: str
) -> None:
    # GIVEN the document fetched from https://<api>.execute-api.../<route> ($default stage)
    answer = stacks().send(as_http_api(build_event("GET", route)))

    # THEN its server is the API's root, where GET /workflows is served
    assert answer.status == 200
    body = answer.body if isinstance(answer.body, str) else json.dumps(answer.body)
    assert [server for _, server in SERVER.findall(body)] == ["/"]
