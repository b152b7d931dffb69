"""Approval links end to end through `lambda-workflows dev` over HTTP: the workflow mails a
link to the dev server's own address; opening it changes nothing, confirming it sends the
event once; a reused, tampered or expired link is refused."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows.local.runtime import LocalRuntime
from tests.functional.workflows_under_test import Approves

from .devserver import RunningDev, call, serving

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")


@pytest.fixture
def dev() -> Iterator[RunningDev]:
    runtime = LocalRuntime({"approvals": Approves}, out=lambda line: None)
    with serving(runtime, worker=False) as running:
        yield running


def mailed_link(dev: RunningDev, instance_id: str) -> str:
    """Start an instance; the link its step mailed, read over the API."""
    status, _ = call(dev.url, "POST", "/workflows/approvals/instances", {"id": instance_id})
    assert status == 201
    dev.runtime.run_until_idle()
    path = f"/workflows/approvals/instances/{instance_id}"
    status, step = call(dev.url, "GET", f"{path}/steps/mail%20the%20link")
    assert status == 200, step
    return str(step["output"])


def instance(dev: RunningDev, instance_id: str) -> dict[str, Any]:
    status, body = call(dev.url, "GET", f"/workflows/approvals/instances/{instance_id}")
    assert status == 200
    return dict(body)


def fetch(url: str, method: str, accept: str = "application/json") -> tuple[int, Any, str]:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    request.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode()


def test_mint_open_confirm_then_reuse_and_tamper_are_refused(dev: RunningDev) -> None:
    # GIVEN the link a waiting instance mailed: on the dev server's own address
    url = mailed_link(dev, "e2e-1")
    assert url.startswith(f"{dev.url}/links/l1.")

    # WHEN it is opened: a confirmation page, and the instance still waits
    status, headers, page = fetch(url, "GET", accept="text/html")
    assert status == 200 and "<form" in page and "approved" in page
    assert headers["Referrer-Policy"] == "no-referrer" and headers["Cache-Control"] == "no-store"
    dev.runtime.run_until_idle()
    assert instance(dev, "e2e-1")["status"] == "waiting"

    # AND a tampered copy is refused
    tampered = url[:-4] + ("AAAA" if not url.endswith("AAAA") else "BBBB")
    status, _, body = fetch(tampered, "POST")
    assert status == 403 and "link_invalid" in body

    # WHEN it is confirmed: the event arrives and the instance completes
    status, _, body = fetch(url, "POST")
    assert status == 200 and '"sent": true' in body
    dev.runtime.run_until_idle()
    assert instance(dev, "e2e-1")["status"] == "complete"

    # THEN a second use is refused
    status, _, body = fetch(url, "POST")
    assert status == 409 and "link_used" in body


def test_a_link_past_its_waits_timeout_is_refused(dev: RunningDev) -> None:
    url = mailed_link(dev, "e2e-late")

    # WHEN the dev clock passes the wait's hour
    status, _ = call(dev.url, "POST", "/_dev/clock/advance", {"by": "61 minutes"})
    assert status == 200

    # THEN the link has expired, and nothing was sent
    status, _, body = fetch(url, "POST")
    assert status == 410 and "link_expired" in body
    dev.runtime.run_until_idle()
    assert instance(dev, "e2e-late")["output"]["timed_out"] is True
