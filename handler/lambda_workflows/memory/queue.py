"""The in-memory work queue and wake-up scheduler: what SQS and EventBridge Scheduler are to
a deployed stack, for the test kit and the benchmarks (which deliver and fire them by hand)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.errors import SuspendReason
from lambda_workflows.engine.model import InstanceRef

__all__ = ["MemoryQueue", "MemoryScheduler", "ScheduledWakeUp"]


@dataclass(order=True, frozen=True)
class _Message:
    visible_at: float
    seq: int
    ref: InstanceRef = field(compare=False)


class MemoryQueue:
    """A :class:`~lambda_workflows.engine.instances.ports.WorkQueue` with delayed visibility."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._messages: list[_Message] = []
        self._seq = 0
        self.sent = 0

    def send(self, ref: InstanceRef, delay: float = 0.0) -> None:
        with self._lock:
            self._seq += 1
            self.sent += 1
            self._messages.append(_Message(self._clock.time() + max(0.0, delay), self._seq, ref))

    def send_many(self, refs: Sequence[InstanceRef]) -> None:
        for ref in refs:
            self.send(ref)

    def receive(self) -> InstanceRef | None:
        """The next visible message, removed from the queue."""
        now = self._clock.time()
        with self._lock:
            visible = [m for m in self._messages if m.visible_at <= now]
            if not visible:
                return None
            message = min(visible)
            self._messages.remove(message)
            return message.ref

    def next_visible_at(self) -> float | None:
        """When the next delayed message becomes visible."""
        with self._lock:
            return min((m.visible_at for m in self._messages), default=None)

    def __len__(self) -> int:
        return len(self._messages)


@dataclass(frozen=True, order=True)
class ScheduledWakeUp:
    """A pending one-time wake-up."""

    at: float
    ref: InstanceRef = field(compare=False)
    reason: SuspendReason = field(compare=False)


class MemoryScheduler:
    """A :class:`~lambda_workflows.engine.instances.ports.WakeUpScheduler` that the test kit
    fires by hand."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[InstanceRef, float], ScheduledWakeUp] = {}
        self.scheduled = 0

    def schedule(self, ref: InstanceRef, at: float, reason: SuspendReason) -> None:
        with self._lock:
            self.scheduled += 1
            self._pending[(ref, at)] = ScheduledWakeUp(at, ref, reason)

    def unschedule(self, ref: InstanceRef, at: float) -> None:
        with self._lock:
            self._pending.pop((ref, at), None)

    def cancel(self, ref: InstanceRef) -> None:
        with self._lock:
            for key in [k for k in self._pending if k[0] == ref]:
                del self._pending[key]

    def pending(self) -> list[ScheduledWakeUp]:
        """Every pending wake-up, earliest first."""
        with self._lock:
            return sorted(self._pending.values())

    def pop_due(self, now: float) -> list[ScheduledWakeUp]:
        """Remove and return the wake-ups due at ``now`` (the schedule fired and deleted)."""
        with self._lock:
            due = [w for w in self._pending.values() if w.at <= now]
            for wake_up in due:
                del self._pending[(wake_up.ref, wake_up.at)]
            return sorted(due)
