"""`lambda-workflows dev` listens on 127.0.0.1, where any page of the developer's browser can reach
it: a state-changing request sent by a page of another origin is refused (403) and changes nothing,
while the dashboard's own pages, Swagger UI and anything that is not a browser page (curl, the
CLI, the client) go through."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .wire import DevHttp, dev_http

WORKFLOW = "granular-steps"


@pytest.fixture(scope="module")
def dev() -> Iterator[DevHttp]:
    with dev_http(worker=False) as server:
        yield server


def _create(dev: DevHttp, instance_id: str, headers: dict[str, str]) -> int:
    reply = dev.connect().request(
        "POST",
        f"/workflows/{WORKFLOW}/instances",
        body={"instance_id": instance_id},
        headers=[("Content-Type", "application/json"), *headers.items()],
    )
    return reply.status


def _exists(dev: DevHttp, instance_id: str) -> bool:
    reply = dev.connect().request("GET", f"/workflows/{WORKFLOW}/instances/{instance_id}")
    return reply.status == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "http://127.0.0.1:1"},  # another local server's page
        {"Sec-Fetch-Site": "cross-site"},
        {"sec-fetch-site": "same-site"},
    ],
    ids=["other-site", "other-port", "fetch-cross-site", "fetch-same-site"],
)
def test_a_page_of_another_origin_cannot_create(dev: DevHttp, headers: dict[str, str]) -> None:
    instance_id = "x-" + str(abs(hash(tuple(headers.items()))))[:12]
    assert _create(dev, instance_id, headers) == 403
    assert not _exists(dev, instance_id)


@pytest.mark.parametrize(
    "headers",
    [
        {},  # curl, the CLI, the Python client
        {"Sec-Fetch-Site": "same-origin"},
        {"Sec-Fetch-Site": "none"},  # typed in the address bar
    ],
    ids=["no-browser", "same-origin", "user-typed"],
)
def test_the_dashboard_and_scripts_can_create(dev: DevHttp, headers: dict[str, str]) -> None:
    instance_id = "ok-" + str(abs(hash(tuple(headers.items()))))[:12]
    assert _create(dev, instance_id, headers) == 201
    assert _exists(dev, instance_id)


def test_the_dev_servers_own_pages_can_create(dev: DevHttp) -> None:
    own = {"Origin": f"http://127.0.0.1:{dev.port}", "Sec-Fetch-Site": "same-origin"}
    assert _create(dev, "own-page", own) == 201


def test_a_page_of_another_origin_may_still_read(dev: DevHttp) -> None:
    """A cross-origin GET changes nothing, and the browser keeps its answer from the page."""
    reply = dev.connect().request("GET", "/workflows", headers=[("Origin", "https://evil.x")])
    assert reply.status == 200
