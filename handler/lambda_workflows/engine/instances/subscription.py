"""Subscribing to an instance: pages of its events (:mod:`.instance_events`) after a cursor,
and the long poll that waits for the next one.

A page holds the events after the cursor, in order, bounded as the API's other pages are (at
most ``limit`` events and :data:`~.pages.PAGE_BYTES` of JSON, one at least), each with its own
``cursor``; the page's ``cursor`` is the one to pass next (the last event's, or the one it was
given when nothing is new). ``finished`` says the instance has finished and every event was
served: nothing will follow.

A cursor is sealed by the store (signed, :mod:`.cursors`) and carries the instance (a digest of
its name), its journal generation, and where it is (see :class:`SubscriptionCursor`). A
cursor of another instance or of another route is ``InvalidInput``; one of an earlier
generation (the instance was restarted since) starts again at the new run's first event.

**The long poll** (``wait``, at most :data:`MAX_WAIT` seconds) reads the instance again every
:data:`POLL_INTERVAL` seconds until an event is new, the instance finishes, its status moves
(some moves are no event: back to ``waiting`` after a resume) or the time is up.
Each read is the store's :meth:`~.ports.InstanceStore.load`, one Query of the instance's
partition on DynamoDB. The pause between reads is injected (``pause``): the engine reads no
clock and never sleeps on its own, and a service built without one answers at once.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lambda_workflows.engine.cursors import invalid_cursor
from lambda_workflows.engine.errors import InvalidInput
from lambda_workflows.engine.model import FINISHED, InstanceRef

from .instance_events import (
    EventType,
    InstanceEvent,
    Position,
    instance_events,
)
from .pages import PAGE_BYTES, CursorSeal
from .ports import InstanceState

__all__ = [
    "EVENT_TYPES",
    "MAX_WAIT",
    "POLL_INTERVAL",
    "PauseFunction",
    "SubscriptionCursor",
    "SubscriptionPage",
    "check_types",
    "check_wait",
    "long_poll",
    "poll_rounds",
    "subscription_page",
]

MAX_WAIT = 25
"""The longest long poll, in seconds: API Gateway gives up on a request after 29 s (REST) or
30 s (HTTP API), and an answer must leave in time."""
POLL_INTERVAL = 1.0
"""Seconds between two reads of the instance while a long poll waits."""
EVENT_TYPES = tuple(str(type) for type in EventType)
"""Every event type, in the order docs/events.md lists them."""
SEEN_AT_ONCE = 16
"""The events known at one instant a cursor remembers having served (see
:class:`SubscriptionCursor`)."""
_OF = "subscribe"
_KEYS = ["after", "at", "gen", "instance", "of", "seen"]

PauseFunction = Callable[[float], None]
"""Waits the given seconds between two reads of a long poll (``time.sleep`` on AWS)."""


@dataclass(frozen=True, slots=True)
class SubscriptionPage:
    """Events after a cursor: ``events`` (each with its ``cursor``), the ``cursor`` to pass
    next, ``finished`` once the instance finished and nothing more will come, and the
    instance's ``status`` when it was read (it also moves without an event: back to
    ``waiting`` after a resume, say)."""

    events: list[InstanceEvent]
    cursor: str
    finished: bool = False
    status: str = "unknown"

    def to_dict(self) -> dict[str, Any]:
        """``{"events", "cursor", "finished", "status"}``: the body of ``GET …/subscribe``."""
        return {
            "events": list(self.events),
            "cursor": self.cursor,
            "finished": self.finished,
            "status": self.status,
        }

    @classmethod
    def from_dict(cls, shown: Any) -> SubscriptionPage:
        """The page a :meth:`to_dict` shows."""
        events = [InstanceEvent(event) for event in shown.get("events") or ()]
        finished = bool(shown.get("finished"))
        return cls(events, str(shown["cursor"]), finished, str(shown.get("status") or "unknown"))


@dataclass(frozen=True, slots=True)
class SubscriptionCursor:
    """Where a subscription is, in generation ``generation`` of the instance whose name
    digests to ``instance``: after the events known before the instant ``at`` (None: before
    the first), and after the events ``seen`` known at ``at`` (digests of their identities).

    Remembering the events served at the last instant, rather than a position among them,
    keeps a subscription exact when writes share an instant (a virtual clock that stands
    still, a clock's resolution): an event written later than one served but at the same
    instant may sort before it (the wait that consumed an event sent), and is served next,
    not skipped. ``seen`` holds at most :data:`SEEN_AT_ONCE` digests; past that many at one
    instant, ``after`` (the furthest position served there, an event received aside: its
    position moves once a wait consumes it) decides instead. Both are what was served, not in
    which order, so a cursor handed out live equals the one a later subscription hands out
    for the same event.
    """

    instance: str
    generation: int
    at: float | None = None
    after: Position | None = None
    seen: tuple[str, ...] = ()

    def sealed(self, seal: CursorSeal) -> str:
        payload = {
            "of": _OF,
            "instance": self.instance,
            "gen": self.generation,
            "at": self.at,
            "after": None if self.after is None else list(self.after),
            "seen": list(self.seen),
        }
        return seal.seal_cursor(payload)

    def is_new(self, position: Position, identity: str) -> bool:
        """Whether the event at ``position`` (``identity``) comes after this cursor."""
        if self.at is None or position[0] > self.at:
            return True
        if position[0] < self.at or identity in self.seen:
            return False
        if len(self.seen) < SEEN_AT_ONCE:
            return True  # every event served at this instant is in seen
        return self.after is None or position > self.after

    def past(self, position: Position, identity: str, moves: bool) -> SubscriptionCursor:
        """This cursor moved past the event at ``position`` (``moves``: an event received,
        whose position is not final)."""
        if self.at is None or position[0] != self.at:
            return SubscriptionCursor(
                self.instance,
                self.generation,
                position[0],
                None if moves else position,
                (identity,),
            )
        after = self.after
        if not moves:
            after = position if after is None else max(after, position)
        seen = self.seen
        if len(seen) < SEEN_AT_ONCE:
            seen = tuple(sorted({*seen, identity}))
        return SubscriptionCursor(self.instance, self.generation, self.at, after, seen)

    @classmethod
    def opened(
        cls, seal: CursorSeal, cursor: str | None, ref: InstanceRef
    ) -> SubscriptionCursor | None:
        """The cursor ``cursor`` names (None without one).

        Raises:
            InvalidInput: a cursor the store did not seal, one of another route, or one of
                another instance.
        """
        if cursor is None:
            return None
        payload = seal.open_cursor(cursor)
        if not isinstance(payload, dict) or sorted(payload) != _KEYS:
            raise invalid_cursor()  # a page's or a listing's cursor, sealed with the same key
        seen, at = payload["seen"], payload["at"]
        if payload["of"] != _OF or type(payload["gen"]) is not int or not _digests(seen):
            raise invalid_cursor()
        if at is not None and type(at) not in (int, float):
            raise invalid_cursor()
        if payload["instance"] != _digest(ref):
            raise InvalidInput(
                f"this cursor is not one of instance {ref.id!r}'s subscription: pass back a "
                "cursor its events gave, or subscribe without one to start at its first event"
            )
        at = None if at is None else float(at)
        after = _position(payload["after"])
        return cls(payload["instance"], payload["gen"], at, after, tuple(seen))


def check_types(types: Iterable[str] | str | None) -> frozenset[str] | None:
    """The event types asked for (None: all of them); a comma in a type separates two.

    Raises:
        InvalidInput: a type that is not one of :data:`EVENT_TYPES`.
    """
    if types is None:
        return None
    listed = [types] if isinstance(types, str) else list(types)
    wanted = {part.strip() for item in listed for part in str(item).split(",") if part.strip()}
    unknown = sorted(wanted - set(EVENT_TYPES))
    if unknown:
        raise InvalidInput(
            f"unknown event type {unknown[0]!r} in types: use some of {', '.join(EVENT_TYPES)}"
        )
    return frozenset(wanted) or None


def check_wait(wait: Any) -> float:
    """The long poll's wait: 0 to :data:`MAX_WAIT` seconds, else InvalidInput."""
    if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0 <= wait <= MAX_WAIT:
        raise InvalidInput(
            f"wait must be a number of seconds from 0 to {MAX_WAIT} (API Gateway ends a request "
            f"after 29 s), got {wait!r}; subscribe again with the answer's cursor to wait longer"
        )
    return float(wait)


def poll_rounds(wait: float) -> int:
    """How many pauses of :data:`POLL_INTERVAL` a wait of ``wait`` seconds holds."""
    return math.ceil(wait / POLL_INTERVAL)


def subscription_page(
    state: InstanceState,
    now: float,
    after: SubscriptionCursor | None,
    types: frozenset[str] | None,
    limit: int,
    seal: CursorSeal,
) -> tuple[SubscriptionPage, SubscriptionCursor]:
    """The events of ``state`` after ``after`` (of the types ``types``), and where the next
    page starts."""
    record = state.record
    cursor = SubscriptionCursor(_digest(record.ref), record.generation)
    if after is not None and after.generation == record.generation:
        cursor = after  # else the instance was restarted: its new run from the start
    new = [
        (at, body, identity)
        for at, body in instance_events(state, now)
        if cursor.is_new(at, identity := _identity(at, body))
    ]
    events: list[InstanceEvent] = []
    used, served = 0, 0
    for at, body, identity in new[:limit]:
        here = cursor.past(at, identity, body["type"] == EventType.EVENT_RECEIVED)
        if types is None or body["type"] in types:
            event = _with_cursor(body, here.sealed(seal))
            used += _size(event)
            if events and used > PAGE_BYTES:
                break
            events.append(event)
        cursor, served = here, served + 1
    finished = record.status in FINISHED and served == len(new)
    page = SubscriptionPage(events, cursor.sealed(seal), finished, str(record.status))
    return page, cursor


def long_poll(
    read: Callable[[], InstanceState],
    now: Callable[[], float],
    pause: PauseFunction | None,
    wait: float,
    after: SubscriptionCursor | None,
    types: frozenset[str] | None,
    limit: int,
    seal: CursorSeal,
) -> SubscriptionPage:
    """The first page with an event after ``after``, reading the instance again every
    :data:`POLL_INTERVAL` seconds for up to ``wait`` seconds (at once without ``pause``); the
    last page read (no event) when the time is up, the instance finished, or its status
    moved since the first read."""
    rounds = 0 if pause is None else poll_rounds(wait)
    first = None
    for round in range(rounds + 1):
        page, after = subscription_page(read(), now(), after, types, limit, seal)
        first = first or page.status
        if page.events or page.finished or page.status != first or pause is None:
            return page
        if round < rounds:
            pause(POLL_INTERVAL)
    return page


def _with_cursor(body: dict[str, Any], cursor: str) -> InstanceEvent:
    """The event with its cursor after its type and time (what a reader looks at first)."""
    return InstanceEvent(
        {
            "type": body["type"],
            "timestamp": body["timestamp"],
            "cursor": cursor,
            **{k: v for k, v in body.items() if k not in ("type", "timestamp")},
        }
    )


def _position(shown: Any) -> Position | None:
    if shown is None:
        return None
    kinds = [float, int, int, int, int, int, str]
    if not isinstance(shown, list) or len(shown) != len(kinds):
        raise invalid_cursor()
    if isinstance(shown[0], int) and not isinstance(shown[0], bool):
        shown = [float(shown[0]), *shown[1:]]
    if [type(value) for value in shown] != kinds:
        raise invalid_cursor()
    return (shown[0], shown[1], shown[2], shown[3], shown[4], shown[5], shown[6])


def _identity(position: Position, body: dict[str, Any]) -> str:
    """What names an event whatever else is recorded later: its type and position, less the
    call position (an event received takes its consumer's, once there is one)."""
    stable = [body["type"], position[0], position[1], *position[3:]]
    return hashlib.sha256(json.dumps(stable).encode()).hexdigest()[:8]


def _digests(seen: Any) -> bool:
    if not isinstance(seen, list) or len(seen) > SEEN_AT_ONCE:
        return False
    return all(isinstance(item, str) and len(item) == 8 for item in seen)


def _digest(ref: InstanceRef) -> str:
    return hashlib.sha256(f"{ref.workflow}/{ref.id}".encode()).hexdigest()[:16]


def _size(event: InstanceEvent) -> int:
    return len(json.dumps(event, separators=(",", ":"), default=str))
