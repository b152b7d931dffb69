"""One connection of a local server: the request line and headers read strictly, the body
delimited (:mod:`.framing`), the answer written, and every answer the server makes itself a
JSON :class:`~.refusal.Refusal`, never ``http.server``'s HTML page.

One daemon thread per connection (HTTP/1.1, keep-alive); a slow client holds only its own
thread, for at most :data:`IDLE_TIMEOUT` seconds. Every request, whatever its method, goes to
:meth:`JsonRequestHandler.serve`: a server answers a method it does not take itself (405 or
404), not ``http.server``'s HTML 501. Anything a client can send gets a 4xx:

- a malformed or empty request line, an ``HTTP/0.9`` request, a method that is not a token, a
  request line over 64 KiB: 400 or 414;
- an unusable ``Content-Length`` or ``Transfer-Encoding``, a body over the server's
  ``max_body`` (refused before a client that sent ``Expect: 100-continue`` sends it): 400 or 413;
- a client too slow to send its body: 408.

A refused request's connection is closed; what is left of its input is read and dropped for a
moment first, or the socket would be reset and the client lose the answer.
"""

from __future__ import annotations

import socket
import sys
import traceback
from collections.abc import Callable, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .framing import FramingError, declared_length, is_chunked, read_body, too_large
from .refusal import Refusal, error_answer

__all__ = ["HOP_BY_HOP", "IDLE_TIMEOUT", "LISTEN_BACKLOG", "JsonRequestHandler", "LocalHttpServer"]

LISTEN_BACKLOG = 128  # socketserver's default of 5 resets connections under a burst of clients
IDLE_TIMEOUT = 30.0  # seconds a connection may sit between or inside requests
# hop-by-hop headers: about one connection, never passed on
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"}
)
_MAX_REQUEST_LINE = 65536
_MAX_EMPTY_LINES = 8
_LINGER_SECONDS = 1.0
# RFC 9110 §5.6.2: a method is a token
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
# http.server's own error statuses, by the error code they answer with
_OWN_ERRORS = {
    400: "bad_request",
    408: "request_timeout",
    413: "body_too_large",
    414: "uri_too_long",
    431: "headers_too_large",
}
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}


class LocalHttpServer(ThreadingHTTPServer):
    """A threading HTTP server on the developer's machine: a deep listen backlog, daemon
    threads, and one line per request written to :meth:`note`.

    Args:
        address: the host and port to listen on (port 0: any free one).
        handler: the connection handler, a :class:`JsonRequestHandler`.
        out: where the lines go.
    """

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True  # Ctrl-C never waits for an idle keep-alive connection
    name = "local server"

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[JsonRequestHandler],
        out: Callable[[str], None],
    ) -> None:
        self.out = out
        super().__init__(address, handler)

    def note(self, line: str) -> None:
        """Show ``line`` to the developer."""
        self.out(line)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away is not news; anything else is shown, not swallowed."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        self.note(f"{self.name} error serving {client_address}:\n{traceback.format_exc()}")


class JsonRequestHandler(BaseHTTPRequestHandler):
    """One connection of a :class:`LocalHttpServer`; a server's handler implements
    :meth:`serve` and sets :attr:`max_body`."""

    server: LocalHttpServer
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT
    # the status line and headers, then the body, are two writes: with Nagle's algorithm the
    # body waits for the client's delayed ACK of the headers, 40 ms on every answer
    disable_nagle_algorithm = True
    max_body = 1024 * 1024
    """The largest request body read; a larger one is a 413."""
    linger_bytes = 8 * 1024 * 1024
    """The most of a refused request's input read and dropped before the connection closes."""

    def serve(self) -> None:
        """Answer the request just parsed (:meth:`send_answer`), or raise :class:`Refusal`."""
        raise NotImplementedError

    def handle_one_request(self) -> None:
        """Read one request and serve it, whatever its method."""
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
            try:
                self.serve()
            except Refusal as refusal:
                self.refuse(refusal)
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
            self.refuse(exc)
            return False
        if not chunked and length is not None and length > self.max_body:
            self.refuse(too_large(self.max_body))
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
        self.refuse(Refusal(status, _OWN_ERRORS.get(status, "bad_request"), text))

    def read_request_body(self) -> bytes:
        """The request's body, at most :attr:`max_body` bytes.

        Raises:
            Refusal: malformed framing, a body over the limit, or a client too slow to send it.
        """
        try:
            return read_body(self.headers, self.rfile, self.max_body)
        except TimeoutError:
            raise Refusal(
                408,
                "request_timeout",
                f"the body did not arrive within {self.timeout:g} s; send as many bytes "
                "as Content-Length declares, without pausing",
            ) from None

    def send_answer(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
        """Write an answer; its length and the connection's headers are this server's."""
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() != "content-length" and key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def refuse(self, refusal: Refusal) -> None:
        """Answer a request the server refuses itself, then close the connection.

        The rest of the request (a body over the limit, bytes after a bad ``Content-Length``)
        is read and dropped for a moment first: closing a socket with unread input resets it,
        and the client would lose the answer.
        """
        self.close_connection = True
        if not getattr(self, "request_version", "").startswith("HTTP/1"):
            self.request_version = "HTTP/1.0"  # unparsed: http.server would omit the status line
        self.send_answer(*error_answer(refusal.status, refusal.code, refusal.message))
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(_LINGER_SECONDS)
            left = self.linger_bytes
            while left > 0 and (chunk := self.rfile.read1(min(left, 65536))):
                left -= len(chunk)
        except OSError:  # the client is gone or stopped sending: done either way
            pass

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One line per request: method, path, status."""
        method = getattr(self, "command", None) or "-"
        path = str(getattr(self, "path", "") or self.requestline)[:200].translate(_CONTROL)
        self.server.note(f"{method} {path} -> {code}")

    def log_message(self, format: str, *args: Any) -> None:
        """Other ``http.server`` notes (a timed-out request), control characters escaped."""
        self.server.note((format % args).translate(_CONTROL))
