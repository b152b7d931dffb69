"""Routes only ``lambda-workflows dev`` serves, under ``/_dev``: its clock, and putting EventBridge
events (:mod:`.dev_events`).

A local runtime's clock can move; a deployed one's cannot, so ApiFunction has no such routes
(on Lambda ``/_dev/clock`` is a 404 like any unknown path).

- ``GET /_dev/clock`` → 200 ``{"now": "2025-01-03T10:00:00.000Z"}``
- ``POST /_dev/clock/advance`` with ``{"by": "2 days"}`` (any duration ``step.sleep`` takes, or a
  number of seconds) → 200 ``{"now": ...}``, the new time; the sleeps, retry delays and
  event-wait timeouts that came due are fired at once, and run as soon as the worker gets to
  them.

A body that is not ``{"by": duration}`` is a 400 ``invalid_input`` saying what to send, and the
clock does not move.

- ``POST /_dev/events`` with one ``aws events put-events`` entry (``{"Source", "DetailType",
  "Detail", "Id"?}``) → what TriggerFunction did with it: created an instance, or delivered a
  ``Workflow Event`` to one (see :mod:`.dev_events`).

Errors have the API's shape, ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from lambda_workflows.engine.clock import iso
from lambda_workflows.engine.durations import parse_duration
from lambda_workflows.engine.errors import InvalidStepError

__all__ = ["DEV_PREFIX", "MAX_ADVANCE_SECONDS", "DevRoutes", "is_dev_path"]

DEV_PREFIX = "/_dev"
# far beyond any wake-up the engine schedules (sleeps and timeouts are at most 365 days); it
# only keeps an absurd number from overflowing the clock's dates
MAX_ADVANCE_SECONDS = 3650 * 86_400.0
_EXAMPLE = '{"by": "2 days"} (a duration like "90 minutes", or a number of seconds)'

Answer = tuple[int, dict[str, str], bytes]


class BadClockRequest(ValueError):
    """A request to move the clock that cannot be honoured; the message says what to send."""


def is_dev_path(path: str) -> bool:
    """True for a path under ``/_dev``, which ``lambda-workflows dev`` answers itself."""
    return path == DEV_PREFIX or path.startswith(DEV_PREFIX + "/")


def advance_by(body: bytes) -> float:
    """The seconds a ``POST /_dev/clock/advance`` body asks to move the clock by.

    Raises:
        BadClockRequest: the body is not a JSON object ``{"by": duration}`` with a duration of
            at most :data:`MAX_ADVANCE_SECONDS`.
    """
    if not body.strip():
        raise BadClockRequest(f"the body is empty; send {_EXAMPLE}")
    try:
        request = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise BadClockRequest(f"the body is not JSON; send {_EXAMPLE}") from None
    if not isinstance(request, dict) or "by" not in request:
        raise BadClockRequest(f"the body has no 'by'; send {_EXAMPLE}")
    unknown = sorted(set(request) - {"by"})
    if unknown:
        raise BadClockRequest(f"unknown key(s) {', '.join(map(repr, unknown))}; send {_EXAMPLE}")
    try:
        seconds = parse_duration(request["by"], what="'by'")
    except InvalidStepError as exc:
        raise BadClockRequest(str(exc)) from None
    except OverflowError:  # an integer too large to be a float
        seconds = float("inf")
    if seconds > MAX_ADVANCE_SECONDS:
        raise BadClockRequest(
            f"'by' is {request['by']!r}: the clock moves at most 3650 days at a time"
        )
    return seconds


class DevRoutes:
    """The ``/_dev`` routes over a clock that can be read and moved.

    Args:
        now: the dev clock's time (epoch seconds).
        advance: moves the clock forward by a number of seconds, fires what came due, and
            returns the new time.
    """

    def __init__(self, now: Callable[[], float], advance: Callable[[float], float]) -> None:
        self._routes: dict[str, dict[str, Callable[[bytes], Answer]]] = {
            f"{DEV_PREFIX}/clock": {"GET": self._now},
            f"{DEV_PREFIX}/clock/advance": {"POST": self._advance},
        }
        self._clock_now = now
        self._clock_advance = advance

    def add(self, routes: Mapping[str, Mapping[str, Callable[[bytes], Answer]]]) -> None:
        """Serve more routes: path → method → the function answering a request's body."""
        for path, methods in routes.items():
            self._routes.setdefault(path, {}).update(methods)

    def answer(self, method: str, path: str, body: bytes) -> Answer:
        """The status, headers and body answering one request to a ``/_dev`` path."""
        methods = self._routes.get(path)
        if methods is None:
            served = ", ".join(f"{m} {p}" for p, ms in self._routes.items() for m in ms)
            return _error(
                404, "not_found", f"no route {method} {path}; lambda-workflows dev serves {served}"
            )
        route = methods.get(method.upper())
        if route is None:
            allowed = ", ".join(methods)
            return _error(
                405,
                "method_not_allowed",
                f"{method} is not allowed on {path}; use {allowed}",
                {"Allow": allowed},
            )
        return route(body)

    def _now(self, body: bytes) -> Answer:
        return _json(200, {"now": iso(self._clock_now())})

    def _advance(self, body: bytes) -> Answer:
        try:
            seconds = advance_by(body)
        except BadClockRequest as exc:
            return _error(400, "invalid_input", str(exc))
        return _json(200, {"now": iso(self._clock_advance(seconds))})


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Answer:
    return (
        status,
        {"Content-Type": "application/json", **(headers or {})},
        json.dumps(body).encode(),
    )


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Answer:
    return _json(status, {"error": {"code": code, "message": message}}, headers)
