"""Write-sharded index keys: no index partition takes every write of a busy workflow.

The listing indexes ``by_status`` and ``by_workflow`` (see :mod:`lambda_workflows.aws.items`)
project whole instance items, so *every* write of an instance item is also a write to its index
partition, and a status change is two (out of the old status's partition, into the new one's).
One partition takes about 1,000 writes per second, and a throttled index throttles the table's
own writes. With one key per workflow (``"<workflow>"``) or per workflow and status, a single
busy workflow tops out at a few hundred instances per second, whatever the account pays.

So each key is spread over :data:`INDEX_SHARDS` shards::

    by_status:   gsi1pk = "<workflow>#<status>#<shard>"
    by_workflow: gsi2pk = "<workflow>#<shard>"
    shard = crc32(<instance id>) mod INDEX_SHARDS

The shard is a stable hash of the instance's id, so all of an instance's writes, and its status
changes, stay in one shard.

**Why 32.** The target is 10,000 instance transitions per second in one workflow (a create, a
lease, a wait, a finish: every status change is one). An instance that sleeps once goes through
five transitions (queued, running, waiting, running, complete) in seven writes of its instance
item (the create, two leases, two lease renewals before its steps, the wait, the finish): 1.4
item writes per transition, so ``by_workflow`` takes 14,000 writes per second, and the busiest
``by_status`` partition (``running``: in, out, and every renewal) about 12,000. At 1,000
writes per second per partition that needs at least 14 shards; 32 (a power of two) puts the
mean at ~440 writes per second per shard, under half the limit, which leaves room for the
hash's unevenness and for bursts (``make bench`` runs ``bench/heat_bench.py``, which measures
it on the real store: see docs/architecture.md). An index write costs a write unit per KB of
the item: a workflow whose instance items are several KB (large params inline) fills a
partition sooner and wants a larger K.

**K may grow, never shrink.** Readers ask every shard below K, so items written under a smaller
K (shard < old K) are still found; an item moves to its new shard at its next status change.

**Legacy keys.** Items written before sharding carry the unsharded keys (``"<workflow>#<status>"``,
``"<workflow>"``). A listing and a count ask that key too, as one more partition
(:func:`Listing.partitions`: it comes first, so the other partitions' numbers do not move when
K grows), and an item's keys are rewritten to its shard at its next status change. Finished
legacy items are never rewritten: they are listed from the legacy key until their TTL expires
them (see :mod:`lambda_workflows.aws.items`); then that partition is empty and costs one Query that
returns nothing on a listing's first page. The recovery sweep reads the ``by_due`` index, which
was sharded from the start, so legacy items are swept like any other.
"""

from __future__ import annotations

import zlib

from lambda_workflows.engine.immutable import immutable

__all__ = [
    "INDEX_SHARDS",
    "LOCAL_INDEX_SHARDS",
    "Listing",
    "index_shard",
    "status_partition",
    "workflow_partition",
]

INDEX_SHARDS = 32
"""Shards of each listing index key (see the module docstring for the arithmetic)."""

LOCAL_INDEX_SHARDS = 4
"""Shards of the embedded stack (``lambda-workflows dev``, the test kit): one developer's load. A
listing's first page costs a Query per shard, and moto answers a few hundred a second: the
dashboard's workflows page describes every workflow. Still more than one, so every sharded path
runs. A store must read at least the shards its writers write: a :class:`DynamoStore` built by
hand on the embedded stack's table takes ``index_shards=LOCAL_INDEX_SHARDS`` (or the runtime's
own store)."""


def index_shard(instance_id: str, shards: int) -> int:
    """The shard of an instance: stable, so its every write stays in one index partition."""
    return zlib.crc32(instance_id.encode()) % shards


def status_partition(workflow: str, status: str, shard: int | None) -> str:
    """The ``by_status`` key of a workflow's instances with ``status`` in ``shard`` (None: the
    key items had before sharding)."""
    legacy = f"{workflow}#{status}"
    return legacy if shard is None else f"{legacy}#{shard}"


def workflow_partition(workflow: str, shard: int | None) -> str:
    """The ``by_workflow`` key of a workflow's instances in ``shard`` (None: the legacy key)."""
    return workflow if shard is None else f"{workflow}#{shard}"


@immutable
class Listing:
    """One listing of a workflow's instances (all of them, or those with one status): the
    index it reads and the partition keys it merges."""

    workflow: str
    status: str | None  # None: every status (by_workflow)

    @property
    def index(self) -> str:
        return "by_workflow" if self.status is None else "by_status"

    @property
    def key(self) -> str:
        """The index's partition key attribute."""
        return "gsi2pk" if self.status is None else "gsi1pk"

    @property
    def sort_key(self) -> str:
        """The index's sort key attribute (creation time, then id: unique in a workflow)."""
        return "gsi2sk" if self.status is None else "gsi1sk"

    def partition(self, shard: int | None) -> str:
        """The key of ``shard`` (None: the legacy key)."""
        if self.status is None:
            return workflow_partition(self.workflow, shard)
        return status_partition(self.workflow, self.status, shard)

    def partitions(self, shards: int) -> list[str]:
        """Every key to read: the legacy key first, then shards 0 to ``shards - 1`` (so a
        partition's number in a cursor keeps its meaning when K grows)."""
        return [self.partition(None), *(self.partition(i) for i in range(shards))]
