"""`lambda-workflows dev` as a user meets it: a subprocess on a free port, driven only over HTTP."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows.examples import EXAMPLES
from tests.local.devserver import ctrl_c_works

from .devserver import call

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(base: str, path: str, statuses: set[str], seconds: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    body: Any = None
    while time.monotonic() < deadline:
        _, body = call(base, "GET", path)
        if isinstance(body, dict) and body.get("status") in statuses:
            return body
        time.sleep(0.1)
    raise AssertionError(f"{path} never reached {statuses}: last {body}")


@pytest.fixture
def dev_server() -> Iterator[str]:
    port = free_port()
    command = cli()
    env = {**os.environ, "WORKFLOWS": EXAMPLES, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [command, "dev", "--port", str(port)],
        preexec_fn=ctrl_c_works,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    banner: list[str] = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        banner.append(line)
        if "listening on" in line or process.poll() is not None:
            break
    assert f"http://127.0.0.1:{port}" in "".join(banner), "".join(banner)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            code = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    output = process.stdout.read()
    assert code == 0, output  # Ctrl-C stops it cleanly
    assert "subscription/sub-1 -> complete" in output  # a line per instance state change


def test_dev_server_runs_a_workflow_with_a_sleep_and_an_event_over_http(dev_server: str) -> None:
    base = dev_server
    status, listing = call(base, "GET", "/workflows")
    assert status == 200
    assert "subscription" in json.dumps(listing)

    # create: a workflow that charges, sleeps 3 hours and waits for an approval event
    status, created = call(
        base, "POST", "/workflows/subscription/instances",
        {"instance_id": "sub-1", "params": {"customer_id": 1}},
    )  # fmt: skip
    assert status == 201 and created["id"] == "sub-1"
    status, _ = call(base, "POST", "/workflows/subscription/instances", {"instance_id": "sub-1"})
    assert status == 409

    # the sleep is skipped by the local runtime; then the instance waits for its event
    body = wait_for(base, "/workflows/subscription/instances/sub-1", {"waiting"})
    wait_for(base, "/workflows/subscription/instances/sub-1", {"waiting"})
    status, _ = call(
        base, "POST", "/workflows/subscription/instances/sub-1/events/approved", {"user": "ana"}
    )
    assert status == 202
    body = wait_for(base, "/workflows/subscription/instances/sub-1", {"complete", "errored"})
    assert body["status"] == "complete", body
    assert body["output"]["approved_by"] == "ana"
    assert [s["type"] for s in body["steps"]] == ["do", "sleep", "waitForEvent"]

    # pause and resume a second instance while it waits for its event
    call(
        base,
        "POST",
        "/workflows/subscription/instances",
        {"instance_id": "sub-2", "params": {"customer_id": 2}},
    )
    wait_for(base, "/workflows/subscription/instances/sub-2", {"waiting"})
    assert (
        call(base, "PATCH", "/workflows/subscription/instances/sub-2/status", {"status": "pause"})[
            0
        ]
        == 200
    )
    assert (
        wait_for(base, "/workflows/subscription/instances/sub-2", {"paused"})["status"] == "paused"
    )
    assert (
        call(base, "PATCH", "/workflows/subscription/instances/sub-2/status", {"status": "resume"})[
            0
        ]
        == 200
    )
    call(base, "POST", "/workflows/subscription/instances/sub-2/events/approved", {"user": "bo"})
    assert (
        wait_for(base, "/workflows/subscription/instances/sub-2", {"complete"})["output"][
            "approved_by"
        ]
        == "bo"
    )

    # a batch: two new ids and one that exists
    status, batch = call(
        base, "POST", "/workflows/flaky-fetch/instances/batch",
        [{"instance_id": "f-1"}, {"instance_id": "f-2"}],
    )  # fmt: skip
    assert status in (200, 201) and sorted(batch["created"]) == ["f-1", "f-2"]
    status, again = call(
        base, "POST", "/workflows/flaky-fetch/instances/batch",
        [{"instance_id": "f-2"}, {"instance_id": "f-3"}],
    )  # fmt: skip
    assert again["created"] == ["f-3"] and [e["id"] for e in again["errors"]] == ["f-2"]
    for instance_id in ("f-1", "f-2", "f-3"):
        done = wait_for(base, f"/workflows/flaky-fetch/instances/{instance_id}", {"complete"})
        assert done["steps"][0]["attempts"] == 3  # failed twice, retried with backoff

    # `lambda-workflows status` reads an instance from the running server
    shown = subprocess.run(
        [cli(), "status", "subscription", "sub-1", "--url", base],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "subscription/sub-1: complete" in shown.stdout
    assert "waitForEvent" in shown.stdout


def cli() -> str:
    command = shutil.which("lambda-workflows", path=str(Path(sys.executable).parent))
    assert command, "the `lambda-workflows` console script is not installed in the venv"
    return command


def test_workflows_run_follows_one_instance_to_the_end_and_shows_its_timeline() -> None:
    result = subprocess.run(
        [cli(), "run", "flaky-fetch", "--id", "cli-1"],
        cwd=ROOT, env={**os.environ, "WORKFLOWS": EXAMPLES}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "flaky-fetch/cli-1: complete" in result.stdout
    assert "attempts=3" in result.stdout
    bad = subprocess.run(
        [cli(), "run", "flaky-fetch", "--params", "{not json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "--params is not JSON" in bad.stderr


def test_workflows_run_with_nothing_registered_says_to_set_workflows() -> None:
    result = subprocess.run(
        [cli(), "run", "flaky-fetch"],
        cwd=ROOT, env={**os.environ, "WORKFLOWS": ""}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert "no workflows are registered" in result.stderr
    assert "WORKFLOWS=name=module:Class" in result.stderr
