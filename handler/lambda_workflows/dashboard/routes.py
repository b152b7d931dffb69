"""Which request is the dashboard's: its files (:mod:`.files`) and its diagrams
(:mod:`.diagram_route`). Everything else is the API's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .diagram_route import DIAGRAM_PREFIX, diagram_answer
from .files import Answer, file_answer

__all__ = ["dashboard_answer"]


def dashboard_answer(
    method: str, path: str, workflows: Mapping[str, type[Any]] | None = None
) -> Answer | None:
    """The answer to a request for the dashboard, or None when the request is the API's.

    Args:
        method: the request method; only GET and HEAD are the dashboard's.
        path: the request path, still percent-encoded, without the query.
        workflows: the workflows registered where this runs, by name (their diagrams).

    Returns:
        The page for ``/``, a file for ``/dashboard/<name>``, a diagram for
        ``/_dashboard/workflows/<name>/diagram``, a 404 (JSON, the API's error shape) for any
        other path under those prefixes; None for every other request.
    """
    if method in ("GET", "HEAD") and path.startswith(DIAGRAM_PREFIX):
        return diagram_answer(path, workflows or {})
    return file_answer(method, path)
