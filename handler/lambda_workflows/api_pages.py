"""Reading the HTTP API's paged answers whole: an instance with every step, its whole history.

The API bounds each answer (see :mod:`lambda_workflows.engine.instances.pages`): ``GET
…/instances/{id}`` carries the first page of the step timeline, with ``steps_total`` and
``steps_cursor`` when there are more rows, and ``GET …/history`` one page of the history, with
``cursor`` when there is a next one. These functions follow the cursors and put the pages end to
end, so a client gets what an unpaged answer would have been: the instance's answer with every row
(and no ``steps_total``/``steps_cursor``), or the history in the export format (and no ``cursor``).

They call ``fetch(segments, query)``: a GET of the path ``segments`` under the instance's own
(``()`` for the instance, ``("steps",)``, ``("history",)``) with ``query``, giving the decoded
answer, or raising the caller's errors. A page refused as ``stale_cursor`` (the instance was
restarted while it was read) is the caller's to read again from the start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from lambda_workflows.engine.instances.pages import MAX_PAGE

__all__ = ["Fetch", "whole_history", "whole_instance"]

Fetch = Callable[[tuple[str, ...], Mapping[str, Any]], Any]


def whole_instance(fetch: Fetch) -> dict[str, Any]:
    """The instance's answer with every row of its timeline."""
    answer = dict(fetch((), {}))
    cursor = answer.pop("steps_cursor", None)
    answer.pop("steps_total", None)
    steps = list(answer["steps"])
    for page in _pages(fetch, ("steps",), cursor):
        steps.extend(page["steps"])
    answer["steps"] = steps
    return answer


def whole_history(fetch: Fetch) -> dict[str, Any]:
    """The instance's whole history, in the export format."""
    first = dict(fetch(("history",), {"limit": MAX_PAGE}))
    entries, events = list(first["entries"]), list(first["events"])
    for page in _pages(fetch, ("history",), first.pop("cursor", None)):
        entries.extend(page["entries"])
        events.extend(page["events"])
    return {**first, "entries": entries, "events": events}


def _pages(fetch: Fetch, segments: tuple[str, ...], cursor: str | None) -> Iterator[Any]:
    """The pages after ``cursor``, each fetched when the one before it has been used."""
    seen: set[str] = set()
    while cursor is not None:
        if cursor in seen:  # each page moves on: a cursor seen before would never end
            raise ValueError(f"the API handed out the same cursor twice for {'/'.join(segments)}")
        seen.add(cursor)
        page = fetch(segments, {"cursor": cursor, "limit": MAX_PAGE})
        yield page
        cursor = page.get("cursor")
