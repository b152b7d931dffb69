"""``step.wait_for_event``: the oldest buffered event of a type, or a timeout.

A wait whose delivery (a ``DELIVERY`` entry) is recorded returns that event, or raises
:class:`WorkflowTimeoutError`, again. Otherwise it consumes the oldest event of its type that
no wait has consumed yet (events sent early are buffered, FIFO); with none, the first pass
records a ``WAIT`` entry with the deadline and every pass suspends until an event arrives (a
signal) or the deadline passes, when the timeout is recorded as the delivery.
"""

from __future__ import annotations

from lambda_workflows.engine import codec
from lambda_workflows.engine.errors import SuspendReason, WorkflowTimeoutError
from lambda_workflows.engine.model import (
    EntryKind,
    ErrorInfo,
    JournalEntry,
    ReceivedEvent,
    event_timestamp,
)
from lambda_workflows.engine.replay.journal import delivery_key

from .base import Call, Pass

__all__ = ["run"]


async def run(replay: Pass, name: str, event_type: str, timeout: float) -> ReceivedEvent:
    """The body of ``step.wait_for_event``."""
    call = replay.enter(name, "wait_for_event")
    delivered = replay.journal.entries.get(delivery_key(call.key))
    if delivered is not None:
        return _received(replay, delivered)
    started = replay.journal.entries.get(call.key)
    if started is None:
        replay.before_new_step(call.key, needs_lease=False)
    now = replay.now()
    began = started.at if started else now
    if replay.event_timed_out(call, event_type):  # a test forces the timeout now
        return _received(replay, await replay.write(_timed_out(call, event_type, now, began)))
    event = replay.journal.next_event(event_type)
    if event is not None:
        delivery = call.entry(
            EntryKind.DELIVERY,
            now,
            key=delivery_key(call.key),
            started_at=began,
            event_type=event_type,
            event_id=event.id,
        )
        return _received(replay, await replay.write(delivery))
    if started is None:
        wait = call.entry(
            EntryKind.WAIT, now, started_at=now, wake_at=now + timeout, event_type=event_type
        )
        started = await replay.write(wait)
    deadline = started.wake_at or now
    if now < deadline:
        replay.suspend(SuspendReason.EVENT, deadline)
    return _received(replay, await replay.write(_timed_out(call, event_type, now, began)))


def _timed_out(call: Call, event_type: str, now: float, began: float) -> JournalEntry:
    """The delivery that ends a wait whose deadline passed with no event."""
    message = (
        f"step.wait_for_event({call.name!r}) timed out: no {event_type!r} event arrived within "
        "its timeout"
    )
    return call.entry(
        EntryKind.DELIVERY,
        now,
        key=delivery_key(call.key),
        started_at=began,
        error=ErrorInfo(WorkflowTimeoutError.__name__, message),
        event_type=event_type,
    )


def _received(replay: Pass, entry: JournalEntry) -> ReceivedEvent:
    """What ``await step.wait_for_event`` gives ``run()`` for a recorded delivery.

    Raises:
        WorkflowTimeoutError: the delivery is the wait's timeout.
    """
    if entry.error is not None:
        raise WorkflowTimeoutError(entry.error.message)
    event = replay.journal.event(entry.event_id or "")
    if event is None:  # another runner delivered an event this pass has not loaded yet
        replay.suspend(SuspendReason.RELOAD)
    return ReceivedEvent(codec.decode(event.payload), event_timestamp(event.timestamp), event.type)
