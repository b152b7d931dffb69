"""The dashboard's files over HTTP: ``/`` is its page, ``/dashboard/<file>`` its scripts, style
sheet and icon.

Only the files shipped in this package's ``static/`` folder are served, looked up by name in an
index built once. A request path is never joined to a folder, so ``..``, ``%2e%2e``, a backslash
or an absolute path find no entry and get a 404 in the API's error shape.

The page declares a Content-Security-Policy that allows nothing but this origin: no inline
script, no CDN, no third-party request — what a page that must work offline may rely on.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable

from lambda_workflows.http_server import Answer

__all__ = ["ASSET_PREFIX", "Answer", "file_answer", "json_answer"]

ASSET_PREFIX = "/dashboard/"
_PAGE = "index.html"
_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",  # ES modules load only with a JavaScript type
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_COMMON = {
    "Cache-Control": "no-cache",  # a new version of the package shows on the next load
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def file_answer(method: str, path: str) -> Answer | None:
    """The answer to a request for one of the dashboard's files, or None when it is not one.

    Args:
        method: the request method; only GET and HEAD are the dashboard's.
        path: the request path, still percent-encoded, without the query.

    Returns:
        The page for ``/``, a file for ``/dashboard/<name>``, a 404 (JSON, the API's error
        shape) for any other name under ``/dashboard/``; None for every other request.
    """
    if method not in ("GET", "HEAD"):
        return None
    if path == "/":
        return _file(_PAGE)
    if not path.startswith(ASSET_PREFIX):
        return None
    name = path[len(ASSET_PREFIX) :]
    if name == _PAGE or name not in _index():  # the page is served at / only
        return _not_found(path)
    return _file(name)


def _file(name: str) -> Answer:
    data = _index()[name].read_bytes()
    suffix = name[name.rindex(".") :]
    headers = {"Content-Type": _CONTENT_TYPES[suffix], **_COMMON}
    if name == _PAGE:
        headers["Content-Security-Policy"] = _POLICY
    return 200, headers, data


def _not_found(path: str) -> Answer:
    shown = path if len(path) <= 120 else path[:120] + "…"
    message = f"no dashboard file {shown}; open the dashboard at / (the API is under /workflows)"
    return json_answer(404, {"error": {"code": "not_found", "message": message}})


def json_answer(status: int, body: object) -> Answer:
    """An answer of the dashboard's own in JSON (an error in the API's shape, a diagram)."""
    return status, {"Content-Type": "application/json", **_COMMON}, json.dumps(body).encode()


@cache
def _index() -> dict[str, Traversable]:
    """Every servable file of ``static/`` by its name (a flat folder: names have no ``/``)."""
    folder = files("lambda_workflows.dashboard").joinpath("static")
    return {
        entry.name: entry
        for entry in folder.iterdir()
        if entry.is_file() and entry.name[entry.name.rfind(".") :] in _CONTENT_TYPES
    }
