"""The one source of time. Nothing else in the engine reads the system clock.

Times are float seconds since the epoch (UTC). :class:`SystemClock` is real time; the test
kit's ``VirtualClock`` and the local runtime's compressed clock implement the same protocol.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Where the engine reads the time and waits."""

    def time(self) -> float:
        """Seconds since the epoch."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (virtual clocks jump instead of waiting)."""
        ...


class SystemClock:
    """Real time."""

    def time(self) -> float:
        return time.time()  # the one place the engine reads the system clock

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


def to_datetime(epoch: float) -> datetime:
    """An aware UTC datetime for an epoch time."""
    return datetime.fromtimestamp(epoch, tz=UTC)


def iso(epoch: float | None) -> str | None:
    """ISO 8601 (UTC, millisecond precision) for an epoch time, or None."""
    if epoch is None:
        return None
    return to_datetime(epoch).isoformat(timespec="milliseconds").replace("+00:00", "Z")
