"""Deleting what an instance leaves behind once DynamoDB's TTL removed its instance item.

**Why.** A finished instance is kept for its retention (``expires_at`` on its instance item,
30 days by default). Its journal, event and chunk items were written with a TTL of their own,
``JOURNAL_HORIZON`` (two years) after they were written, because a live instance may sleep a
year without being loaded (see :mod:`lambda_workflows.aws.items`). Once the instance item is gone
nothing reads them, yet they were billed as storage for up to two years: for 1 KB steps, more
than running the steps cost (``make bench``, bench/cost_bench.py).

**How.** The table's stream (``OLD_IMAGE``) feeds SweepFunction, filtered by the event source
mapping (template.yaml) to the records of instance items removed by TTL; for each, the reaper
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

**Failures.** A record the reaper could not finish (a throttled Query, a delete that failed
after botocore's retries: a StorageError, as every adapter's AWS failure) is reported as a
batch item failure and retried by the event source mapping; deleting again is harmless (an
item already gone fails its condition). A record given up on costs only storage: its items
still expire by their own TTL.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from .errors import error_code, translate
from .items import INSTANCE_SK, JOURNAL_HORIZON, n

__all__ = ["CLOCK_MARGIN", "REAPERS", "ExpiredInstanceReaper", "expired_instance"]

REAPERS = 16
"""Deletes one record keeps in flight at most."""

CLOCK_MARGIN = 3600.0
"""Seconds the cut keeps clear of what a new instance writes, against clocks that disagree."""

Item = dict[str, Any]


class ExpiredInstanceReaper:
    """Deletes the items left in the partition of an instance whose instance item expired."""

    def __init__(self, client: Any, table: str, workers: int = REAPERS) -> None:
        self.client = client
        self.table = table
        self.workers = workers

    def reap(self, pk: str, expired_at: float) -> int:
        """Delete the items of partition ``pk`` written before ``expired_at`` (the removed
        instance item's ``expires_at``); how many were deleted.

        Raises:
            StorageError: a Query or a delete failed
            (:func:`lambda_workflows.aws.errors.translate`);
                the deletes that could be made were made.
        """
        try:
            return self._reap(pk, expired_at + JOURNAL_HORIZON - CLOCK_MARGIN)
        except (ClientError, BotoCoreError) as exc:
            raise translate(exc, "DynamoDB", "reaping an expired instance") from exc

    def _reap(self, pk: str, cut: float) -> int:
        doomed = [
            item["sk"]
            for item in self._partition(pk)
            if item["sk"]["S"] != INSTANCE_SK and _expires(item) < cut
        ]
        if not doomed:
            return 0
        with ThreadPoolExecutor(min(self.workers, len(doomed))) as pool:
            done = [pool.submit(self._delete, pk, sk, cut) for sk in doomed]
        # every delete was tried; one that failed fails the record (retried: see above)
        return sum(future.result() for future in done)

    def _partition(self, pk: str) -> Iterator[Item]:
        """Every item of ``pk``: its sort key and ``expires_at``, page after page."""
        query: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ProjectionExpression": "sk, expires_at",
        }
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
