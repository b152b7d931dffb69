"""`lambda-workflows dev` in-process on 127.0.0.1 and a free port, for the tests that drive it over
HTTP, and the small JSON client they call it with."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import Message
from typing import Any

from lambda_workflows.dev_server import make_server
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.local.server import DevServer
from lambda_workflows.remote import HttpApi


@dataclass
class RunningDev:
    """A running in-process `lambda-workflows dev`: its runtime and server."""

    runtime: LocalRuntime
    server: DevServer

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def serving(
    runtime: LocalRuntime, *, worker: bool = True, serve: bool = True
) -> Iterator[RunningDev]:
    """Serve ``runtime`` until the block ends, then stop the server and close the runtime.

    Args:
        worker: start the runtime's background worker (the runner and the scheduler
            emulator); without it the test runs the work itself (``run_until_idle``).
        serve: start accepting connections (a test of the listen backlog starts it itself).
    """
    server = make_server(runtime, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    try:
        if serve:
            thread.start()
        if worker:
            runtime.start()
        yield RunningDev(runtime, server)
    finally:
        if thread.is_alive():
            server.shutdown()
        server.server_close()
        runtime.close()


def exchange(
    base: str,
    method: str,
    path: str,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> tuple[int, Message, Any]:
    """One request to ``base + path``, a 4xx or 5xx answer included: its status, headers and
    JSON body (None when empty). ``body`` is sent as JSON unless it is bytes."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, json.loads(exc.read() or b"null")


def call(
    base: str,
    method: str,
    path: str,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> tuple[int, Any]:
    """:func:`exchange` without the headers: the status and the JSON body."""
    status, _, answer = exchange(base, method, path, body, headers, timeout)
    return status, answer


def until_status(
    api: HttpApi, workflow: str, instance_id: str, status: str, timeout: float = 60.0
) -> dict[str, Any]:
    """Poll the instance until its status is ``status``: its last status body (the test fails
    with that body if ``timeout`` seconds pass first)."""
    deadline = time.monotonic() + timeout
    while True:
        body = api.request("GET", f"/workflows/{workflow}/instances/{instance_id}").body
        if body["status"] == status or time.monotonic() > deadline:
            assert body["status"] == status, body
            return dict(body)
        time.sleep(0.05)


def ctrl_c_works() -> None:
    """``preexec_fn`` for a process a test stops with SIGINT (Ctrl-C): its default action.

    A process started in the background by a non-interactive shell (``make test &``, nohup)
    ignores SIGINT, and a child inherits that: its Ctrl-C would never arrive.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop(server: subprocess.Popen[str]) -> None:
    """Stop a ``lambda-workflows dev`` subprocess: SIGTERM, then a kill after 20 s."""
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=20)
