"""Publishing lifecycle events to an EventBridge bus (PutEvents), in order per instance.

**Order.** PutEvents takes up to 10 entries and answers for each: some may fail (throttled, an
internal error) while the others are published. Two events of one instance in one call could
then come out with the later one published and the earlier one not. So the events are sent in
*rounds* that keep their order, each round holding at most one event per instance: an event
is only ever sent once every earlier event of its instance was published.

**Failures.** A round's failed entries (and a call that failed as a whole: refused, throttled
past botocore's own retries, timed out) are sent again, :data:`ATTEMPTS` times in all with a
short pause. What is still not published then stops the publication there: the caller learns
how many events, from the first, were published (:attr:`Publication.published`), and has the
stream retry from the first one that was not. Entries of that round that did get through are
published again then, under the same ``detail.id``: a consumer drops them as duplicates (at
least once, never out of order, never a gap).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lambda_workflows.engine.instances.lifecycle import SOURCE, LifecycleEvent
from lambda_workflows.engine.model import InstanceRef

from .errors import translate

__all__ = ["ATTEMPTS", "MAX_ENTRIES", "EventBridgePublisher", "Publication"]

MAX_ENTRIES = 10
"""Entries PutEvents takes in one call."""

ATTEMPTS = 3
"""Calls made for an entry before the publication stops at it (the stream retries it later)."""

PAUSE = 0.1
"""Seconds before the second call; doubled before each further one."""


@dataclass(frozen=True, slots=True)
class Publication:
    """How a publication went: how many events, from the first, are published, and why the
    next one is not (None when all are)."""

    published: int
    failure: str | None = None


class EventBridgePublisher:
    """Puts lifecycle events on one bus.

    Args:
        client: a boto3 ``events`` client.
        bus: the bus's name (or ARN).
        attempts: calls made for an entry before giving up on it (for now).
        pause: how to wait between calls (``time.sleep``; tests pass their own).
    """

    def __init__(
        self,
        client: Any,
        bus: str,
        *,
        attempts: int = ATTEMPTS,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.bus = bus
        self.attempts = attempts
        self.pause = pause

    def publish(self, events: Sequence[LifecycleEvent]) -> Publication:
        """Publish ``events`` in order (per instance): see the module's docstring."""
        for start, round_ in _rounds(events):
            failed, failure = self._put(round_)
            if failed:
                return Publication(start + min(failed), failure)
        return Publication(len(events))

    def _put(self, round_: list[LifecycleEvent]) -> tuple[list[int], str | None]:
        """Put one round; the indexes of its events still not published, and why."""
        pending, failure = list(range(len(round_))), None
        for attempt in range(self.attempts):
            if attempt:
                self.pause(PAUSE * 2 ** (attempt - 1))
            try:
                answer = self.client.put_events(Entries=[self._entry(round_[i]) for i in pending])
            except (ClientError, BotoCoreError) as exc:
                failure = str(translate(exc, "EventBridge", "PutEvents"))
                continue
            results = answer.get("Entries", [])
            still = [
                index
                for position, index in enumerate(pending)
                if position >= len(results) or "EventId" not in results[position]
            ]
            if still:
                failure = _entry_failure(results[pending.index(still[0])] if results else {})
            pending = still
            if not pending:
                return [], None
        return pending, failure

    def _entry(self, event: LifecycleEvent) -> dict[str, Any]:
        return {
            "Source": SOURCE,
            "DetailType": event.type.value,
            "Detail": json.dumps(event.detail, separators=(",", ":"), ensure_ascii=False),
            "EventBusName": self.bus,
            "Time": datetime.fromtimestamp(event.at, UTC),
        }


def _rounds(events: Sequence[LifecycleEvent]) -> Iterator[tuple[int, list[LifecycleEvent]]]:
    """``(index of its first event, events)``: consecutive runs of at most
    :data:`MAX_ENTRIES` events, none holding two events of one instance."""
    start, round_, instances = 0, list[LifecycleEvent](), set[InstanceRef]()
    for index, event in enumerate(events):
        if len(round_) == MAX_ENTRIES or event.ref in instances:
            yield start, round_
            start, round_, instances = index, [], set()
        round_.append(event)
        instances.add(event.ref)
    if round_:
        yield start, round_


def _entry_failure(result: dict[str, Any]) -> str:
    code = result.get("ErrorCode") or "no answer for the entry"
    return f"EventBridge PutEvents did not publish an entry ({code}: {result.get('ErrorMessage')})"
