"""``GET``/``POST /links/{token}`` through ApiFunction's handler on moto: GET shows a page and
writes nothing, POST sends the event once; every refusal is a 4xx that writes nothing."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator

import pytest

from lambda_workflows.entrypoints._links import MAX_LINK_PAYLOAD
from lambda_workflows.testing import WorkflowTestEnv
from tests.functional.workflows_under_test import Approves

from .conftest import Api


@pytest.fixture(scope="module")
def module_links() -> Iterator[Api]:
    env = WorkflowTestEnv({"approvals": Approves}, backend="aws")
    try:
        api = Api(env)
        api.check_paths = False  # the resolver has no /links route: only this path answers it
        yield api
    finally:
        env.close()


@pytest.fixture
def links(module_links: Api) -> Api:
    module_links.drain()
    module_links.writes.calls.clear()
    return module_links


def waiting(api: Api, id: str) -> str:
    """The path of the link instance ``id`` mailed (the kit's links are paths only)."""
    api.env.create("approvals", id=id)
    api.env.run_until_idle()
    url = str(api.env.get("approvals", id).step_output("mail the link")["output"])
    assert url.startswith("/links/l1.")
    return url


HTML = {"Accept": "text/html"}


def test_get_shows_a_confirmation_page_and_writes_nothing(links: Api) -> None:
    path = waiting(links, "r-get")
    links.writes.calls.clear()
    before = links.table()

    answer = links.request("GET", path, headers=HTML)

    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("text/html")
    assert "approved" in answer.body and "r-get" in answer.body and "<form" in answer.body
    assert answer.headers["Referrer-Policy"] == "no-referrer"
    assert answer.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
    assert links.table() == before and links.writes.calls == []


def test_post_sends_the_event_once_and_the_second_use_is_a_409(links: Api) -> None:
    path = waiting(links, "r-post")

    first = links.request("POST", path, {"by": "ana"})
    links.env.run_until_idle()

    assert first.status == 200, first.body
    assert first.body == {
        "sent": True,
        "workflow": "approvals",
        "instance": "r-post",
        "wait": "approval",
        "type": "approved",
    }
    output = links.env.get("approvals", "r-post").status().output
    assert output["payload"] == {"by": "ana"}

    before = links.table()
    again = links.request("POST", path, {"by": "bo"})
    assert (again.status, again.code) == (409, "link_used")
    assert links.table() == before


def test_the_pages_empty_form_post_sends_an_event_without_payload(links: Api) -> None:
    path = waiting(links, "r-form")

    headers = {**HTML, "Content-Type": "application/x-www-form-urlencoded"}
    answer = links.request("POST", path, raw="", headers=headers)
    links.env.run_until_idle()

    assert answer.status == 200 and "Done" in answer.body
    assert links.env.get("approvals", "r-form").status().output["payload"] is None


@pytest.mark.parametrize(
    ("change", "status", "code"),
    [
        (lambda p: p[:-2] + ("AA" if not p.endswith("AA") else "BB"), 403, "link_invalid"),
        (lambda p: "/links/not-a-token", 403, "link_invalid"),
    ],
    ids=["tampered", "garbage"],
)
def test_a_bad_token_is_refused_and_writes_nothing(
    links: Api, change: object, status: int, code: str
) -> None:
    path = waiting(links, f"r-bad-{uuid.uuid4().hex[:12]}")
    before = links.table()

    answer = links.request("POST", change(path), {"x": 1})  # type: ignore[operator]

    assert (answer.status, answer.code) == (status, code)
    assert links.table() == before


def test_an_expired_link_is_a_410(links: Api) -> None:
    path = waiting(links, "r-late")
    links.env.clock.advance("2 hours")
    before = links.table()

    answer = links.request("POST", path)

    assert (answer.status, answer.code) == (410, "link_expired")
    assert links.table() == before


def test_a_payload_over_64_kib_is_a_413_and_bad_json_a_400(links: Api) -> None:
    path = waiting(links, "r-big")
    before = links.table()

    big = links.request("POST", path, raw=json.dumps({"x": "y" * MAX_LINK_PAYLOAD}))
    bad = links.request("POST", path, raw='{"x": ')
    other = links.request("POST", path, raw="x=1", headers={"Content-Type": "text/plain"})

    assert (big.status, big.code) == (413, "payload_too_large")
    assert "64 KiB" in big.message
    assert (bad.status, bad.code) == (400, "invalid_json")
    assert (other.status, other.code) == (415, "unsupported_media_type")
    assert links.table() == before


def test_other_methods_are_a_405(links: Api) -> None:
    path = waiting(links, "r-put")

    assert links.request("PUT", path, {}).status == 405


def test_the_token_is_never_logged(links: Api, caplog: pytest.LogCaptureFixture) -> None:
    path = waiting(links, "r-log")
    token = path.removeprefix("/links/")

    with caplog.at_level(logging.DEBUG):
        links.request("GET", path, headers=HTML)
        links.request("POST", path, {})
        links.request("POST", path, {})

    # (botocore's own DEBUG lines echo the table's items, which hold this workflow's step
    # result, the URL: those are the AWS SDK's, off unless asked for)
    ours = [r.getMessage() + str(r.__dict__) for r in caplog.records if "botocore" not in r.name]
    assert any("approval link used" in line for line in ours)
    assert not [line for line in ours if token[3:40] in line]
