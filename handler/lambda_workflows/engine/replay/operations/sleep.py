"""``step.sleep`` / ``step.sleep_until``: a durable timer.

The first pass to reach the sleep records a ``SLEEP`` entry with its wake-up time; every pass
until then suspends (the runner schedules the wake-up), and the first one after it goes on.
Time spent paused does not count: the wake-up is pushed back by each pause since the sleep
began.
"""

from __future__ import annotations

from lambda_workflows.engine.durations import MAX_SLEEP_SECONDS
from lambda_workflows.engine.errors import InvalidStepError, SuspendReason
from lambda_workflows.engine.model import EntryKind
from lambda_workflows.engine.replay.journal import shifted

from .base import Pass

__all__ = ["run"]


async def run(replay: Pass, name: str, seconds: float | None, until: float | None) -> None:
    """The body of ``step.sleep`` (``seconds``) and ``step.sleep_until`` (``until``)."""
    call = replay.enter(name, "sleep")
    entry = replay.journal.entries.get(call.key)
    if entry is None:
        replay.before_new_step(call.key, needs_lease=False)
        now = replay.now()
        wake_at = now + seconds if seconds is not None else float(until or now)
        if wake_at - now > MAX_SLEEP_SECONDS:
            raise InvalidStepError(
                f"step.sleep_until({name!r}) is more than 365 days ahead; chain several "
                "sleeps if you really need longer"
            )
        entry = await replay.write(
            call.entry(EntryKind.SLEEP, now, started_at=now, wake_at=wake_at)
        )
    due = shifted(entry.wake_at or entry.at, entry.at, replay.pauses)
    if replay.now() < due:
        replay.suspend(SuspendReason.SLEEP, due)
