"""Which web page sent a request to a local server (``lambda-workflows dev``, ``lambda-workflows
ui``).

A server on 127.0.0.1 is reachable from any page the developer's browser has open: a page of
another site can send it a POST (a "simple" cross-site request needs no preflight). Browsers
say who sent a request — ``Origin`` on every POST, ``Sec-Fetch-Site`` on every request — so a
local server refuses a state-changing request that a page of another origin sent. Requests
without either header (curl, the CLI, the Python client, tests) are not from a page and pass.
"""

from __future__ import annotations

from email.message import Message
from urllib.parse import urlsplit

__all__ = ["LOOPBACK", "foreign_sender", "is_own_origin"]

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def is_own_origin(origin: str, port: int) -> bool:
    """True for ``http://<loopback name>:<port>``: a page this server served."""
    parts = urlsplit(origin)
    try:
        origin_port = parts.port
    except ValueError:
        return False
    return parts.scheme == "http" and parts.hostname in LOOPBACK and origin_port == port


def foreign_sender(headers: Message[str, str], port: int) -> str | None:
    """Who sent the request, when it is a page of another origin; None when it is not.

    ``headers`` are ``http.server``'s (names matched in any letter case).
    """
    origin = headers.get("Origin")
    fetch_site = (headers.get("Sec-Fetch-Site") or "").lower()
    if origin is not None and not is_own_origin(origin, port):
        return f"a page of {origin[:80]!r}"
    if fetch_site in ("cross-site", "same-site"):
        return f"a page of another site ({fetch_site})"
    return None
