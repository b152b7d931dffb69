"""Durations: ``"5 seconds"``, ``"3 hours"``, ``timedelta``, or a plain number of seconds.

Cloudflare Workflows reads a plain number as milliseconds; this engine follows the Python
convention (``time.sleep``, ``asyncio.sleep``) and reads it as **seconds**.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

from .errors import InvalidStepError

Duration = str | int | float | timedelta

_UNITS: dict[str, float] = {
    "millisecond": 0.001,
    "second": 1.0,
    "minute": 60.0,
    "hour": 3600.0,
    "day": 86_400.0,
    "week": 7 * 86_400.0,
    "month": 30 * 86_400.0,
    "year": 365.25 * 86_400.0,
}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+?)s?\s*$")

MAX_SLEEP_SECONDS = 365 * 86_400.0


def parse_duration(value: Duration, *, what: str = "duration") -> float:
    """Return ``value`` as a number of seconds.

    Args:
        value: ``"N unit"`` / ``"N units"`` (millisecond, second, minute, hour, day, week,
            month = 30 days, year = 365.25 days), a ``timedelta``, or a number of seconds.
        what: what the duration is for, used in error messages.

    Raises:
        InvalidStepError: the value is not a duration, or it is negative.
    """
    if isinstance(value, bool):
        raise InvalidStepError(f"{what} must be a duration, not a bool: {value!r}")
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        match = _PATTERN.match(value)
        unit = match.group(2).lower() if match else ""
        if not match or unit not in _UNITS:
            raise InvalidStepError(
                f"{what} {value!r} is not a duration; write it as 'N unit' with unit one of "
                f"{', '.join(_UNITS)} (e.g. '10 seconds', '3 hours'), a timedelta, or a "
                "number of seconds"
            )
        seconds = float(match.group(1)) * _UNITS[unit]
    else:
        raise InvalidStepError(
            f"{what} must be a string like '10 seconds', a timedelta or a number of seconds, "
            f"not {type(value).__name__}"
        )
    if math.isnan(seconds) or math.isinf(seconds) or seconds < 0:
        raise InvalidStepError(f"{what} must be a finite, non-negative duration: {value!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """A short human form of ``seconds`` for messages and timelines (``"3 hours"``)."""
    for unit in ("day", "hour", "minute", "second"):
        size = _UNITS[unit]
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds:g} seconds"
