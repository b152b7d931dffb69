"""Time for the local runtime: real time that can jump forward.

It jumps in two ways. With skipping on, when nothing is runnable and the next wake-up is a
sleep or a retry delay, the runtime moves this clock to it instead of waiting (the screen says
so); event-wait timeouts are skipped that way only when asked (``skip_event_timeouts``),
since an event may still arrive. And a developer moves it by hand
(``POST /_dev/clock/advance``), to see what a 2-day timeout does without waiting 2 days.

The clock is every instance's, but a skip is for the sleeping one: the time skipped does not
count toward a wake-up of a kind that is not skipped (:class:`HeldWakeUps`). An instance that
waits up to 2 days for an event keeps its 2 days however many days of other instances' sleeps
are skipped meanwhile; time that really passes, or that a developer moves the clock by, counts.
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


class HeldWakeUps:
    """When wake-ups that are not skipped are due: their time plus the time skipped since
    they were set (first seen), so skipping one instance's sleep brings none of them forward.

    Its instance's journal still holds the deadline on the clock's terms: shown as passed while
    the wait goes on, and a replay of that instance for another reason (another event type, a
    resume) after it times the wait out then, as the clock says.
    """

    def __init__(self, clock: SkippingClock) -> None:
        self._clock = clock
        self._skipped_before: dict[tuple[str, float], float] = {}  # (name, at): skipped then

    def due_at(self, name: str, at: float) -> float:
        """When the wake-up ``name`` set for ``at`` is due on the clock."""
        before = self._skipped_before.setdefault((name, at), self._clock.skipped)
        return at + self._clock.skipped - before

    def keep_only(self, pending: set[tuple[str, float]]) -> None:
        """Forget the wake-ups that are gone (fired, or replaced)."""
        for key in set(self._skipped_before) - pending:
            del self._skipped_before[key]
