"""`lambda-workflows dev`: the local runtime behind an HTTP server on 127.0.0.1 (default port 8787).

One daemon thread per connection (HTTP/1.1, keep-alive) reads the request, delimits its body
(``Content-Length`` or chunked, see :mod:`.framing`) and hands it to
:meth:`LocalRuntime.handle_http`, which calls the real ApiFunction handler one request at a time
(it says why). Reading and writing sockets stays concurrent; a slow client holds only its own
thread, for at most :data:`IDLE_TIMEOUT` seconds.

Every answer the server makes itself — a malformed request line, an unusable
``Content-Length``, a body over :data:`MAX_BODY`, a client too slow to send its body — is a
4xx in the API's shape, ``{"error": {"code", "message"}}``, never an HTML page: anything a client
can send gets a 4xx. A method the API does not route (``FOO``, ``TRACE``) is the API's to answer
(405 naming the allowed methods, or 404), not ``http.server``'s HTML 501.

A GET or HEAD of ``/``, ``/dashboard/<file>`` or ``/_dashboard/...`` is the dashboard's
(:mod:`lambda_workflows.dashboard`): its page and files, a workflow's diagram, or a 404 in the API's
shape; every other request goes to the API.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from lambda_workflows.dashboard import dashboard_answer

from .framing import FramingError, declared_length, is_chunked, read_body, too_large
from .origin import foreign_sender
from .runtime import LocalRuntime

__all__ = ["IDLE_TIMEOUT", "LISTEN_BACKLOG", "MAX_BODY", "DevServer", "make_server"]

MAX_BODY = 6 * 1024 * 1024  # API Gateway's payload limit; the API rejects > 1 MiB itself
LISTEN_BACKLOG = 128  # socketserver's default of 5 resets connections under a burst of clients
IDLE_TIMEOUT = 30.0  # seconds a connection may sit between or inside requests
_MAX_REQUEST_LINE = 65536
_MAX_EMPTY_LINES = 8
_LINGER_BYTES = 64 * 1024 * 1024  # read and dropped after an early answer, so the client sees it
_LINGER_SECONDS = 1.0
# RFC 9110 §5.6.2: a method is a token
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
# hop-by-hop headers: about this connection, not the request API Gateway would pass on
_HOP_BY_HOP = {"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"}
# http.server's own error statuses, by the error code they answer with
_OWN_ERRORS = {
    400: "bad_request",
    408: "request_timeout",
    413: "body_too_large",
    414: "uri_too_long",
    431: "headers_too_large",
}
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})  # change nothing: any page may send them
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}


class DevServer(ThreadingHTTPServer):
    """The threading HTTP server of ``lambda-workflows dev``: a deep listen backlog, daemon
    threads."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True  # Ctrl-C never waits for an idle keep-alive connection

    def __init__(self, address: tuple[str, int], runtime: LocalRuntime) -> None:
        self.runtime = runtime
        super().__init__(address, DevRequestHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away is not news; anything else is shown, not swallowed."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        self.runtime.out(f"dev server error serving {client_address}:\n{traceback.format_exc()}")


class DevRequestHandler(BaseHTTPRequestHandler):
    """One connection: requests in, the API's answers out."""

    server: DevServer
    server_version = "lambda-workflows-dev"
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT
    # the status line and headers, then the body, are two writes: with Nagle's algorithm the
    # body waits for the client's delayed ACK of the headers, 40 ms on every answer
    disable_nagle_algorithm = True

    def handle_one_request(self) -> None:
        """Read one request and serve it, whatever its method (the API answers 405 or 404)."""
        try:
            self.raw_requestline = self.rfile.readline(_MAX_REQUEST_LINE + 1)
            for _ in range(_MAX_EMPTY_LINES):  # RFC 9112 §2.2: ignore CRLFs before a request
                if self.raw_requestline not in (b"\r\n", b"\n"):
                    break
                self.raw_requestline = self.rfile.readline(_MAX_REQUEST_LINE + 1)
            if len(self.raw_requestline) > _MAX_REQUEST_LINE:
                self.requestline, self.request_version, self.command = "", "HTTP/1.1", ""
                self.send_error(414, "the request line is over 64 KiB")
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.raw_requestline.strip():  # http.server would close without a word
                self.requestline, self.request_version, self.command = "", "HTTP/1.1", ""
                self.send_error(400, "the request line is empty")
                return
            if not self.parse_request():
                return
            self._serve()
            self.wfile.flush()
        except TimeoutError:  # an idle keep-alive connection: let it go
            self.close_connection = True

    def parse_request(self) -> bool:
        """``http.server``'s parsing, minus HTTP/0.9 and methods that are not tokens."""
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9":  # `GET /path` without a version
            self.send_error(400, "HTTP/0.9 requests are not supported")
            return False
        if not set(self.command) <= _TOKEN:
            self.send_error(400, f"the method {self.command[:20]!r} is not an HTTP method token")
            return False
        return True

    def handle_expect_100(self) -> bool:
        """Refuse a body before the client sends it when its framing is already wrong."""
        try:
            length = declared_length(self.headers)
            chunked = is_chunked(self.headers)
        except FramingError as exc:
            self._reject(exc)
            return False
        if not chunked and length is not None and length > MAX_BODY:
            self._reject(too_large(MAX_BODY))
            return False
        return super().handle_expect_100()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """``http.server``'s own errors, as JSON 4xx answers.

        Its only 5xx are a 501 for a method without a ``do_`` method (not raised here: every
        method is served) and a 505 for an ``HTTP/2.0`` request line, which is a 400 here: a
        client can send it, so it is the client's to fix.
        """
        status = 400 if code >= 500 else int(code)
        text = message or HTTPStatus(status).phrase
        if code == HTTPStatus.HTTP_VERSION_NOT_SUPPORTED:
            text = f"{message}: this server speaks HTTP/1.1 and HTTP/1.0"
        elif status == 400:
            text = f"{text}; send a request line 'METHOD /path HTTP/1.1', then header lines"
        elif explain:
            text = f"{text}: {explain}"
        self._reject(FramingError(status, _OWN_ERRORS.get(status, "bad_request"), text))

    # --- serving --------------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            body = read_body(self.headers, self.rfile, MAX_BODY)
        except FramingError as exc:
            self._reject(exc)
            return
        except TimeoutError:
            self._reject(
                FramingError(
                    408,
                    "request_timeout",
                    f"the body did not arrive within {self.timeout:g} s; send as many bytes "
                    "as Content-Length declares, without pausing",
                )
            )
            return
        split = urlsplit(self.path)
        path = split.path or "/"
        if page := dashboard_answer(self.command, path, self.server.runtime.workflows):
            self._send(*page)
            return
        if self.command not in _SAFE_METHODS and (
            sender := foreign_sender(self.headers, self.server.server_address[1])
        ):
            self._send(*_cross_origin(sender))
            return
        query = parse_qsl(split.query, keep_blank_values=True)
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP]
        try:
            status, out_headers, data = self.server.runtime.handle_http(
                self.command, split.path or "/", query, headers, body
            )
        except Exception:  # never leave the client hanging; show the developer why
            self.server.runtime.out(f"dev server error:\n{traceback.format_exc()}")
            status, out_headers = 500, {"Content-Type": "application/json"}
            error = {"code": "internal_error", "message": "local server error; see its output"}
            data = json.dumps({"error": error}).encode()
        self._send(status, out_headers, data)

    def _send(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() not in ("content-length", *_HOP_BY_HOP):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _reject(self, error: FramingError) -> None:
        """Answer a request the server refuses itself, then close the connection.

        The rest of the request (a body over the limit, bytes after a bad ``Content-Length``)
        is read and dropped for a moment first: closing a socket with unread input resets it,
        and the client would lose the answer.
        """
        self.close_connection = True
        if self.request_version == "HTTP/0.9":  # unparsed: http.server would omit the status line
            self.request_version = "HTTP/1.0"
        body = {"error": {"code": error.code, "message": error.message}}
        self._send(error.status, {"Content-Type": "application/json"}, json.dumps(body).encode())
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(_LINGER_SECONDS)
            left = _LINGER_BYTES
            while left > 0 and (chunk := self.rfile.read1(min(left, 65536))):
                left -= len(chunk)
        except OSError:  # the client is gone or stopped sending: done either way
            pass

    # --- the status lines -----------------------------------------------------------------

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One line per request: method, path, status."""
        method = getattr(self, "command", None) or "-"
        path = str(getattr(self, "path", "") or self.requestline)[:200].translate(_CONTROL)
        self.server.runtime.out(f"{method} {path} -> {code}")

    def log_message(self, format: str, *args: Any) -> None:
        """Other ``http.server`` notes (a timed-out request), control characters escaped."""
        self.server.runtime.out((format % args).translate(_CONTROL))


def make_server(runtime: LocalRuntime, host: str, port: int) -> DevServer:
    """An HTTP server that hands every request to ``runtime.handle_http``; the approval links
    its workflows mint start with its address."""
    server = DevServer((host, port), runtime)
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else host
    runtime.serve_links_at(f"http://{shown}:{server.server_address[1]}")
    return server


def serve_in_background(server: ThreadingHTTPServer) -> threading.Thread:
    """Serve on a daemon thread (the demo and tests)."""
    thread = threading.Thread(target=server.serve_forever, name="local-http", daemon=True)
    thread.start()
    return thread


def _cross_origin(sender: str) -> tuple[int, dict[str, str], bytes]:
    """403 for a state-changing request a page of another site sent (see :mod:`.origin`)."""
    error = {
        "code": "cross_origin",
        "message": (
            f"{sender} may not change instances on lambda-workflows dev; use the dashboard it "
            "serves "
            "at /, the CLI or the API from a script"
        ),
    }
    return 403, {"Content-Type": "application/json"}, json.dumps({"error": error}).encode()
