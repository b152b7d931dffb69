"""Time for the local runtime: real time that can jump forward.

It jumps in two ways. With skipping on, when nothing is runnable and the next wake-up is a
sleep or a retry delay, the runtime moves this clock to it instead of waiting (the screen says
so); event-wait timeouts are skipped that way only when asked (``skip_event_timeouts``),
since an event may still arrive. And a developer moves it by hand
(``POST /_dev/clock/advance``), to see what a 2-day timeout does without waiting 2 days.
"""

from __future__ import annotations

import asyncio
import threading

from lambda_workflows.engine.clock import SystemClock


class SkippingClock:
    """Real time plus an offset that only grows."""

    def __init__(self) -> None:
        self._real = SystemClock()
        self._offset = 0.0
        self._lock = threading.Lock()
        self.skipped = 0.0

    def time(self) -> float:
        return self._real.time() + self._offset

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def skip_to(self, when: float) -> float:
        """Jump forward to ``when``; return how many seconds were skipped."""
        with self._lock:
            gap = max(0.0, when - self.time())
            self._offset += gap
            self.skipped += gap
            return gap

    def advance(self, seconds: float) -> float:
        """Move forward by ``seconds`` (not negative: time never goes back); return the new time."""
        if not seconds >= 0:
            raise ValueError(f"the clock only moves forward, not by {seconds!r} seconds")
        with self._lock:
            self._offset += seconds
            return self.time()
