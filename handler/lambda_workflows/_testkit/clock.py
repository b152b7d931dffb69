"""The test kit's virtual clock: time that moves only when the test moves it."""

from __future__ import annotations

import asyncio
from datetime import datetime

from lambda_workflows.engine.clock import to_datetime
from lambda_workflows.engine.durations import Duration, parse_duration

DEFAULT_START = datetime.fromisoformat("2025-01-01T00:00:00+00:00")


class VirtualClock:
    """Time that moves only when the test (or ``run_until_idle``) moves it."""

    def __init__(self, start: datetime | float | None = None) -> None:
        if start is None:
            start = DEFAULT_START
        self._now = start.timestamp() if isinstance(start, datetime) else float(start)

    def time(self) -> float:
        """Seconds since the epoch, virtual."""
        return self._now

    def now(self) -> datetime:
        """The virtual time as an aware UTC datetime."""
        return to_datetime(self._now)

    def advance(self, duration: Duration) -> None:
        """Move time forward by ``duration`` (``"2 hours"``, a timedelta, or seconds)."""
        self._now += parse_duration(duration, what="clock advance")

    def set(self, when: datetime | float) -> None:
        """Move time to ``when`` (never backwards)."""
        target = when.timestamp() if isinstance(when, datetime) else float(when)
        self._now = max(self._now, target)

    async def sleep(self, seconds: float) -> None:
        """Jump forward instead of waiting."""
        self._now += max(0.0, seconds)
        await asyncio.sleep(0)
