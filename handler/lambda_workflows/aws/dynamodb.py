"""The instance store on one DynamoDB table (see :mod:`lambda_workflows.aws.items` for the layout).

:class:`DynamoStore` is the one class the runtime and users construct; it hands each part of
its work to a collaborator, one per responsibility, all on the same client and table:

- :mod:`.creation_writes`: creating instances, one or a batch (an id is taken once);
- :mod:`.instance_reads`: reading an instance's item or its whole partition;
- :mod:`.journal_store`: recording journal entries exactly once, a restart's generations;
- :mod:`.child_writes`: a child workflow with its parent's wait, in one transaction;
- :mod:`.event_store`: buffering events (ordered by the store, once per idempotency key);
- :mod:`.leases`: the runner's versioned updates of the instance item, and its lease;
- :mod:`.instance_listing` (with :mod:`.listing` and :mod:`.cursors`): listing pages; the
  due index's query stays here;
- :mod:`.deletes`: deleting instances and their cleanup; :mod:`.slots`: concurrency slots.

What makes results exactly-once: a journal entry is written with a conditional put and never
updated; the first writer wins, always (:mod:`.journal_store`). What makes wake-ups never lost:
every write to the instance item bumps ``version``, and the runner's writes are conditional on the
version it loaded (:mod:`.leases`, :mod:`lambda_workflows.engine.instances.advance`).

Every call goes through one boundary (:mod:`.boundary`): a failed condition (a lost race) is
handled in place by the collaborator that wrote; every other failure becomes a StorageError,
which the engine treats as "try again later", never as a step failure. A timeout after sending
leaves the outcome unknown; callers resolve it by reading back, never by guessing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.instances.ports import BatchCreateResult, InstancePage, InstanceState
from lambda_workflows.engine.instances.recovery import all_due_shards
from lambda_workflows.engine.instances.transitions import Change
from lambda_workflows.engine.model import (
    EventRecord,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    JournalEntry,
)

from . import items as it
from .boundary import call
from .child_writes import ChildWrites
from .creation_writes import CreationWrites
from .event_store import EventStore
from .instance_listing import ListingIndexes
from .instance_reads import InstanceReads
from .journal_store import JournalStore
from .journal_writes import off_loop
from .leases import InstanceLeases
from .listing import START, in_threads, one_by_one, payload_of, position_of
from .shards import INDEX_SHARDS, Listing

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from .cursors import CursorSigner
    from .deletes import InstanceDeletes
    from .slots import DynamoSlots

__all__ = ["DynamoStore"]

T = TypeVar("T")


class DynamoStore:
    """:class:`~lambda_workflows.engine.instances.ports.InstanceStore` on one DynamoDB table.

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

    # --- the collaborators (made on first use, on the store's settings) --------------------

    @functools.cached_property
    def reads(self) -> InstanceReads:
        """Reads of instances (see :mod:`lambda_workflows.aws.instance_reads`)."""
        return InstanceReads(self.client, self.table, self.clock)

    @functools.cached_property
    def creation_writes(self) -> CreationWrites:
        """Creates instances (see :mod:`lambda_workflows.aws.creation_writes`)."""
        return CreationWrites(self.client, self.table, self.index_shards, lambda: self.deletes)

    @functools.cached_property
    def journal_store(self) -> JournalStore:
        """Journal entries and generations (see :mod:`lambda_workflows.aws.journal_store`)."""
        return JournalStore(self.client, self.table, self.clock)

    @functools.cached_property
    def child_writes(self) -> ChildWrites:
        """A child and its parent's wait (see :mod:`lambda_workflows.aws.child_writes`)."""
        return ChildWrites(self.client, self.table, self.index_shards)

    @functools.cached_property
    def event_store(self) -> EventStore:
        """Events sent to instances (see :mod:`lambda_workflows.aws.event_store`)."""
        return EventStore(self.client, self.table, self.clock, self.reads)

    @functools.cached_property
    def leases(self) -> InstanceLeases:
        """Updates and leases of instance items (see :mod:`lambda_workflows.aws.leases`)."""
        return InstanceLeases(self.client, self.table, self.clock, self.reads)

    @functools.cached_property
    def listing_indexes(self) -> ListingIndexes:
        """The listing indexes (see :mod:`lambda_workflows.aws.instance_listing`)."""
        return ListingIndexes(self.client, self.table, self.index_shards)

    @functools.cached_property
    def deletes(self) -> InstanceDeletes:
        """Deletes and their cleanup (see lambda_workflows.aws.deletes)."""
        from .deletes import InstanceDeletes

        return InstanceDeletes(self.client, self.table, self.clock)

    @functools.cached_property
    def slots(self) -> DynamoSlots:
        """The slots of workflows with a concurrency limit (see lambda_workflows.aws.slots)."""
        from .slots import DynamoSlots

        return DynamoSlots(self.client, self.table)

    # --- creating -------------------------------------------------------------------------

    def create(self, record: InstanceRecord) -> None:
        self.creation_writes.create(record)

    def create_many(self, records: Sequence[InstanceRecord]) -> BatchCreateResult:
        """One transaction for the batch when it fits (≤ 100 items, < 4 MB); ids that exist
        make the transaction fail with a per-item reason, and the rest is retried without them.
        """
        return self.creation_writes.create_many(records)

    # --- reading --------------------------------------------------------------------------

    def get(self, ref: InstanceRef) -> InstanceRecord:
        return self.reads.get(ref)

    def load(self, ref: InstanceRef) -> InstanceState:
        """One strongly consistent Query over the instance's partition (paginated past 1 MB)."""
        return self.reads.load(ref)

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
            position = position_of(call(lambda: self.cursors.verify(cursor)), listing)
        items, after = self.listing_indexes.page(listing, position, limit, self._together)
        records = [it.instance_record(i) for i in items]
        if after is None:
            return InstancePage(records, None)
        payload = payload_of(listing, after)
        return InstancePage(records, call(lambda: self.cursors.sign(payload)))

    def upgrade_listing(self, limit: int = 1000) -> int:
        """Move up to ``limit`` instance items off the legacy listing indexes (the recovery
        sweep: see :mod:`lambda_workflows.aws.instance_listing`)."""
        if not self.legacy_listing:
            return 0
        return self.listing_indexes.upgrade_legacy(limit)

    def _together(self, calls: list[Callable[[], T]]) -> list[T]:
        """Independent reads (a Query per shard) at the same time, or in order when the store
        runs its calls in order (``parallel_writes`` False: a harness numbering every call)."""
        return in_threads(calls) if self.parallel_writes else one_by_one(calls)

    def seal_cursor(self, position: Mapping[str, Any]) -> str:
        """A page's cursor, signed with the stack's key (see :mod:`.cursors`)."""
        return call(lambda: self.cursors.sign(position))

    def open_cursor(self, cursor: str) -> Any:
        """The position a :meth:`seal_cursor` cursor carries; InvalidInput for anything else."""
        return call(lambda: self.cursors.verify(cursor))

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
            page = call(lambda q=query: self.client.query(**q))  # type: ignore[misc]
            for item in page.get("Items", []):
                ref = it.instance_ref(str(it.get_s(item, "pk")))
                if ref is not None:
                    found.append((it.get_n(item, "due_at") or 0.0, ref))
        found.sort(key=lambda f: f[0])
        return [ref for _, ref in found[:limit]]

    # --- the journal ----------------------------------------------------------------------

    def record(self, ref: InstanceRef, generation: int, entry: JournalEntry) -> JournalEntry:
        return self.journal_store.record(ref, generation, entry)

    def record_child_wait(
        self,
        parent: InstanceRef,
        generation: int,
        wait: JournalEntry,
        child: InstanceRecord | None = None,
    ) -> JournalEntry | None:
        """One transaction: see :mod:`lambda_workflows.aws.child_writes`."""
        return self.child_writes.record(parent, generation, wait, child, self.clock.time())

    async def record_async(
        self, ref: InstanceRef, generation: int, entry: JournalEntry
    ) -> JournalEntry:
        if not self.parallel_writes:
            return self.record(ref, generation, entry)
        return await off_loop(self.record, ref, generation, entry)

    # --- restarts and deletes -------------------------------------------------------------

    def claim_generation(self, ref: InstanceRef, generation: int, token: str) -> bool:
        return self.journal_store.claim_generation(ref, generation, token)

    def seed_generation(
        self,
        ref: InstanceRef,
        generation: int,
        entries: Sequence[JournalEntry],
        events: Sequence[EventRecord],
    ) -> None:
        self.journal_store.seed_generation(ref, generation, entries, events)

    def delete(self, record: InstanceRecord) -> bool:
        return self.deletes.delete(record)

    def finish_delete(self, ref: InstanceRef) -> bool:
        return self.deletes.finish(ref)

    def finish_deletes(self, before: float, limit: int = 1000) -> int:
        return self.deletes.finish_due(before, limit)

    # --- events ---------------------------------------------------------------------------

    def add_event(
        self, ref: InstanceRef, event: EventRecord, expected_version: int, due_at: float | None
    ) -> EventRecord | None:
        return self.event_store.add_event(ref, event, expected_version, due_at)

    def find_event(self, ref: InstanceRef, key: str) -> EventRecord | None:
        return self.event_store.find_event(ref, key)

    # --- the instance item ----------------------------------------------------------------

    def update(
        self,
        ref: InstanceRef,
        expected_version: int,
        change: Change,
        *,
        lease_free_at: float | None = None,
    ) -> InstanceRecord | None:
        return self.leases.update(ref, expected_version, change, lease_free_at=lease_free_at)

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
        return self.leases.acquire_lease(
            ref, owner, now, expires_at, needs_slot=needs_slot, delivery=delivery
        )

    def release_lease(
        self, ref: InstanceRef, owner: str, due_at: float, *, delivery: int = 1
    ) -> None:
        self.leases.release_lease(ref, owner, due_at, delivery=delivery)

    def renew_lease(
        self, ref: InstanceRef, owner: str, expires_at: float, *, delivery: int = 1
    ) -> InstanceRecord | None:
        return self.leases.renew_lease(ref, owner, expires_at, delivery=delivery)
