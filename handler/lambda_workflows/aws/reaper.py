"""Deleting what an instance leaves behind once DynamoDB's TTL removed its instance item.

**Why.** A finished instance is kept for its retention (``expires_at`` on its instance item,
30 days by default). Its journal, event and chunk items were written with a TTL of their own,
``JOURNAL_HORIZON`` (two years) after they were written, because a live instance may sleep a
year without being loaded (see :mod:`lambda_workflows.aws.items`). Once the instance item is gone
nothing reads them, yet they were billed as storage for up to two years: for 1 KB steps, more
than running the steps cost (``make bench``, bench/cost_bench.py).

**How.** The table's stream (``NEW_AND_OLD_IMAGES``, which lifecycle events need too; the
reaper reads only the old image) feeds SweepFunction, filtered by the event source mapping
(template.yaml) to the records of instance items removed by TTL; for each, the reaper
reads the partition (keys and ``expires_at`` only) and deletes every item but the instance
item with a conditional DeleteItem, ``expires_at < cut``, where ``cut`` is the removed item's
``expires_at`` plus ``JOURNAL_HORIZON``, less :data:`CLOCK_MARGIN`.

**Why it never deletes an item of a live instance.** Every item is written with
``expires_at`` = the time it was written + ``JOURNAL_HORIZON`` (a TTL pushed back when a
long-lived instance is loaded is the time of that load + the horizon). The removed instance's
items were all written before its instance item expired (it had finished, or was deleted and
left a tombstone, by then), so they all fall below the cut. TTL removes only an expired item,
so an instance created later under the same id (same partition) writes every one of its items
after the removed item's ``expires_at``: all at or above the cut, even written by a process
whose clock runs up to :data:`CLOCK_MARGIN` behind DynamoDB's. (An item the removed instance
wrote in that last margin before its expiry, a retention shorter than the margin, is left to
its own TTL.) The condition is checked on
the item as it is when deleted, so an item a new instance wrote under the same key in the
meantime (an idempotency marker, a chunk of its instance item) is never touched; an item with
no ``expires_at`` never is either.

**Paging.** One invocation makes at most :data:`REAP_BUDGET` deletes, over all its records
(SweepFunction has 120 s; a partition can hold hundreds of thousands of items). A record it
cannot finish is parked: a marker item (``pk = "R#<instance pk>"``, ``sk = "R"``: the cut and
the sort key to go on after) on the due index, ``due_shard = "reaping"``; every scheduled
sweep goes on with the parked partitions, a budget at a time, and deletes each marker once
its partition is done. Nothing but the reaper reads those items.

**Failures.** A record the reaper could not finish or park (a throttled Query, a delete that
failed after botocore's retries: a StorageError, as every adapter's AWS failure) is reported
as a batch item failure and retried by the event source mapping; deleting again is harmless
(an item already gone fails its condition). A parked partition whose turn fails stays parked
for the next sweep. A record given up on costs only storage: its items still expire by their
own TTL.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from .errors import error_code, translate
from .items import INSTANCE_SK, JOURNAL_HORIZON, get_n, get_s, n, s

__all__ = [
    "CLOCK_MARGIN",
    "REAPERS",
    "REAP_BUDGET",
    "ExpiredInstanceReaper",
    "Reaped",
    "expired_instance",
]

REAPERS = 16
"""Deletes one record keeps in flight at most."""

REAP_BUDGET = 20_000
"""Deletes one invocation makes at most: about 10 s at 16 in flight, well within the 120 s."""

CLOCK_MARGIN = 3600.0
"""Seconds the cut keeps clear of what a new instance writes, against clocks that disagree."""

PARKED_SHARD = "reaping"  # the due index partition of parked partitions
_PARKED_SK = "R"

Item = dict[str, Any]


@dataclass(frozen=True)
class Reaped:
    """What one turn on a partition did: deletes made, and where to go on (None: done)."""

    deleted: int
    after: str | None = None


class ExpiredInstanceReaper:
    """Deletes the items left in the partition of an instance whose instance item expired."""

    def __init__(self, client: Any, table: str, workers: int = REAPERS) -> None:
        self.client = client
        self.table = table
        self.workers = workers

    def reap(self, pk: str, expired_at: float) -> int:
        """Delete the items of partition ``pk`` written before ``expired_at`` (the removed
        instance item's ``expires_at``), all of them; how many were deleted.

        Raises:
            StorageError: a Query or a delete failed
            (:func:`lambda_workflows.aws.errors.translate`);
                the deletes that could be made were made.
        """
        deleted = 0
        after: str | None = ""
        while after is not None:
            turn = self.reap_some(pk, cut_of(expired_at), budget=REAP_BUDGET, after=after)
            deleted, after = deleted + turn.deleted, turn.after
        return deleted

    def reap_some(self, pk: str, cut: float, budget: int, after: str = "") -> Reaped:
        """Delete at most ``budget`` items of ``pk`` below ``cut``, in sort key order after
        ``after`` ("" : from the start). Raises StorageError as :meth:`reap` does."""
        try:
            return self._reap(pk, cut, budget, after)
        except (ClientError, BotoCoreError) as exc:
            raise translate(exc, "DynamoDB", "reaping an expired instance") from exc

    def _reap(self, pk: str, cut: float, budget: int, after: str) -> Reaped:
        if budget <= 0:
            return Reaped(0, after)
        doomed: list[Item] = []
        last: str | None = after
        for item in self._partition(pk, after):
            if len(doomed) >= budget:
                break
            last = item["sk"]["S"]
            if last != INSTANCE_SK and _expires(item) < cut:
                doomed.append(item["sk"])
        else:
            last = None  # read to the end: done after these
        if doomed:
            with ThreadPoolExecutor(min(self.workers, len(doomed))) as pool:
                done = [pool.submit(self._delete, pk, sk, cut) for sk in doomed]
            # every delete was tried; one that failed fails the turn (tried again: see above)
            deleted = sum(future.result() for future in done)
        else:
            deleted = 0
        return Reaped(deleted, last)

    def _partition(self, pk: str, after: str) -> Iterator[Item]:
        """Every item of ``pk`` after sort key ``after``: its sort key and ``expires_at``,
        page after page."""
        query: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ProjectionExpression": "sk, expires_at",
        }
        if after:
            query["ExclusiveStartKey"] = {"pk": {"S": pk}, "sk": {"S": after}}
        while True:
            page = self.client.query(**query)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _delete(self, pk: str, sk: Item, cut: float) -> int:
        """Delete one item if it is still one written before the cut: 1 if it was."""
        try:
            self.client.delete_item(
                TableName=self.table,
                Key={"pk": {"S": pk}, "sk": sk},
                ConditionExpression="expires_at < :cut",
                ExpressionAttributeValues={":cut": n(cut)},
            )
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return 0  # gone already, or written since by a new instance with this id
            raise
        return 1

    # --- parked partitions -----------------------------------------------------------------

    def park(self, pk: str, cut: float, after: str, now: float) -> None:
        """Leave partition ``pk`` for the next sweep to go on with, after sort key ``after``.

        Raises:
            StorageError: the marker could not be written (the record is retried).
        """
        marker = {
            "pk": s(f"R#{pk}"),
            "sk": s(_PARKED_SK),
            "cut": n(cut),
            "due_shard": s(PARKED_SHARD),
            "due_at": n(now),
            "expires_at": n(now + JOURNAL_HORIZON),  # forgotten, it goes too
        }
        if after:
            marker["after"] = s(after)
        self._call(lambda: self.client.put_item(TableName=self.table, Item=marker))

    def resume(self, now: float, budget: int) -> int:
        """Go on with the parked partitions, at most ``budget`` deletes in all; each one done
        loses its marker, the others are parked again further on. How many were deleted.

        Raises:
            StorageError: a call failed; what is not done stays parked.
        """
        deleted = 0
        for marker in self._parked(now):
            if deleted >= budget:
                break
            pk = str(get_s(marker, "pk"))[len("R#") :]
            cut = get_n(marker, "cut") or 0.0
            turn = self.reap_some(pk, cut, budget - deleted, get_s(marker, "after") or "")
            deleted += turn.deleted
            if turn.after is None:
                key = {"pk": marker["pk"], "sk": marker["sk"]}
                self._call(lambda k=key: self.client.delete_item(TableName=self.table, Key=k))
            else:
                self.park(pk, cut, turn.after, now)
        return deleted

    def _parked(self, now: float) -> list[Item]:
        """The markers of parked partitions (one Query of the due index, then each read)."""
        page = self._call(
            lambda: self.client.query(
                TableName=self.table,
                IndexName="by_due",
                KeyConditionExpression="due_shard = :shard AND due_at < :now",
                ExpressionAttributeValues={":shard": s(PARKED_SHARD), ":now": n(now)},
            )
        )
        markers = []
        for key in page.get("Items", []):
            got = self._call(
                lambda k=key: self.client.get_item(
                    TableName=self.table,
                    Key={"pk": k["pk"], "sk": k["sk"]},
                    ConsistentRead=True,
                )
            )
            if "Item" in got:
                markers.append(got["Item"])
        return markers

    @staticmethod
    def _call(call: Any) -> Any:
        try:
            return call()
        except (ClientError, BotoCoreError) as exc:
            raise translate(exc, "DynamoDB", "reaping an expired instance") from exc


def cut_of(expired_at: float) -> float:
    """The cut for an instance item that expired at ``expired_at`` (see the module docstring)."""
    return expired_at + JOURNAL_HORIZON - CLOCK_MARGIN


def expired_instance(record: Mapping[str, Any]) -> tuple[str, float] | None:
    """``(pk, expires_at)`` of a stream record of an instance item removed by TTL; None for
    any other record (the event source mapping's filter lets no other through, but a record is
    checked again rather than trusted)."""
    if record.get("eventName") != "REMOVE":
        return None
    identity = record.get("userIdentity") or {}
    if identity.get("principalId") != "dynamodb.amazonaws.com":
        return None
    change = record.get("dynamodb") or {}
    keys, old = change.get("Keys") or {}, change.get("OldImage") or {}
    if (keys.get("sk") or {}).get("S") != INSTANCE_SK or "S" not in (keys.get("pk") or {}):
        return None
    expires = (old.get("expires_at") or {}).get("N")
    if expires is None:
        return None
    return str(keys["pk"]["S"]), float(expires)


def _expires(item: Item) -> float:
    value = (item.get("expires_at") or {}).get("N")
    return float(value) if value is not None else float("inf")
