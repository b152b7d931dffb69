"""Swagger UI's "Try it out" in `lambda-workflows dev`: the server the OpenAPI document names,
resolved against the URL the document was fetched from, is where the API answers (not
``/local``)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

import pytest

from .wire import DevHttp, dev_http


@pytest.fixture(scope="module")
def dev() -> Iterator[DevHttp]:
    with dev_http(worker=False) as server:
        yield server


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return int(response.status), bytes(response.read())


def document_at(url: str) -> dict[str, Any]:
    """The OpenAPI document served at ``url``: as JSON, or embedded in the Swagger UI page."""
    status, body = get(url)
    assert status == 200
    text = body.decode()
    if url.endswith("/docs"):
        start = text.index("spec: ") + len("spec: ")
        spec, _ = json.JSONDecoder().raw_decode(text, start)
        return dict(spec)
    return dict(json.loads(text))


@pytest.mark.parametrize("route", ["/openapi.json", "/docs"])
def test_the_documented_server_answers_get_workflows(dev: DevHttp, route: str) -> None:
    # GIVEN the document as a browser fetches it from the dev server
    fetched_from = f"http://127.0.0.1:{dev.port}{route}"
    document = document_at(fetched_from)

    # WHEN its server is resolved against that URL, as Swagger UI does, and GET /workflows
    # is sent there
    server = urljoin(fetched_from, document["servers"][0]["url"])
    status, body = get(server.rstrip("/") + "/workflows")

    # THEN the API answers it
    assert status == 200
    assert "workflows" in json.loads(body)
    assert server.rstrip("/") == f"http://127.0.0.1:{dev.port}"
