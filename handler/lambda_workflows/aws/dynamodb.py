"""The instance store on one DynamoDB table (see :mod:`lambda_workflows.aws.items` for the layout).

What makes results exactly-once: a journal entry is written with a conditional put
(``attribute_not_exists``) and is never updated. When the condition fails, DynamoDB hands back
the item already there (``ReturnValuesOnConditionCheckFailure=ALL_OLD``) and that recorded
value is the one everybody continues with: the first writer wins, always.

What makes wake-ups never lost: every write to the instance item bumps ``version``, and the
runner's writes are conditional on the version it loaded (see ``lambda_workflows.engine.advance``).

A failed condition (ConditionalCheckFailed, or a transaction cancelled by one) is a lost race,
handled in place here; every other failure goes through
:func:`lambda_workflows.aws.errors.translate` and becomes a StorageError, which the engine treats as
"try again later", never as a step failure. A timeout after sending leaves the outcome unknown;
callers resolve it by reading back (a conditional put that did happen makes the retry lose to itself
and hand back the same entry), never by guessing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.errors import (
    InstanceAlreadyExists,
    InstanceNotFound,
    StorageError,
)
from lambda_workflows.engine.model import (
    FINISHED,
    RUNNABLE,
    EventRecord,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    JournalEntry,
)
from lambda_workflows.engine.ports import BatchCreateResult, InstancePage, InstanceState
from lambda_workflows.engine.recovery import all_due_shards, due_shard
from lambda_workflows.engine.transitions import Change
from lambda_workflows.engine.usage import schedules_in

from . import items as it
from .child_writes import ChildWrites
from .errors import error_code, translate
from .instance_listing import ListingIndexes
from .journal_writes import off_loop
from .listing import START, in_threads, one_by_one, payload_of, position_of
from .shards import INDEX_SHARDS, Listing

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from .cursors import CursorSigner
    from .deletes import InstanceDeletes
    from .slots import DynamoSlots

T = TypeVar("T")
log = logging.getLogger("lambda_workflows.dynamodb")

_TRANSACTION_BYTES = 3_500_000  # under the 4 MB TransactWriteItems limit
_TRANSACTION_ITEMS = 100
_BATCH_WRITE = 25  # BatchWriteItem's limit per call
_BATCH_TRIES = 8  # calls per batch before unprocessed items are given up on
# leased and set running; waitingForPause is leased as it is (the runner pauses it)
_LEASED_TO_RUN = sorted(RUNNABLE - {InstanceStatus.WAITING_FOR_PAUSE})
# the lease is still the one this delivery of this message took (see engine.advance)
_HELD_BY = "lease_owner = :owner AND lease_delivery = :delivery"
# nobody holds a lease live at :free_at (a lease's own condition, minus the takeover of an
# earlier delivery's: see acquire_lease)
_LEASE_FREE = " AND (attribute_not_exists(lease_owner) OR lease_expires_at < :free_at)"


def _boundary(call: Callable[[], T]) -> T:
    """Run one DynamoDB call, turning ClientErrors and botocore errors into domain errors."""
    try:
        return call()
    except (ClientError, BotoCoreError) as exc:
        raise translate(exc, "DynamoDB") from exc


class DynamoStore:
    """:class:`~lambda_workflows.engine.ports.InstanceStore` on one DynamoDB table.

    Args:
        client: a boto3 DynamoDB client (injected: tests pass one bound to moto).
        table: the table name.
        clock: the time source (TTL stamps).
        parallel_writes: journal writes a pass awaits run in threads, so that steps finishing
            together record together (see :mod:`lambda_workflows.aws.journal_writes`); False records
            each one inline, in call order (a harness that numbers every AWS call in order).
        index_shards: shards of each listing index key (see :mod:`lambda_workflows.aws.shards`: it
            may grow between deployments, never shrink). A listing queries the shards at
            the same time unless ``parallel_writes`` is False (then in order).
        legacy_listing: a listing also reads the legacy ``by_workflow`` index, and the sweep
            moves items off it (see :mod:`lambda_workflows.aws.shards`); False once the
            stack dropped it (docs/deploy.md).
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        clock: Clock,
        *,
        parallel_writes: bool = True,
        index_shards: int = INDEX_SHARDS,
        legacy_listing: bool = True,
    ) -> None:
        self.client = client
        self.legacy_listing = legacy_listing
        self.table = table
        self.clock = clock
        self.parallel_writes = parallel_writes
        self.index_shards = index_shards

    @functools.cached_property
    def cursors(self) -> CursorSigner:
        """Signs and checks listing cursors (made on first use: only listings need it)."""
        from .cursors import CursorSigner

        return CursorSigner(self.client, self.table)

    # --- creating -------------------------------------------------------------------------

    def create(self, record: InstanceRecord) -> None:
        try:
            # attribute_not_exists(pk): only if no instance with this id exists — a second
            # create of the same id fails instead of overwriting.
            self._put_instance(record, "attribute_not_exists(pk)", {})
        except _ConditionFailed as taken:
            if taken.item is None or not it.is_deleted(taken.item):
                raise InstanceAlreadyExists(record.workflow, record.id) from None
            self._create_over(record, taken.item)

    def _create_over(self, record: InstanceRecord, tombstone: dict[str, Any]) -> None:
        """Create ``record`` in place of a deleted instance's tombstone, above its version
        and journal generation (a late writer of the deleted instance is never read); what
        that delete still owes the sweep is carried over first (see
        :mod:`lambda_workflows.aws.deletes`)."""
        self.deletes.carry_over(tombstone)
        version = it.get_int(tombstone, "version")
        generation = max(record.generation, it.get_int(tombstone, "generation"))
        reborn = dataclasses.replace(record, version=version + 1, generation=generation)
        try:
            # still that tombstone: nobody created (or deleted) the id meanwhile
            self._put_instance(
                reborn,
                "attribute_exists(deleted_at) AND #version = :tombstone",
                {":tombstone": it.n(version)},
            )
        except _ConditionFailed:
            raise InstanceAlreadyExists(record.workflow, record.id) from None

    def _put_instance(self, record: InstanceRecord, condition: str, values: dict[str, Any]) -> None:
        """Write a new instance item (and its chunks) if ``condition`` holds; _ConditionFailed
        carries the item that was there."""
        item, chunks = it.instance_item(record, self.index_shards)
        put: dict[str, Any] = {
            "TableName": self.table,
            "Item": item,
            "ConditionExpression": condition,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if values:
            put |= {"ExpressionAttributeNames": {"#version": "version"}}
            put |= {"ExpressionAttributeValues": values}
        if chunks:
            try:
                self._transact([{"Put": put}, *({"Put": self._new(c)} for c in chunks)])
            except _ConditionFailed as failed:
                raise _ConditionFailed(failed.old_item(0)) from None
        else:
            _boundary_raw(lambda: self.client.put_item(**put))

    def create_many(self, records: Sequence[InstanceRecord]) -> BatchCreateResult:
        """One transaction for the batch when it fits (≤ 100 items, < 4 MB); ids that exist
        make the transaction fail with a per-item reason, and the rest is retried without them.
        """
        result = BatchCreateResult()
        pending = list(records)
        for group in self._groups(pending):
            remaining = list(group)
            while remaining:
                puts = []
                for record in remaining:
                    item, chunks = it.instance_item(record, self.index_shards)
                    puts.append((record, item, chunks))
                if any(chunks for _, _, chunks in puts):
                    self._create_each(remaining, result)  # chunked params: a transaction each
                    break
                actions = [
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": item,
                            # only if the id is free (see create)
                            "ConditionExpression": "attribute_not_exists(pk)",
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    }
                    for _, item, _ in puts
                ]
                try:
                    self._transact(actions)
                except _ConditionFailed as failed:
                    taken = {remaining[i].id for i in failed.indexes if i < len(remaining)}
                    deleted = [  # ids of deleted instances are free: created one by one
                        remaining[i]
                        for i in failed.indexes
                        if i < len(remaining) and it.is_deleted(failed.old_item(i) or {})
                    ]
                    self._create_each(deleted, result)
                    reborn = {r.id for r in deleted}
                    result.existing.extend(
                        r.id for r in remaining if r.id in taken and r.id not in reborn
                    )
                    remaining = [r for r in remaining if r.id not in taken]
                    continue
                result.created.extend(r.id for r in remaining)
                remaining = []
        return result

    def _create_each(self, records: Sequence[InstanceRecord], result: BatchCreateResult) -> None:
        for record in records:
            try:
                self.create(record)
                result.created.append(record.id)
            except InstanceAlreadyExists:
                result.existing.append(record.id)

    def _groups(self, records: list[InstanceRecord]) -> list[list[InstanceRecord]]:
        groups: list[list[InstanceRecord]] = [[]]
        size = 0
        for record in records:
            weight = len(record.params) + 512
            if groups[-1] and (
                len(groups[-1]) >= _TRANSACTION_ITEMS or size + weight > _TRANSACTION_BYTES
            ):
                groups.append([])
                size = 0
            groups[-1].append(record)
            size += weight
        return [g for g in groups if g]

    # --- reading --------------------------------------------------------------------------

    def get(self, ref: InstanceRef) -> InstanceRecord:
        response = _boundary(
            lambda: self.client.get_item(
                TableName=self.table,
                Key=self._key(ref, it.INSTANCE_SK),
                ConsistentRead=True,
            )
        )
        item = response.get("Item")
        if item is None or it.is_deleted(item):
            raise _not_found(ref)
        return it.instance_record(item)

    def load(self, ref: InstanceRef) -> InstanceState:
        """One strongly consistent Query over the instance's partition (paginated past 1 MB)."""
        pk = it.instance_pk(ref.workflow, ref.id)
        found: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        while True:
            query: dict[str, Any] = {
                "TableName": self.table,
                # the whole partition: instance item, events, journal, chunks
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": it.s(pk)},
                "ConsistentRead": True,
            }
            if start:
                query["ExclusiveStartKey"] = start
            page = _boundary(lambda q=query: self.client.query(**q))  # type: ignore[misc]
            found.extend(page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if not start:
                break
        chunks = {i["sk"]["S"]: i for i in found if it.CHUNK_MARK in i["sk"]["S"]}
        instance = next((i for i in found if i["sk"]["S"] == it.INSTANCE_SK), None)
        if instance is None or it.is_deleted(instance):
            raise _not_found(ref)
        record = it.instance_record(instance, chunks)
        prefix = it.journal_sk(record.generation, "")
        entries = [
            it.journal_entry(i, chunks)
            for i in found
            if i["sk"]["S"].startswith(prefix) and it.CHUNK_MARK not in i["sk"]["S"]
        ]
        events = [
            it.event_record(i, chunks)
            for i in found
            if i["sk"]["S"].startswith(it.EVENT_PREFIX) and it.CHUNK_MARK not in i["sk"]["S"]
        ]
        if record.status not in FINISHED:
            self._refresh_ttl(found)
        return InstanceState(
            record, entries, [e for e in events if e.generation == record.generation]
        )

    def _refresh_ttl(self, found: list[dict[str, Any]]) -> None:
        """Push back the TTL of items of a very long-lived instance before they expire."""
        soon = self.clock.time() + it.REFRESH_BEFORE
        for item in found:
            ttl = item.get("expires_at")
            if item["sk"]["S"] != it.INSTANCE_SK and ttl is not None and float(ttl["N"]) < soon:
                later = it.n(self.clock.time() + it.JOURNAL_HORIZON)
                with contextlib.suppress(_ConditionFailed):  # deleted since it was read
                    _boundary_raw(
                        lambda i=item, v=later: self.client.update_item(  # type: ignore[misc]
                            TableName=self.table,
                            Key={"pk": i["pk"], "sk": i["sk"]},
                            UpdateExpression="SET expires_at = :t",
                            # attribute_exists(pk): an update never recreates an item the
                            # instance's delete removed after the load read it
                            ConditionExpression="attribute_exists(pk)",
                            ExpressionAttributeValues={":t": v},
                        )
                    )

    def list_instances(
        self,
        workflow: str,
        status: InstanceStatus | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> InstancePage:
        """A merge of the listing's shards, newest first (see :mod:`lambda_workflows.aws.listing`
        for the cursor and :mod:`lambda_workflows.aws.instance_listing` for what a page costs:
        one Query per shard not yet exhausted, a few to top up a shard holding more than its
        share of the page, and one BatchGetItem for the page's items)."""
        listing = Listing(workflow, None if status is None else status.value, self.legacy_listing)
        position = START
        if cursor:
            # the signature is checked before the cursor is parsed; its shape after
            position = position_of(_boundary(lambda: self.cursors.verify(cursor)), listing)
        items, after = self.listing_indexes.page(listing, position, limit, self._together)
        records = [it.instance_record(i) for i in items]
        if after is None:
            return InstancePage(records, None)
        payload = payload_of(listing, after)
        return InstancePage(records, _boundary(lambda: self.cursors.sign(payload)))

    def upgrade_listing(self, limit: int = 1000) -> int:
        """Move up to ``limit`` instance items off the legacy listing indexes (the recovery
        sweep: see :mod:`lambda_workflows.aws.instance_listing`)."""
        if not self.legacy_listing:
            return 0
        return self.listing_indexes.upgrade_legacy(limit)

    @functools.cached_property
    def listing_indexes(self) -> ListingIndexes:
        """The listing indexes (see :mod:`lambda_workflows.aws.instance_listing`)."""
        return ListingIndexes(self.client, self.table, self.index_shards)

    def _together(self, calls: list[Callable[[], T]]) -> list[T]:
        """Independent reads (a Query per shard) at the same time, or in order when the store
        runs its calls in order (``parallel_writes`` False: a harness numbering every call)."""
        return in_threads(calls) if self.parallel_writes else one_by_one(calls)

    def seal_cursor(self, position: Mapping[str, Any]) -> str:
        """A page's cursor, signed with the stack's key (see :mod:`.cursors`)."""
        return _boundary(lambda: self.cursors.sign(position))

    def open_cursor(self, cursor: str) -> Any:
        """The position a :meth:`seal_cursor` cursor carries; InvalidInput for anything else."""
        return _boundary(lambda: self.cursors.verify(cursor))

    def overdue(self, before: float, limit: int = 1000) -> list[InstanceRef]:
        """A Query per due-index shard (keys only): no scan, whatever the table holds."""
        found: list[tuple[float, InstanceRef]] = []
        for shard in all_due_shards():
            query: dict[str, Any] = {
                "TableName": self.table,
                "IndexName": "by_due",
                # the shard's instances due before the cut-off, most overdue first
                "KeyConditionExpression": "due_shard = :shard AND due_at < :before",
                "ExpressionAttributeValues": {":shard": it.s(shard), ":before": it.n(before)},
                "Limit": limit,
            }
            page = _boundary(lambda q=query: self.client.query(**q))  # type: ignore[misc]
            for item in page.get("Items", []):
                ref = it.instance_ref(str(it.get_s(item, "pk")))
                if ref is not None:
                    found.append((it.get_n(item, "due_at") or 0.0, ref))
        found.sort(key=lambda f: f[0])
        return [ref for _, ref in found[:limit]]

    # --- the journal ----------------------------------------------------------------------

    def record(self, ref: InstanceRef, generation: int, entry: JournalEntry) -> JournalEntry:
        pk = it.instance_pk(ref.workflow, ref.id)
        item, chunks = it.entry_item(pk, generation, entry, self.clock.time())
        put = {
            "TableName": self.table,
            "Item": item,
            # attribute_not_exists(pk): a journal entry is recorded once and never changed;
            # a second writer (duplicate message, concurrent runner) loses and gets ours back.
            "ConditionExpression": "attribute_not_exists(pk)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        try:
            if chunks:
                self._transact([{"Put": put}, *({"Put": self._new(c)} for c in chunks)])
            else:
                _boundary_raw(lambda: self.client.put_item(**put))  # type: ignore[arg-type]
        except _ConditionFailed as lost:
            return self._winner(ref, lost.item, item)
        return entry

    def record_child_wait(
        self,
        parent: InstanceRef,
        generation: int,
        wait: JournalEntry,
        child: InstanceRecord | None = None,
    ) -> JournalEntry | None:
        """One transaction: see :mod:`lambda_workflows.aws.child_writes`."""
        writes = ChildWrites(self.client, self.table, self.index_shards)
        return writes.record(parent, generation, wait, child, self.clock.time())

    async def record_async(
        self, ref: InstanceRef, generation: int, entry: JournalEntry
    ) -> JournalEntry:
        if not self.parallel_writes:
            return self.record(ref, generation, entry)
        return await off_loop(self.record, ref, generation, entry)

    def _winner(
        self, ref: InstanceRef, old: dict[str, Any] | None, mine: dict[str, Any]
    ) -> JournalEntry:
        """The entry that won the race, read back from the failed condition (or the table)."""
        if old is None:  # some SDKs omit ALL_OLD in transactions: read it
            old = _boundary(
                lambda: self.client.get_item(
                    TableName=self.table,
                    Key={"pk": mine["pk"], "sk": mine["sk"]},
                    ConsistentRead=True,
                )
            ).get("Item")
            if old is None:
                raise StorageError(f"journal entry {mine['sk']['S']!r} of {ref} vanished")
        chunks: dict[str, Any] = {}
        if it.has_chunks(old, "result"):
            chunks = self._chunks_of(old)
        return it.journal_entry(old, chunks)

    def _chunks_of(self, owner: dict[str, Any]) -> dict[str, Any]:
        page = _boundary(
            lambda: self.client.query(
                TableName=self.table,
                # the chunk items of one owner: its sort key followed by the chunk mark
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues={
                    ":pk": owner["pk"],
                    ":prefix": it.s(owner["sk"]["S"] + it.CHUNK_MARK),
                },
                ConsistentRead=True,
            )
        )
        return {i["sk"]["S"]: i for i in page.get("Items", [])}

    # --- restarts and deletes -------------------------------------------------------------

    def claim_generation(self, ref: InstanceRef, generation: int, token: str) -> bool:
        pk = it.instance_pk(ref.workflow, ref.id)
        put = {
            "TableName": self.table,
            "Item": it.claim_item(pk, generation, token, self.clock.time()),
            # attribute_not_exists(pk): one restart per generation; another restart that
            # claimed it first keeps it (and a retry of our own claim finds our token)
            "ConditionExpression": "attribute_not_exists(pk)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        try:
            _boundary_raw(lambda: self.client.put_item(**put))  # type: ignore[arg-type]
        except _ConditionFailed as taken:
            holder = taken.item
            if holder is None:  # some SDKs omit ALL_OLD: read it
                holder = _boundary(
                    lambda: self.client.get_item(
                        TableName=self.table,
                        Key=self._key(ref, it.claim_sk(generation)),
                        ConsistentRead=True,
                    )
                ).get("Item")
            return holder is not None and it.get_s(holder, "token") == token
        return True

    def seed_generation(
        self,
        ref: InstanceRef,
        generation: int,
        entries: Sequence[JournalEntry],
        events: Sequence[EventRecord],
    ) -> None:
        # Unconditional puts: the generation is claimed by the restart writing it, nobody
        # reads it before the instance moves to it, and writing the same copies twice is
        # harmless.
        pk = it.instance_pk(ref.workflow, ref.id)
        now = self.clock.time()
        items: list[dict[str, Any]] = []
        for entry in entries:
            item, chunks = it.entry_item(pk, generation, entry, now)
            item[it.SEEDED] = {"BOOL": True}  # a copy: no step.completed for it (table_stream)
            items += [item, *chunks]
        for event in events:
            item, chunks = it.event_item(pk, event, now)
            items += [item, *chunks]
        self._batch_write([{"PutRequest": {"Item": item}} for item in items])

    def delete(self, record: InstanceRecord) -> bool:
        return self.deletes.delete(record)

    def finish_delete(self, ref: InstanceRef) -> bool:
        return self.deletes.finish(ref)

    def finish_deletes(self, before: float, limit: int = 1000) -> int:
        return self.deletes.finish_due(before, limit)

    @functools.cached_property
    def deletes(self) -> InstanceDeletes:
        """Deletes and their cleanup (see lambda_workflows.aws.deletes)."""
        from .deletes import InstanceDeletes

        return InstanceDeletes(self.client, self.table, self.clock)

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        """BatchWriteItem in calls of 25, sending unprocessed items again (a few times); what
        is still unprocessed after that raises StorageError (a restart's copies: the restart
        fails, nothing moved to them)."""
        for start in range(0, len(requests), _BATCH_WRITE):
            pending = requests[start : start + _BATCH_WRITE]
            for _ in range(_BATCH_TRIES):
                if not pending:
                    break
                answer = _boundary(
                    lambda p=pending: self.client.batch_write_item(  # type: ignore[misc]
                        RequestItems={self.table: p}
                    )
                )
                unprocessed: list[Any] = list(
                    answer.get("UnprocessedItems", {}).get(self.table, [])
                )
                pending = unprocessed
            if pending:
                raise StorageError(f"DynamoDB left {len(pending)} write(s) unprocessed; retry")

    # --- events ---------------------------------------------------------------------------

    def add_event(
        self, ref: InstanceRef, event: EventRecord, expected_version: int, due_at: float | None
    ) -> EventRecord | None:
        pk = it.instance_pk(ref.workflow, ref.id)
        now = self.clock.time()
        item, chunks = it.event_item(pk, event, now)
        sets = "version = :next, updated_at = :now"
        values: dict[str, Any] = {
            ":next": it.n(expected_version + 1),
            ":expected": it.n(expected_version),
            ":now": it.n(now),
            ":c": it.s("complete"),
            ":e": it.s("errored"),
            ":t": it.s("terminated"),
        }
        if due_at is not None:
            sets += ", due_at = :due, due_shard = :shard"
            values |= {":due": it.n(due_at), ":shard": it.s(due_shard(ref))}
        bump = {
            "Update": {
                "TableName": self.table,
                "Key": self._key(ref, it.INSTANCE_SK),
                # item_writes: every item of this transaction (see lambda_workflows.engine.usage)
                "UpdateExpression": "SET " + sets + " ADD item_writes :written",
                # version = :expected: nothing changed since the sender read the instance, so
                # the event's id (the new version) sorts after every event committed before it
                # — FIFO from the store, never from a clock — and the sender's decision to
                # wake the instance or not was taken on its current state. Not finished:
                # events to finished instances are refused.
                "ConditionExpression": "version = :expected AND NOT (#s IN (:c, :e, :t))",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": values,
            }
        }
        actions = [bump, {"Put": self._new(item)}]
        if event.key is not None:
            marker = self._new(it.event_key_item(pk, event, now))
            # the key's marker exists: this event was sent before; hand back that one
            marker["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
            actions.append({"Put": marker})
        actions += [{"Put": self._new(c)} for c in chunks]
        values[":written"] = it.n(len(actions))
        try:
            self._transact(actions)
        except _ConditionFailed as failed:
            if event.key is not None and 2 in failed.indexes:
                return self.find_event(ref, event.key)
            if 0 in failed.indexes:
                self.get(ref)  # raises InstanceNotFound when it does not exist
                return None
            raise StorageError(f"event {event.id} of {ref} was already stored") from None
        return event

    def find_event(self, ref: InstanceRef, key: str) -> EventRecord | None:
        response = _boundary(
            lambda: self.client.get_item(
                TableName=self.table,
                Key=self._key(ref, it.EVENT_KEY_PREFIX + key),
                ConsistentRead=True,
            )
        )
        item = response.get("Item")
        return None if item is None else it.keyed_event(item)

    # --- the instance item ----------------------------------------------------------------

    def update(
        self,
        ref: InstanceRef,
        expected_version: int,
        change: Change,
        *,
        lease_free_at: float | None = None,
    ) -> InstanceRecord | None:
        parts = it.change_update(ref, change, expected_version + 1, self.clock.time())
        parts.names["#version"] = "version"
        # what it used, in this same write (see lambda_workflows.engine.usage)
        parts.add("item_writes", 1 + len(parts.chunks))
        if scheduled := schedules_in(change):
            parts.add("schedules", scheduled)
        # version = :expected — nobody (event, control, other runner) wrote since we read
        condition = "#version = :expected"
        values = parts.values | {":expected": it.n(expected_version)}
        if lease_free_at is not None:
            # a runner's write without a lease (engine.lazy_lease): also the lease's own check,
            # nobody holds one live now — a runner whose expired lease was still renewed since
            # our read keeps the instance, as it would have kept it from our lease
            condition += _LEASE_FREE
            values[":free_at"] = it.n(lease_free_at)
        update = {
            "TableName": self.table,
            "Key": self._key(ref, it.INSTANCE_SK),
            "UpdateExpression": parts.expression(),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": parts.names,
            "ExpressionAttributeValues": values,
        }
        try:
            if parts.chunks:
                # a large output's chunks, unconditional: a restarted instance's next output
                # replaces them (the version condition on the update guards the whole write)
                chunks = ({"Put": {"TableName": self.table, "Item": c}} for c in parts.chunks)
                self._transact([{"Update": update}, *chunks])
                return self.get(ref)
            response = _boundary_raw(
                lambda: self.client.update_item(**update, ReturnValues="ALL_NEW")  # type: ignore[arg-type]
            )
        except _ConditionFailed:
            return None
        return it.instance_record(response["Attributes"])

    def acquire_lease(
        self,
        ref: InstanceRef,
        owner: str,
        now: float,
        expires_at: float,
        *,
        needs_slot: bool = False,
        delivery: int = 1,
    ) -> InstanceRecord | None:
        values: dict[str, Any] = {
            ":owner": it.s(owner),
            ":delivery": it.n(delivery),
            ":expires": it.n(expires_at),
            ":now": it.n(now),
            ":one": it.n(1),
            ":running": it.s(InstanceStatus.RUNNING.value),
            ":shard": it.s(due_shard(ref)),
            **{f":s{i}": it.s(s.value) for i, s in enumerate(_LEASED_TO_RUN)},
        }
        base = (
            "ADD invocations :one, item_writes :one "  # what it used: see engine.usage
            "SET lease_owner = :owner, lease_delivery = :delivery, lease_expires_at = :expires, "
            "version = version + :one, updated_at = :now, "
            "started_at = if_not_exists(started_at, :now), due_at = :expires, due_shard = :shard"
        )
        # runnable (queued, running, waiting) and nobody else holds a live lease: one runner
        # at a time; an expired lease (a runner that died) may be taken over, and so may one
        # an earlier delivery of the same message held (it gave the message back or died), but
        # not one of the same delivery: a copy SQS handed to a second runner meanwhile
        free = (
            "(attribute_not_exists(lease_owner) OR lease_expires_at < :now"
            " OR (lease_owner = :owner AND lease_delivery < :delivery))"
        )
        if needs_slot:  # a limited workflow's instance runs only holding a slot (engine.slots)
            free += " AND attribute_exists(slot)"
        attempt = {
            "TableName": self.table,
            "Key": self._key(ref, it.INSTANCE_SK),
            "UpdateExpression": base + ", #s = :running",
            "ConditionExpression": f"#s IN (:s0, :s1, :s2) AND {free}",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": values,
            "ReturnValues": "ALL_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        try:
            response = _boundary_raw(lambda: self.client.update_item(**attempt))  # type: ignore[arg-type]
            return it.instance_record(response["Attributes"])
        except _ConditionFailed as failed:
            old = failed.item
            if old is None or it.get_s(old, "status") != InstanceStatus.WAITING_FOR_PAUSE.value:
                return None
        return self._lease_waiting_for_pause(attempt, base, free, values)

    def _lease_waiting_for_pause(
        self, attempt: dict[str, Any], base: str, free: str, values: dict[str, Any]
    ) -> InstanceRecord | None:
        """A lease on a waitingForPause instance, taken without touching its status (the
        runner pauses it): ``attempt`` (the lease that sets running) minus its status change."""
        second = {
            **attempt,
            "UpdateExpression": base,
            "ConditionExpression": f"#s = :wfp AND {free}",
            "ExpressionAttributeValues": {
                k: v for k, v in values.items() if k not in (":running", ":s0", ":s1", ":s2")
            }
            | {":wfp": it.s(InstanceStatus.WAITING_FOR_PAUSE.value)},
        }
        try:
            response = _boundary_raw(lambda: self.client.update_item(**second))
        except _ConditionFailed:
            return None
        return it.instance_record(response["Attributes"])

    def release_lease(
        self, ref: InstanceRef, owner: str, due_at: float, *, delivery: int = 1
    ) -> None:
        # still ours (this delivery's): never drop a lease another runner took over
        with contextlib.suppress(_ConditionFailed):
            _boundary_raw(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=self._key(ref, it.INSTANCE_SK),
                    UpdateExpression=(
                        "REMOVE lease_owner, lease_expires_at, lease_delivery"
                        " SET due_at = :due, due_shard = :shard"
                        " ADD item_writes :one"  # see lambda_workflows.engine.usage
                    ),
                    ConditionExpression=_HELD_BY,
                    ExpressionAttributeValues={
                        ":owner": it.s(owner),
                        ":delivery": it.n(delivery),
                        ":due": it.n(due_at),
                        ":shard": it.s(due_shard(ref)),
                        ":one": it.n(1),
                    },
                )
            )

    def renew_lease(
        self, ref: InstanceRef, owner: str, expires_at: float, *, delivery: int = 1
    ) -> InstanceRecord | None:
        try:
            response = _boundary_raw(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=self._key(ref, it.INSTANCE_SK),
                    # the write counts itself (see lambda_workflows.engine.usage)
                    UpdateExpression="SET lease_expires_at = :expires ADD item_writes :one",
                    # still ours: a runner whose lease was taken over (by another message, or
                    # by a later delivery of its own) must stop
                    ConditionExpression=_HELD_BY,
                    ExpressionAttributeValues={
                        ":owner": it.s(owner),
                        ":delivery": it.n(delivery),
                        ":expires": it.n(expires_at),
                        ":one": it.n(1),
                    },
                    ReturnValues="ALL_NEW",
                )
            )
        except _ConditionFailed:
            return None
        return it.instance_record(response["Attributes"])

    @functools.cached_property
    def slots(self) -> DynamoSlots:
        """The slots of workflows with a concurrency limit (see lambda_workflows.aws.slots)."""
        from .slots import DynamoSlots

        return DynamoSlots(self.client, self.table)

    # --- helpers --------------------------------------------------------------------------

    def _key(self, ref: InstanceRef, sk: str) -> dict[str, Any]:
        return {"pk": it.s(it.instance_pk(ref.workflow, ref.id)), "sk": it.s(sk)}

    def _new(self, item: dict[str, Any]) -> dict[str, Any]:
        # attribute_not_exists(pk): chunk and event items are written once, never replaced
        return {
            "TableName": self.table,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(pk)",
        }

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        try:
            self.client.transact_write_items(TransactItems=actions)  # type: ignore[arg-type]
        except ClientError as exc:
            if error_code(exc) == "TransactionCanceledException":
                reasons = exc.response.get("CancellationReasons", [])
                failed = [
                    i for i, r in enumerate(reasons) if r.get("Code") == "ConditionalCheckFailed"
                ]
                if failed:
                    old = reasons[failed[0]].get("Item")
                    raise _ConditionFailed(dict(old) if old else None, failed, reasons) from None
            raise translate(exc, "DynamoDB") from exc
        except BotoCoreError as exc:
            raise translate(exc, "DynamoDB") from exc


class _ConditionFailed(Exception):
    """A condition expression failed (internal: always handled in this module)."""

    def __init__(
        self,
        item: dict[str, Any] | None,
        indexes: list[int] | None = None,
        reasons: list[Any] | None = None,
    ) -> None:
        super().__init__("condition failed")
        self.item = item
        self.indexes = indexes or []
        self.reasons = reasons or []

    def old_item(self, index: int) -> dict[str, Any] | None:
        """ALL_OLD of action ``index`` of a cancelled transaction, when it failed."""
        if index not in self.indexes or index >= len(self.reasons):
            return None
        old = self.reasons[index].get("Item")
        return dict(old) if old else None


def _boundary_raw(call: Callable[[], T]) -> T:
    """Like _boundary, but a failed condition surfaces as _ConditionFailed with ALL_OLD."""
    try:
        return call()
    except ClientError as exc:
        if error_code(exc) == "ConditionalCheckFailedException":
            raise _ConditionFailed(exc.response.get("Item")) from None  # type: ignore[arg-type]
        raise translate(exc, "DynamoDB") from exc
    except BotoCoreError as exc:
        raise translate(exc, "DynamoDB") from exc


def _not_found(ref: InstanceRef) -> InstanceNotFound:
    return InstanceNotFound(
        f"no instance '{ref.id}' of workflow '{ref.workflow}'; check the id, or list the "
        "workflow's instances"
    )
