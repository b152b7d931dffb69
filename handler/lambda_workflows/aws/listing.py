"""A page of a sharded listing: the merge of its partitions, newest first, and its cursor.

A listing (:class:`lambda_workflows.aws.shards.Listing`) reads K partition keys of
``by_created`` (and, while a stack upgrades, the K + 1 of the legacy ``by_workflow``). Every
partition is sorted by creation time then id (the index's sort key,
unique within a workflow), so the merge of their newest-first Queries is the workflow's
newest-first order, the same order a single partition gave before sharding.

**The cursor** is the sort key of the last instance a page returned, plus the set of partitions
known to hold nothing below it: the next page asks every other partition for what sorts below
that key (``sk < :after``). One key serves all partitions because the order is total, so the
cursor's size barely grows with K (the mask, a digit per three or so partitions): at most
about 370 characters for K = 32, with the longest workflow name and id, well under
:data:`lambda_workflows.aws.cursors.MAX_CURSOR` (2,048, unchanged). It is signed like every
cursor (:mod:`lambda_workflows.aws.cursors`) and its shape, and the listing it belongs to, are
checked again after the signature (:func:`position_of`).

**What a page costs.** A page of ``limit`` instances asks each partition not yet exhausted
for ``ceil(limit / K) + 1`` items (one Query each: K + 1 on a first page, fewer on later pages
once partitions run out; sent together from a few threads, so they cost about one round trip
of latency), then tops up, one Query at a time, a partition whose items ran out
while it still has more, asking twice as many each time (a partition holding more than its
share of the page: a few extra Queries, never one per item). It reads about
``limit + (K + 1) * (ceil(limit / K) + 1)`` items, not ``K * limit``: for K = 32 and the API's
default 50, 33 Queries reading under 150 items, the cost of a few extra 4 KB reads.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lambda_workflows.engine.errors import InvalidInput
from lambda_workflows.engine.immutable import immutable

from .shards import Listing

__all__ = [
    "START",
    "Merge",
    "Position",
    "in_threads",
    "merged_page",
    "one_by_one",
    "payload_of",
    "position_of",
]

T = TypeVar("T")
Item = dict[str, Any]
Query = Callable[[int, Item | None, int], tuple[list[Item], Item | None]]
"""One Query of a partition: (partition number, ExclusiveStartKey or None, Limit) ->
(its items, newest first; its LastEvaluatedKey or None)."""
Together = Callable[[list[Callable[[], T]]], list[T]]
"""Runs independent calls (the first Query of each partition) and returns their results in
order: one after the other, or at the same time (:func:`in_threads`)."""

_READERS = 16  # Queries one listing or count keeps in flight at most
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()

_MAX_SORT_KEY = 256  # 17 digits, '#', an id of at most 100 characters: far below


@immutable
class Position:
    """Where a listing's next page starts: below ``after`` (None: from the newest), in every
    partition but those in ``done`` (known to hold nothing below it)."""

    after: str | None = None
    done: frozenset[int] = frozenset()


START = Position()


@dataclass
class _Stream:
    """One partition's items fetched and not yet merged, and where its next Query starts."""

    partition: int
    items: deque[Item] = field(default_factory=deque)
    start: Item | None = None
    asked: int = 0
    opened: bool = False  # its first Query was made

    @property
    def more(self) -> bool:
        """It may hold items not fetched yet."""
        return not self.opened or self.start is not None

    @property
    def exhausted(self) -> bool:
        return not self.items and not self.more


def one_by_one(calls: list[Callable[[], T]]) -> list[T]:
    """Each call in turn (a harness that numbers every AWS call in order)."""
    return [call() for call in calls]


def in_threads(calls: list[Callable[[], T]]) -> list[T]:
    """The calls at the same time, in a small pool of threads (boto3 clients are
    thread-safe): K + 1 Queries cost about one round trip instead of K + 1."""
    global _POOL
    if len(calls) < 2:
        return one_by_one(calls)
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(_READERS, thread_name_prefix="index-read")
    return list(_POOL.map(lambda call: call(), calls))


def merged_page(
    query: Query,
    partitions: int,
    position: Position,
    limit: int,
    sort_key: str,
    together: Together[tuple[list[Item], Item | None]] = one_by_one,
) -> tuple[list[Item], Position | None]:
    """The next ``limit`` items of the listing, newest first, and where the page after starts
    (None: there is none). ``query`` is asked for what sorts below ``position.after``; the
    first Query of every partition goes through ``together``.
    """
    merge = Merge(query, partitions, position, sort_key, together)
    page = merge.take(limit)
    return page, merge.position()


