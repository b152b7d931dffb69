"""`lambda-workflows dev` in-process on a free port, and an HTTP/1.1 client that sends bytes as
given.

``urllib``/``http.client`` refuse to send what these tests need (a request line with a quote or
a control character, ``Content-Length: abc``, a hand-made chunked body), so the client here
writes raw bytes and reads the answer by its ``Content-Length`` (the dev server always sends
one).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")

from lambda_workflows.examples import EXAMPLES
from lambda_workflows.examples._fakes import example_env
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.registry import load_workflows

from .devserver import RunningDev, serving

Headers = Sequence[tuple[str, str]]


@dataclass
class Reply:
    """An HTTP answer, as read off the wire."""

    status: int
    headers: dict[str, str]
    body: bytes
    closed: bool  # the server closed the connection after it

    def json(self) -> Any:
        """The body decoded as JSON (raises if it is not)."""
        return json.loads(self.body)

    @property
    def error(self) -> dict[str, Any]:
        """``error`` of an error answer; fails the test if the shape is not ``{error:{...}}``."""
        body = self.json()
        assert isinstance(body, dict) and set(body) == {"error"}, body
        error = body["error"]
        assert isinstance(error, dict), body
        assert isinstance(error.get("code"), str) and error["code"], body
        assert isinstance(error.get("message"), str) and error["message"], body
        return error


@dataclass
class DevHttp(RunningDev):
    """A running in-process `lambda-workflows dev` with the bundled examples, and what it
    printed."""

    lines: list[str]

    def connect(self, timeout: float = 30.0) -> Connection:
        return Connection(self.port, timeout)


@contextmanager
def dev_http(*, worker: bool = True, serve: bool = True) -> Iterator[DevHttp]:
    """`lambda-workflows dev` with the bundled examples on 127.0.0.1 and a free port.

    Args:
        worker: start the background worker (the runner and the scheduler emulator).
        serve: start accepting connections (a test of the listen backlog starts it itself).
    """
    lines: list[str] = []
    runtime = LocalRuntime(load_workflows(EXAMPLES), env_values=example_env(), out=lines.append)
    with serving(runtime, worker=worker, serve=serve) as running:
        yield DevHttp(running.runtime, running.server, lines)


def request_bytes(
    method: str,
    target: str,
    headers: Headers = (),
    body: bytes | None = None,
    *,
    chunks: Sequence[bytes] | None = None,
) -> bytes:
    """A request as bytes: ``Content-Length`` added for ``body`` unless ``headers`` frame it,
    or ``Transfer-Encoding: chunked`` with ``chunks``."""
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in headers]
    named = {k.lower() for k, _ in headers}
    payload = body or b""
    if chunks is not None:
        if "transfer-encoding" not in named:
            lines.append("Transfer-Encoding: chunked")
        payload = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks if c) + b"0\r\n\r\n"
    elif body is not None and "content-length" not in named:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


class Connection:
    """One client connection (reopened after the server closes it)."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        self.port = port
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._buffer = b""

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock, self._buffer = None, b""

    def send(self, data: bytes, method: str = "GET") -> Reply:
        """Send one request's bytes and read its answer (no body is read for HEAD)."""
        if self._sock is None:
            self._sock = socket.create_connection(("127.0.0.1", self.port), self.timeout)
        # the server may answer early and close: its answer is still there to be read
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._sock.sendall(data)
        reply = self._read(method)
        if reply.closed:
            self.close()
        return reply

    def request(
        self,
        method: str,
        target: str,
        body: Any = None,
        headers: Headers = (("Content-Type", "application/json"),),
    ) -> Reply:
        """A well-framed request; ``body`` is sent as JSON unless it is bytes."""
        raw = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        return self.send(request_bytes(method, target, headers, raw), method)

    def _read(self, method: str) -> Reply:
        head = self._until(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        length = 0 if method == "HEAD" else int(headers.get("content-length", "0"))
        while len(self._buffer) < length:
            self._fill()
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        connection = headers.get("connection", "").lower()
        closed = connection == "close" or (
            lines[0].startswith("HTTP/1.0") and connection != "keep-alive"
        )
        return Reply(status, headers, body, closed)

    def _until(self, marker: bytes) -> bytes:
        while marker not in self._buffer:
            self._fill()
        head, _, self._buffer = self._buffer.partition(marker)
        return head

    def _fill(self) -> None:
        assert self._sock is not None
        data = self._sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection before answering")
        self._buffer += data
