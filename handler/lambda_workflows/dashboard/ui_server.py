"""``lambda-workflows ui``: the dashboard on 127.0.0.1 for a deployed stack, its API calls
forwarded.

The pages are served here as ``lambda-workflows dev`` serves them. A request for one of the API's
routes (``/workflows`` and below, ``GET /openapi.json``, ``GET /docs``) is sent on to the stack at
the base URL given — signed with SigV4 from the user's AWS credentials when that URL is API
Gateway's (:meth:`lambda_workflows.remote.HttpApi.exchange`) — and its answer comes back unchanged:
status, headers and body, a 4xx included. The deployed API keeps its IAM auth and the browser
never holds an AWS key.

Since whoever reaches this server acts with those credentials, it is no open proxy:

- it listens on 127.0.0.1 only, and answers only requests addressed to a loopback name
  (``Host: 127.0.0.1:8788``): a web page cannot reach it through DNS rebinding;
- it forwards the API's routes only, to the one base URL it was given; any other path is a 404;
- a forwarded call must come from the dashboard's own origin: a request that another page
  sent (an ``Origin`` other than this server's, ``Sec-Fetch-Site: cross-site`` or
  ``same-site``) is a 403, so no other site — nor another local app — can act on instances
  through it; a client that sends neither header (curl) is served;
- only the request headers the API reads are forwarded (``Accept``, ``Content-Type``,
  ``Idempotency-Key``): never the browser's cookies or an ``Authorization`` of its own;
- request bodies are capped at :data:`MAX_BODY` (the API's own limit), read before anything
  is forwarded.

Every answer the server makes itself is JSON in the API's error shape, so the dashboard shows
its message as it shows the API's; a malformed request is refused as
:mod:`lambda_workflows.http_server` says.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from lambda_workflows.http_server import (
    HOP_BY_HOP,
    LOOPBACK,
    JsonRequestHandler,
    LocalHttpServer,
    Refusal,
    foreign_sender,
    serve_in_background,
)
from lambda_workflows.remote import ApiUnreachable, HttpApi, NoCredentials

from .routes import dashboard_answer

__all__ = ["DEFAULT_UI_PORT", "MAX_BODY", "UiServer", "make_ui_server", "serve_in_background"]

DEFAULT_UI_PORT = 8788
MAX_BODY = 1024 * 1024  # the API refuses a larger body anyway; nothing bigger is read
_API_PATH = re.compile(r"/workflows(/[^?#]*)?")
_API_DOCUMENTS = frozenset({"/openapi.json", "/docs"})  # GET only
_FORWARDED_HEADERS = ("Accept", "Content-Type", "Idempotency-Key")
_NOT_PASSED_BACK = HOP_BY_HOP | {"content-length", "set-cookie"}
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


class UiServer(LocalHttpServer):
    """The server of ``lambda-workflows ui``: the dashboard, and the API's routes forwarded.

    Args:
        port: the port on 127.0.0.1 (0: any free one).
        upstream: the deployed API (its base URL, and whether its requests are signed).
        workflows: the workflows whose source this machine has, for their diagrams.
        out: where the one line per request goes.
    """

    name = "ui server"

    def __init__(
        self,
        port: int,
        upstream: HttpApi,
        workflows: Mapping[str, type[Any]],
        out: Callable[[str], None],
    ) -> None:
        self.upstream = upstream
        self.workflows = workflows
        # The stage in the API's URL (``/prod``): its Swagger UI, served through here, calls
        # ``/prod/workflows/...`` on this origin, which is the same route.
        self.stage = urlsplit(upstream.url).path.rstrip("/")
        super().__init__(("127.0.0.1", port), UiRequestHandler, out)

    @property
    def url(self) -> str:
        """Where the dashboard is: ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.server_address[1]}"


