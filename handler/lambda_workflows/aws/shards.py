"""Write-sharded index keys: no index partition takes every write of a busy workflow.

The listing index ``by_created`` (see :mod:`lambda_workflows.aws.items`) has one entry per
instance item, keyed by its workflow and shard, sorted by creation time; it projects the keys
only, so only the instance's creation writes it (its key never moves, and no attribute an
update changes is projected). One partition takes about
1,000 writes per second, and a throttled index throttles the table's own writes. With one key
per workflow, a single busy workflow tops out at a few hundred instances per second, whatever
the account pays. So each key is spread over :data:`INDEX_SHARDS` shards::

    by_created:  lpk = "<workflow>#<shard>",  lsk = "<created, 17 digits>#<id>"
    shard = crc32(<instance id>) mod INDEX_SHARDS

The shard is a stable hash of the instance's id, so all of an instance's writes stay in one
shard.

**Why 32.** The target is 10,000 instance transitions per second in one workflow. Only
creations write the index now (a status change no longer does), so that is at most 10,000
index writes per second for the workflow: at 1,000 writes per second per partition
that needs at least 10 shards; 32 (a power of two) puts the mean at ~310 writes per second
per shard, under a third of the limit, which leaves room for the hash's unevenness and for
bursts (``make bench`` runs ``bench/heat_bench.py``, which measures it on the real store: see
docs/architecture.md).

**K may grow, never shrink.** Readers ask every shard below K, so items written under a smaller
K (shard < old K) are still found.

**The legacy indexes.** Until 2026-12-05 two indexes listed instances, each projecting the
whole item: ``by_status`` (``gsi1pk = "<workflow>#<status>#<shard>"``) and ``by_workflow``
(``gsi2pk = "<workflow>#<shard>"``, before sharding ``"<workflow>"``; ``gsi2sk`` sorts like
``lsk``). Items written then still carry those keys until the recovery sweep moves them to
``by_created`` (:meth:`lambda_workflows.aws.dynamodb.DynamoStore.upgrade_listing`: the same
sort key, one conditional write per item). Meanwhile a listing also reads ``by_workflow``'s
partitions (:meth:`Listing.partitions`), so no instance goes missing from a listing while
the stack upgrades; ``by_status`` is read by nothing. See docs/deploy.md for the upgrade.
"""

from __future__ import annotations

import zlib

from lambda_workflows.engine.immutable import immutable

__all__ = [
    "INDEX_SHARDS",
    "LOCAL_INDEX_SHARDS",
    "Listing",
    "Partition",
    "created_partition",
    "index_shard",
    "legacy_partition",
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


def created_partition(workflow: str, shard: int) -> str:
    """The ``by_created`` key of a workflow's instances in ``shard``."""
    return f"{workflow}#{shard}"


def legacy_partition(workflow: str, shard: int | None) -> str:
    """The legacy ``by_workflow`` key of a workflow's instances in ``shard`` (None: the key
    items had before sharding)."""
    return workflow if shard is None else f"{workflow}#{shard}"


@immutable
class Partition:
    """One index partition a listing reads: the index, its key and sort key attributes, and
    the partition key's value."""

    index: str
    key: str
    sort_key: str
    value: str


@immutable
class Listing:
    """One listing of a workflow's instances (all of them, or those with one status): the
    partitions it merges. A status is a filter on the items read (``by_created`` projects
    none: see :mod:`lambda_workflows.aws.instance_listing`): no index is keyed by or projects
    the status, so a status change never writes an entry."""

    workflow: str
    status: str | None  # None: every status
    legacy: bool = True  # also read the legacy by_workflow index (see the module docstring)

    def partitions(self, shards: int) -> list[Partition]:
        """Every partition to read, numbered so that a partition's number in a cursor keeps
        its meaning when K grows: the legacy unsharded key first, then for each shard its
        ``by_created`` partition and its legacy one."""
        found = [self._legacy(None)] if self.legacy else []
        for shard in range(shards):
            found.append(
                Partition("by_created", "lpk", "lsk", created_partition(self.workflow, shard))
            )
            if self.legacy:
                found.append(self._legacy(shard))
        return found

    def _legacy(self, shard: int | None) -> Partition:
        return Partition("by_workflow", "gsi2pk", "gsi2sk", legacy_partition(self.workflow, shard))