class Merge:
    """The merge of a listing's partitions, newest first, taken in parts: each :meth:`take`
    goes on where the one before stopped, with the items already fetched (a status-filtered
    page reads several parts, see :mod:`lambda_workflows.aws.instance_listing`).

    Args:
        query: one Query of a partition (see :data:`Query`).
        partitions: how many partitions the listing reads.
        position: where the merge starts.
        sort_key: the attribute the merge orders by.
        together: runs the Queries of every partition short of its share of a part at once.
        spread: partitions the listing's items are spread over (a part asks each partition
            for about its share of the part); partitions - 1 when None.
    """

    def __init__(
        self,
        query: Query,
        partitions: int,
        position: Position,
        sort_key: str,
        together: Together[tuple[list[Item], Item | None]] = one_by_one,
        spread: int | None = None,
    ) -> None:
        self.query, self.partitions, self.sort_key = query, partitions, sort_key
        self.together, self.start = together, position
        self.spread = max(1, partitions - 1 if spread is None else spread)
        self.streams = [_Stream(p) for p in range(partitions) if p not in position.done]
        self.last: str | None = None  # the sort key of the last item taken

    def take(self, count: int, share: int | None = None) -> list[Item]:
        """The next ``count`` items (fewer: the listing ran out). First, every partition
        holding fewer than its ``share`` (by default ``ceil(count / spread) + 1``) fetched
        items is asked for the rest, all at once; then a partition whose items run out while
        it has more is topped up alone, asking twice as many each time."""
        share = min(count, math.ceil(count / self.spread) + 1 if share is None else share)
        short = [s for s in self.streams if s.more and len(s.items) < share]
        asks = [max(share - len(s.items), 2 * s.asked) if s.opened else share for s in short]
        calls: list[Callable[[], tuple[list[Item], Item | None]]] = [
            functools.partial(self.query, s.partition, s.start, a)
            for s, a in zip(short, asks, strict=True)
        ]
        for stream, ask, (items, start) in zip(short, asks, self.together(calls), strict=True):
            stream.items.extend(items)
            stream.start, stream.asked, stream.opened = start, ask, True
        taken: list[Item] = []
        while len(taken) < count:
            for stream in self.streams:
                # a partition whose fetched items ran out may hold the next newest: top it up
                while not stream.items and stream.more:
                    _fetch(self.query, stream, min(2 * stream.asked, count - len(taken)))
            live = [s for s in self.streams if s.items]
            if not live:
                break
            newest = max(live, key=lambda s: str(s.items[0][self.sort_key]["S"]))
            taken.append(newest.items.popleft())
        if taken:
            self.last = str(taken[-1][self.sort_key]["S"])
        return taken

    def done(self) -> frozenset[int]:
        """The partitions known to hold nothing below the last item taken."""
        return self.start.done | {s.partition for s in self.streams if s.exhausted}

    def position(self) -> Position | None:
        """Where the listing goes on after the items taken (None: nothing is left)."""
        done = self.done()
        if self.last is None or all(p in done for p in range(self.partitions)):
            return None
        return Position(self.last, done)


def _fetch(query: Query, stream: _Stream, limit: int) -> None:
    items, stream.start = query(stream.partition, stream.start, limit)
    stream.items.extend(items)
    stream.asked = limit


def payload_of(listing: Listing, position: Position) -> dict[str, Any]:
    """The cursor payload (to sign) of ``position`` in ``listing``."""
    return {
        "w": listing.workflow,
        "s": listing.status,
        "after": position.after,
        # the partitions known exhausted, as a bit mask (bit 0: the legacy key)
        "done": sum(1 << p for p in position.done),
        # which partitions the numbers in "done" name: a cursor of another layout is refused
        "layout": _layout(listing),
    }


def _layout(listing: Listing) -> str:
    return "created+legacy" if listing.legacy else "created"


def position_of(payload: Any, listing: Listing) -> Position:
    """The position a verified cursor payload holds, if it is one of ``listing``.

    The signature already proves the API issued it; this still refuses a payload of another
    shape (defence in depth) or of another listing (another workflow or status filter) rather
    than let DynamoDB answer for it.

    Raises:
        InvalidInput: the payload is not a listing position, or belongs to another listing.
    """
    if not (
        isinstance(payload, dict)
        and set(payload) == {"w", "s", "after", "done", "layout"}
        and isinstance(payload["w"], str)
        and (payload["s"] is None or isinstance(payload["s"], str))
        and isinstance(payload["after"], str)
        and 0 < len(payload["after"]) <= _MAX_SORT_KEY
        and type(payload["done"]) is int
        and 0 <= payload["done"] < 1 << 4096
    ):
        raise InvalidInput(
            "cursor is not valid: pass back, unchanged, the cursor of the previous page of the "
            "same listing, or start again without one"
        )
    if (payload["w"], payload["s"], payload["layout"]) != (
        listing.workflow,
        listing.status,
        _layout(listing),
    ):
        raise InvalidInput(
            "cursor belongs to another listing (another workflow or status filter, or the "
            "stack's listing before an upgrade); list again without it"
        )
    mask: int = payload["done"]
    done = frozenset(p for p in range(mask.bit_length()) if mask >> p & 1)
    return Position(payload["after"], done)