class UiRequestHandler(JsonRequestHandler):
    """One connection: the dashboard's files, or an API call forwarded."""

    server: UiServer
    server_version = "lambda-workflows-ui"
    max_body = MAX_BODY
    linger_bytes = 8 * MAX_BODY

    def serve(self) -> None:
        """The dashboard's answer, else the API's route forwarded; a :class:`Refusal` for a
        request that is neither, or that another site's page sent."""
        if self.command not in _METHODS:
            raise Refusal(
                405,
                "not_served",
                f"{self.command[:20]!r} is not served here; the API takes {', '.join(_METHODS)}",
            )
        body = self.read_request_body()
        path, query = self._target()
        self._check_host()
        if page := dashboard_answer(self.command, path, self.server.workflows):
            self.send_answer(*page)
            return
        api_path = self._api_path(path)
        self._check_same_origin()
        self._forward(api_path + (f"?{query}" if query else ""), body)

    # --- what is served --------------------------------------------------------------------

    def _target(self) -> tuple[str, str]:
        """The request's path and query; an absolute URL (a proxy request) is refused."""
        if not self.path.startswith("/"):
            raise Refusal(
                400,
                "not_a_proxy",
                "lambda-workflows ui is not a proxy: ask for a path on this server, e.g. GET "
                "/workflows",
            )
        split = urlsplit(self.path)
        return split.path or "/", split.query

    def _check_host(self) -> None:
        hosts = self.headers.get_all("Host") or []
        if len(hosts) > 1:  # RFC 9112 §3.2: which one the client meant is unknown
            raise Refusal(400, "bad_request", "send one Host header, not several")
        host = hosts[0] if hosts else ""
        if urlsplit(f"//{host}").hostname not in LOOPBACK:
            raise Refusal(
                403,
                "forbidden_host",
                f"lambda-workflows ui answers requests for {self.server.url} only, not for Host "
                f"{host[:80]!r}: open the dashboard at that address",
            )

    def _api_path(self, path: str) -> str:
        """The API route ``path`` names (a stage prefix dropped); a 404 for anything else."""
        stage = self.server.stage
        if stage and (path == stage or path.startswith(f"{stage}/")):
            path = path[len(stage) :] or "/"
        segments = unquote(path).split("/")
        is_api = _API_PATH.fullmatch(path) is not None or (
            path in _API_DOCUMENTS and self.command in ("GET", "HEAD")
        )
        if not is_api or "." in segments or ".." in segments:
            shown = path if len(path) <= 80 else path[:80] + "…"
            raise Refusal(
                404,
                "not_forwarded",
                f"{self.command} {shown} is not one of the API's routes: lambda-workflows ui "
                "forwards "
                "only /workflows and the paths below it, GET /openapi.json and GET /docs; the "
                "dashboard is at /",
            )
        return path

    def _check_same_origin(self) -> None:
        """A forwarded call acts with the user's credentials: only this origin may send it."""
        sender = foreign_sender(self.headers, self.server.server_address[1])
        if sender is None:
            return
        raise Refusal(
            403,
            "cross_origin",
            f"{sender} may not call the API through lambda-workflows ui, which signs with your AWS "
            f"credentials; use the dashboard at {self.server.url}",
        )

    def _forward(self, target: str, body: bytes) -> None:
        headers = {name: value for name in _FORWARDED_HEADERS if (value := self.headers.get(name))}
        sent = body if body or self.command not in ("GET", "HEAD", "DELETE") else None
        try:
            answer = self.server.upstream.exchange(self.command, target, sent, headers)
        except NoCredentials as exc:
            raise Refusal(502, "no_credentials", str(exc)) from None
        except ApiUnreachable as exc:
            raise Refusal(502, "api_unreachable", f"{exc}; is the stack deployed there?") from None
        passed = {k: v for k, v in answer.headers if k.lower() not in _NOT_PASSED_BACK}
        self.send_answer(answer.status, passed, answer.body)


def make_ui_server(
    upstream: HttpApi,
    port: int = DEFAULT_UI_PORT,
    *,
    workflows: Mapping[str, type[Any]] | None = None,
    out: Callable[[str], None] = print,
) -> UiServer:
    """A :class:`UiServer` on 127.0.0.1 (not serving yet: call ``serve_forever``)."""
    return UiServer(port, upstream, workflows or {}, out)
