"""`lambda-workflows dev`: the local runtime behind an HTTP server on 127.0.0.1 (default port 8787).

A :class:`~lambda_workflows.http_server.LocalHttpServer`: each connection is read strictly and
every answer the server makes itself — a malformed request line, an unusable
``Content-Length``, a body over :data:`MAX_BODY`, a client too slow to send its body — is a
4xx in the API's shape, ``{"error": {"code", "message"}}`` (:mod:`lambda_workflows.http_server`
says which). A well-formed request goes to :meth:`LocalRuntime.handle_http`, which calls the
real ApiFunction handler one request at a time (it says why); a method the API does not route
(``FOO``, ``TRACE``) is the API's to answer (405 naming the allowed methods, or 404).

Before the API, the server asks its ``pages`` (the dashboard, when
:mod:`lambda_workflows.dev_server` puts it there) whether the request is theirs.
A state-changing request that a page of another site sent is a 403
(:mod:`lambda_workflows.http_server.origin`).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from urllib.parse import parse_qsl, urlsplit

from lambda_workflows.http_server import (
    HOP_BY_HOP,
    IDLE_TIMEOUT,
    Answer,
    JsonRequestHandler,
    LocalHttpServer,
    error_answer,
    foreign_sender,
)

from .runtime import LocalRuntime

__all__ = ["IDLE_TIMEOUT", "MAX_BODY", "DevRequestHandler", "DevServer", "Pages", "make_server"]

MAX_BODY = 6 * 1024 * 1024  # API Gateway's payload limit; the API rejects > 1 MiB itself
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})  # change nothing: any page may send them

Pages = Callable[[str, str], Answer | None]
"""The answer to a request (method, path without the query) for a page served beside the API,
or None when the request is the API's."""


class DevServer(LocalHttpServer):
    """The HTTP server of ``lambda-workflows dev``.

    Args:
        address: the host and port to listen on (port 0: any free one).
        runtime: the local runtime whose API answers.
        pages: the pages served beside the API (none when not given).
    """

    name = "dev server"

    def __init__(
        self, address: tuple[str, int], runtime: LocalRuntime, pages: Pages | None = None
    ) -> None:
        self.runtime = runtime
        self.pages = pages
        super().__init__(address, DevRequestHandler, runtime.out)


class DevRequestHandler(JsonRequestHandler):
    """One connection: requests in, the pages' or the API's answers out."""

    server: DevServer
    server_version = "lambda-workflows-dev"
    max_body = MAX_BODY
    linger_bytes = 64 * 1024 * 1024

    def serve(self) -> None:
        """The pages' answer, else a 403 for another site's page, else the API's."""
        body = self.read_request_body()
        split = urlsplit(self.path)
        path = split.path or "/"
        if self.server.pages and (page := self.server.pages(self.command, path)):
            self.send_answer(*page)
            return
        if self.command not in _SAFE_METHODS and (
            sender := foreign_sender(self.headers, self.server.server_address[1])
        ):
            self.send_answer(*_cross_origin(sender))
            return
        query = parse_qsl(split.query, keep_blank_values=True)
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]
        try:
            answer = self.server.runtime.handle_http(self.command, path, query, headers, body)
        except Exception:  # never leave the client hanging; show the developer why
            self.server.note(f"dev server error:\n{traceback.format_exc()}")
            answer = error_answer(500, "internal_error", "local server error; see its output")
        self.send_answer(*answer)


def make_server(
    runtime: LocalRuntime, host: str, port: int, pages: Pages | None = None
) -> DevServer:
    """An HTTP server that hands every request not for ``pages`` to ``runtime.handle_http``;
    the approval links its workflows mint start with its address."""
    server = DevServer((host, port), runtime, pages)
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else host
    runtime.serve_links_at(f"http://{shown}:{server.server_address[1]}")
    return server


def _cross_origin(sender: str) -> Answer:
    """403 for a state-changing request a page of another site sent."""
    return error_answer(
        403,
        "cross_origin",
        f"{sender} may not change instances on lambda-workflows dev; use the dashboard it "
        "serves at /, the CLI or the API from a script",
    )
