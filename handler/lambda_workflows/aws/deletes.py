"""Deleting an instance on DynamoDB, and finishing every delete that was cut short.

**Why the cleanup is tracked.** A delete commits with one write: the tombstone replaces the
instance item (see :mod:`lambda_workflows.aws.items`), and the id reads as missing from then
on. Removing the rest of the partition takes more calls, and any of them can be throttled,
time out or never happen (a process that dies); and a writer that loaded the instance before
the delete can still write after it: a runner records the step it was running (a journal put
is conditional on its own key, not on the instance item), a restart under way claims a
generation and copies into it. So the tombstone carries what is still owed, and stays on the
sweep's due index (``due_shard = "deleted#<n>"``) until nothing is:

=============  ==============================================================================
``cleanup``    meaning =============
============================================================================== ``owed``
written so, due at once: the partition may still hold the instance's items ``settling``   cleared
once; due :data:`~lambda_workflows.engine.instances.deletion.SETTLE_SECONDS`
               after the delete, when no writer that loaded the instance before it is left
(absent)       cleared again after that and off the index: only the tombstone is left
=============  ==============================================================================

**Who finishes it.** The delete itself clears the partition and moves the tombstone to
``settling``; a failure there is logged, not raised (the delete is committed, and the cleanup
is owed). A delete of the id while its cleanup is ``owed`` (a client's retry after a timeout)
completes it and succeeds. The recovery sweep completes every due one. A create of the id
carries what is still owed over to a marker item ``sk = "D#<tombstone version>"`` with the
same attributes (see :mod:`lambda_workflows.aws.tombstones`), which the sweep finishes the
same way, then deletes; a create only writes (the trigger may neither query nor delete).

**What a clear removes, never an item of a new instance with the same id.** The keys a new
instance writes again (its instance item's chunks ``I\\x1dc…``, idempotency markers ``K#…``)
are deleted in the tombstone's own transaction (up to 99 of them; any more go right after,
in TransactWriteItems calls that check the tombstone still stands, and until they are gone a
create of the id is refused with a retryable error). The rest is read from sort keys: a new
instance starts above the tombstone's version and journal generation, so ``J#<g>…`` and
``G#<g>`` with ``g`` below the tombstone's generation, and ``E#<v>…`` with ``v`` below its
version (and their chunks), are the deleted instance's; they go in BatchWriteItem calls of 25
(unprocessed ones are sent again, with backoff). A clear removes at most a budget of items
(:data:`INLINE_ITEMS` in a request, :data:`SWEEP_ITEMS` per sweep): a larger partition stays
owed, and the next sweep goes on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.errors import InfrastructureError, StorageError
from lambda_workflows.engine.instances.ports import CLAIM_SPAN
from lambda_workflows.engine.model import InstanceRecord, InstanceRef

from . import items as it
from .boundary import ConditionFailed, call, conditional
from .tombstones import CARRIED_PREFIX, Cleanup, Owed, all_deleted_shards

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["INLINE_ITEMS", "SWEEP_ITEMS", "InstanceDeletes"]

T = TypeVar("T")
Item = dict[str, Any]
log = logging.getLogger("lambda_workflows.dynamodb")

INLINE_ITEMS = 250
"""Items a delete (or its retry) removes before it answers; the sweep removes the rest."""
SWEEP_ITEMS = 20_000
"""Items one sweep removes at most (SweepFunction has 120 s); the next sweep goes on."""
_SHARED = (it.INSTANCE_SK + it.CHUNK_MARK, it.EVENT_KEY_PREFIX)  # keys a new instance reuses
_BATCH = 25  # BatchWriteItem's limit per call
_TRANSACTION = 100  # TransactWriteItems' limit per call
_TRIES = 5  # BatchWriteItem calls per batch before its unprocessed items are left owed
_BACKOFF = 0.05  # seconds before the second call, doubled before each next one


@dataclasses.dataclass(frozen=True)
class Cleared:
    """What one clear did: items removed, and whether nothing it owns was left."""

    removed: int
    complete: bool


class InstanceDeletes:
    """Deletes instances on the table and finishes their cleanup (see the module docstring).

    Args:
        client: a boto3 DynamoDB client.
        table: the table name.
        clock: the time source.
        pause: how to wait between BatchWriteItem calls (tests pass one that only records).
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        clock: Clock,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.table = table
        self.clock = clock
        self.pause = pause

    # --- the delete and its retry ------------------------------------------------------------

    def delete(self, record: InstanceRecord) -> bool:
        """Replace the instance item by a tombstone if its version is still ``record``'s, then
        clear the partition; False when the version changed. See InstanceStore.delete."""
        now = self.clock.time()
        tombstone = it.tombstone_item(
            record.ref, record.version + 1, record.generation + CLAIM_SPAN + 1, now
        )
        owed = Owed.of(tombstone | {"cleanup": it.s(Cleanup.OWED.value)})
        assert owed is not None
        shared = self._shared_keys(owed.pk)  # no key of these is written without a new version
        tombstone |= owed.fields(due_at=now)
        if len(shared) >= _TRANSACTION:
            tombstone["shared_left"] = {"BOOL": True}  # see carry_over
        if not self._commit(record, tombstone, shared[: _TRANSACTION - 1]):
            return False
        try:
            self._remove_shared(owed, shared[_TRANSACTION - 1 :])
            self._finish(owed, INLINE_ITEMS)
        except InfrastructureError as exc:  # committed: the cleanup stays owed (the sweep)
            log.warning("the cleanup of deleted %s was cut short (%s); it is owed", owed.pk, exc)
        return True

    def _commit(self, record: InstanceRecord, tombstone: Item, shared: list[Item]) -> bool:
        """Write the tombstone, deleting ``shared`` in the same transaction (the keys a new
        instance with the id writes again never outlive the instance); False when the
        instance changed since ``record`` was read."""
        put: dict[str, Any] = {
            "TableName": self.table,
            "Item": tombstone,
            # version = :expected: deleted as it was decided (terminated, finished); a signal,
            # a restart or another delete since then wins, and we decide again. The
            # tombstone's version is above every version a runner holds, so each of its
            # conditional writes fails from now on.
            "ConditionExpression": "#version = :expected",
            "ExpressionAttributeNames": {"#version": "version"},
            "ExpressionAttributeValues": {":expected": it.n(record.version)},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        try:
            if shared:
                actions: list[Any] = [{"Put": put}]
                actions += [{"Delete": {"TableName": self.table, "Key": k}} for k in shared]
                conditional(lambda: self.client.transact_write_items(TransactItems=actions))
            else:
                conditional(lambda: self.client.put_item(**put))
        except ConditionFailed as refused:
            # our own write sent again after a timeout (or the same decision by another
            # caller) is committed: go on with the cleanup
            return _same_delete(refused.item, it.get_int(tombstone, "version"))
        return True

    def finish(self, ref: InstanceRef) -> bool:
        """Complete ``ref``'s delete if its cleanup is owed: True when it was."""
        owed = Owed.of(self._read(it.instance_pk(ref.workflow, ref.id), it.INSTANCE_SK))
        if owed is None or owed.state is not Cleanup.OWED:
            return False
        self._finish(owed, INLINE_ITEMS)
        return True

    def carry_over(self, tombstone: Item) -> None:
        """Before an instance is created in place of ``tombstone``: carry what its delete
        is still owed over to a marker item, which the sweep finishes. Only writes (the
        trigger creates instances, and may neither query nor delete).

        Raises:
            StorageError: keys the new instance writes again may still hold the deleted
                one's items (a delete cut short with more than 99 of them): retry in a few
                minutes, once the sweep removed them.
        """
        owed = Owed.of(tombstone)
        if owed is None:
            return
        if "shared_left" in tombstone:
            raise StorageError(
                f"the instance deleted under this id is still being cleaned up ({owed.pk}); "
                "retry in a few minutes"
            )
        carried = dataclasses.replace(owed, sk=f"{CARRIED_PREFIX}{owed.version:012d}")
        due_at = owed.deleted_at if owed.state is Cleanup.OWED else owed.settle_at
        marker = {
            "pk": it.s(owed.pk),
            "sk": it.s(carried.sk),
            "deleted_at": it.n(owed.deleted_at),
            "version": it.n(owed.version),
            "generation": it.n(owed.generation),
            "expires_at": it.n(self.clock.time() + it.JOURNAL_HORIZON),
        }
        # unconditional: the same marker written twice is one marker
        call(
            lambda: self.client.put_item(
                TableName=self.table, Item=marker | carried.fields(due_at=due_at)
            )
        )

    # --- the sweep -----------------------------------------------------------------------

    def finish_due(self, before: float, limit: int) -> int:
        """Finish the owed cleanups due before ``before``, at most ``limit`` of them and
        :data:`SWEEP_ITEMS` items in all; how many items were removed."""
        removed = 0
        for pk, sk in self._due(before, limit):
            if removed >= SWEEP_ITEMS:
                break
            owed = Owed.of(self._read(pk, sk))
            if owed is not None:  # None: finished meanwhile (the index lags the table)
                removed += self._finish(owed, SWEEP_ITEMS - removed).removed
        return removed

    def _due(self, before: float, limit: int) -> list[tuple[str, str]]:
        """The keys of the owed cleanups due before ``before``: a Query per shard, most
        overdue first."""
        found: list[tuple[float, str, str]] = []
        for shard in all_deleted_shards():
            page = call(
                lambda s=shard: self.client.query(  # type: ignore[misc]
                    TableName=self.table,
                    IndexName="by_due",
                    KeyConditionExpression="due_shard = :shard AND due_at < :before",
                    ExpressionAttributeValues={":shard": it.s(s), ":before": it.n(before)},
                    Limit=limit,
                )
            )
            for item in page.get("Items", []):
                due = it.get_n(item, "due_at") or 0.0
                found.append((due, str(it.get_s(item, "pk")), str(it.get_s(item, "sk"))))
        found.sort()
        return [(pk, sk) for _, pk, sk in found[:limit]]

    # --- clearing ------------------------------------------------------------------------

    def _finish(self, owed: Owed, budget: int) -> Cleared:
        """Clear what ``owed`` covers (up to ``budget`` items); when nothing is left, move
        it on: to settling, or, once no late writer can be left, off the due index."""
        cleared = self._clear(owed, budget)
        if cleared.complete:
            self._move_on(owed)
        return cleared

    def _clear(self, owed: Owed, budget: int) -> Cleared:
        plain, shared, seen_all = self._doomed(owed, budget)
        removed = self._remove_shared(owed, shared)
        unprocessed = self._remove_plain(plain)
        return Cleared(removed + len(plain) - unprocessed, seen_all and not unprocessed)

    def _doomed(self, owed: Owed, budget: int) -> tuple[list[Item], list[Item], bool]:
        """The keys to remove, in order, up to ``budget`` of them: plain ones, shared ones
        (only while the tombstone stands), and whether that is all of them."""
        plain: list[Item] = []
        shared: list[Item] = []
        query: dict[str, Any] = {
            "TableName": self.table,
            # the whole partition, keys only
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": it.s(owed.pk)},
            "ProjectionExpression": "pk, sk",
            "ConsistentRead": True,
        }
        while True:
            page = call(lambda q=query: self.client.query(**q))  # type: ignore[misc]
            for item in page.get("Items", []):
                sk = item["sk"]["S"]
                key = {"pk": item["pk"], "sk": item["sk"]}
                if owed.owns(sk):
                    plain.append(key)
                elif owed.on_tombstone and sk.startswith(_SHARED):
                    shared.append(key)
                if len(plain) + len(shared) >= budget:
                    return plain, shared, False
            start = page.get("LastEvaluatedKey")
            if not start:
                return plain, shared, True
            query["ExclusiveStartKey"] = start

    def _shared_keys(self, pk: str) -> list[Item]:
        """The keys of the partition a new instance writes again (a Query per prefix)."""
        keys: list[Item] = []
        for prefix in _SHARED:
            query: dict[str, Any] = {
                "TableName": self.table,
                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
                "ExpressionAttributeValues": {":pk": it.s(pk), ":prefix": it.s(prefix)},
                "ProjectionExpression": "pk, sk",
                "ConsistentRead": True,
            }
            while True:
                page = call(lambda q=query: self.client.query(**q))  # type: ignore[misc]
                keys += [{"pk": i["pk"], "sk": i["sk"]} for i in page.get("Items", [])]
                if "LastEvaluatedKey" not in page:
                    break
                query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return keys

    def _remove_shared(self, owed: Owed, keys: list[Item]) -> int:
        """Delete ``keys`` while the tombstone still stands (a transaction per 99, each with
        a check of the tombstone); how many were deleted (0 once it no longer stands)."""
        removed = 0
        check: dict[str, Any] = {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": {"pk": it.s(owed.pk), "sk": it.s(it.INSTANCE_SK)},
                # still this delete's tombstone: these keys are not a new instance's yet
                "ConditionExpression": "attribute_exists(cleanup) AND #version = :version",
                "ExpressionAttributeNames": {"#version": "version"},
                "ExpressionAttributeValues": {":version": it.n(owed.version)},
            }
        }
        for start in range(0, len(keys), _TRANSACTION - 1):
            group = keys[start : start + _TRANSACTION - 1]
            actions: list[Any] = [check]
            actions += [{"Delete": {"TableName": self.table, "Key": k}} for k in group]
            try:
                conditional(
                    lambda a=actions: self.client.transact_write_items(  # type: ignore[misc]
                        TransactItems=a
                    )
                )
            except ConditionFailed:
                return removed  # a new instance replaced the tombstone: the keys are its own
            removed += len(group)
        return removed

    def _remove_plain(self, keys: list[Item]) -> int:
        """Delete ``keys`` in BatchWriteItem calls; how many were left unprocessed."""
        left = 0
        for start in range(0, len(keys), _BATCH):
            pending: list[Any] = [
                {"DeleteRequest": {"Key": k}} for k in keys[start : start + _BATCH]
            ]
            for attempt in range(_TRIES):
                if attempt:
                    self.pause(_BACKOFF * 2 ** (attempt - 1))
                answer = call(
                    lambda p=pending: self.client.batch_write_item(  # type: ignore[misc]
                        RequestItems={self.table: p}
                    )
                )
                pending = list(answer.get("UnprocessedItems", {}).get(self.table, []))
                if not pending:
                    break
            left += len(pending)
        return left

    def _move_on(self, owed: Owed) -> None:
        """After a clear that left nothing: settled when no late writer can be left (the
        tombstone leaves the due index, a carried marker is deleted), else settling."""
        settled = self.clock.time() >= owed.settle_at
        if settled and not owed.on_tombstone:
            call(
                lambda: self.client.delete_item(
                    TableName=self.table, Key={"pk": it.s(owed.pk), "sk": it.s(owed.sk)}
                )
            )
            return
        if settled:
            update = "REMOVE cleanup, due_at, due_shard, shared_left"
            values: dict[str, Any] = {}
        else:
            update = "SET cleanup = :settling, due_at = :settle_at REMOVE shared_left"
            values = {":settling": it.s(Cleanup.SETTLING.value), ":settle_at": it.n(owed.settle_at)}
        # still the tombstone (or marker) of this delete: an instance created since keeps its
        # item (and its due time) as they are
        condition = "attribute_exists(cleanup) AND #version = :version"
        # refused: replaced by a new instance (which carried it over), or finished by another
        with contextlib.suppress(ConditionFailed):
            conditional(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key={"pk": it.s(owed.pk), "sk": it.s(owed.sk)},
                    UpdateExpression=update,
                    ConditionExpression=condition,
                    ExpressionAttributeNames={"#version": "version"},
                    ExpressionAttributeValues=values | {":version": it.n(owed.version)},
                )
            )

    # --- helpers -------------------------------------------------------------------------

    def _read(self, pk: str, sk: str) -> Item | None:
        answer = call(
            lambda: self.client.get_item(
                TableName=self.table,
                Key={"pk": it.s(pk), "sk": it.s(sk)},
                ConsistentRead=True,
            )
        )
        item = answer.get("Item")
        return None if item is None else dict(item)


def _same_delete(item: Item | None, version: int) -> bool:
    """True when ``item`` is the tombstone a delete at ``version`` writes."""
    return item is not None and it.is_deleted(item) and it.get_int(item, "version") == version
