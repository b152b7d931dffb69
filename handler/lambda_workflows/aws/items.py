"""How the engine's records are laid out as DynamoDB items (single-table design).

Key schema (table keys ``pk`` / ``sk``, strings)::

    pk = "I#<workflow>#<instance id>"     one partition per instance ('#' is in neither name)
    sk = "I"                              the instance item (status, version, lease, params...)
    sk = "E#<event id>"                   a buffered event (ids sort in arrival order)
    sk = "J#<generation:06>#<entry key>"  a journal entry of one generation (restart = +1)
    sk = "G#<generation:06>"              a restart's claim on a generation (its token)
    sk = <owner sk> "\\x1dc<nn>"           a chunk of a large value of the item <owner sk>
    sk = "I\\x1dcoutput<nn>"              a chunk of an instance's large output (its params'
                                          chunks are "I\\x1dc<nn>": both can be large at once)

So "load an instance's whole journal" is one Query on ``pk``. Two sparse GSIs index instance
items (only the instance item carries their keys):

    by_created:  lpk = "<workflow>#<shard>",   lsk = "<created, 17 digits>#<id>"  (keys only)
    by_due:      due_shard = "due#<n>",        due_at (number)                    (keys only)
                 (also "deleted#<n>": deletes still owed a cleanup; "reaping": the reaper's
                 parked partitions, see lambda_workflows.aws.reaper)

``by_created`` lists instances: its keys are written once, at creation, and never move; it
projects no other attribute, so only the creation writes it, never a status change, a lease,
a renewal or a due time. A listing reads its entries' items with BatchGetItem and filters
those on their status (:mod:`lambda_workflows.aws.instance_listing`). Its keys are spread
over shards (a stable hash of the id, see :mod:`lambda_workflows.aws.shards`: why, how many,
and how items written under the two listing indexes before it are still listed and moved to
it); a listing merges its shards (:mod:`lambda_workflows.aws.listing`).

``by_due`` is the recovery sweep's index (see :mod:`lambda_workflows.engine.instances.recovery`):
only instances that are neither finished nor paused carry ``due_at``.

An event sent with an idempotency key also writes a marker item ``sk = "K#<key>"`` holding the
event's id, in the same transaction as the event: a second send with that key fails on it.

Large values (step results, params, payloads, output: up to 1 MiB of JSON) are stored inline
as text when small, zlib-compressed as binary when that fits, and otherwise split into chunk
items written in the same transaction as their owner, so readers see all of it or none.

Deleting an instance replaces its instance item by a tombstone (``deleted_at``, the version
and journal generation a new instance with the same id starts above, no listing keys: it lists
nowhere and reads as missing) and then deletes every other item of the partition. A runner
that was mid-step may still write a journal entry afterwards; it is at a generation below the
tombstone's, so nothing ever reads it. Until the partition is found empty after that (see
:mod:`lambda_workflows.aws.deletes`) the tombstone carries ``cleanup`` and a ``by_due`` entry
(``due_shard = "deleted#<n>"``), or a marker ``sk = "D#<version>"`` does, if the id was
created again meanwhile. The tombstone expires by its TTL, after every entry such a writer
could have made.

Retention: the instance item gets ``expires_at`` (the TTL attribute) when it finishes. Journal,
event and chunk items are written once with ``expires_at`` = write time + JOURNAL_HORIZON, so
expiry never costs a write per step. An instance alive longer than the horizon minus a year has
its items' TTL pushed forward when it is next loaded (rare: only instances older than a year).
Items of a finished instance are unreachable once its instance item expired: a new instance
with the same id starts at a journal generation of its own (``first_generation``, its creation
time in milliseconds), so it never reads them. They are deleted then, by the reaper that the
table's stream feeds with the instance items TTL removes (:mod:`lambda_workflows.aws.reaper`), and
failing that by their own TTL.

The layout is written and read by one module per kind of item, all re-exported here (code
reads ``from lambda_workflows.aws import items as it``): :mod:`.item_keys` (keys, prefixes,
retention), :mod:`.attributes` (typed values), :mod:`.blobs` (large values and their chunks),
:mod:`.instance_items` (the instance item, its tombstone and its versioned updates),
:mod:`.journal_items` (journal entries and generation claims) and :mod:`.event_items`
(buffered events and idempotency markers).
"""

from __future__ import annotations

from .attributes import (
    error_value,
    get_error,
    get_int,
    get_n,
    get_pauses,
    get_rollback,
    get_s,
    n,
    pauses_value,
    put_optional,
    rollback_value,
    s,
)
from .blobs import (
    CHUNK_SIZE,
    INLINE_LIMIT,
    get_blob,
    has_chunks,
    put_blob,
)
from .event_items import (
    event_item,
    event_key_item,
    event_record,
    keyed_event,
)
from .instance_items import (
    ItemUpdate,
    change_update,
    instance_item,
    instance_record,
    is_deleted,
    tombstone_item,
)
from .item_keys import (
    CHUNK_MARK,
    CLAIM_PREFIX,
    EVENT_KEY_PREFIX,
    EVENT_PREFIX,
    INSTANCE_SK,
    JOURNAL_HORIZON,
    JOURNAL_PREFIX,
    OUTPUT_TAG,
    REFRESH_BEFORE,
    SEEDED,
    Item,
    chunk_sk,
    claim_sk,
    created_sort_key,
    instance_key,
    instance_pk,
    instance_ref,
    journal_sk,
)
from .journal_items import (
    claim_item,
    entry_item,
    journal_entry,
)

__all__ = [
    "CHUNK_MARK",
    "CHUNK_SIZE",
    "CLAIM_PREFIX",
    "EVENT_KEY_PREFIX",
    "EVENT_PREFIX",
    "INLINE_LIMIT",
    "INSTANCE_SK",
    "JOURNAL_HORIZON",
    "JOURNAL_PREFIX",
    "OUTPUT_TAG",
    "REFRESH_BEFORE",
    "SEEDED",
    "Item",
    "ItemUpdate",
    "change_update",
    "chunk_sk",
    "claim_item",
    "claim_sk",
    "created_sort_key",
    "entry_item",
    "error_value",
    "event_item",
    "event_key_item",
    "event_record",
    "get_blob",
    "get_error",
    "get_int",
    "get_n",
    "get_pauses",
    "get_rollback",
    "get_s",
    "has_chunks",
    "instance_item",
    "instance_key",
    "instance_pk",
    "instance_record",
    "instance_ref",
    "is_deleted",
    "journal_entry",
    "journal_sk",
    "keyed_event",
    "n",
    "pauses_value",
    "put_blob",
    "put_optional",
    "rollback_value",
    "s",
    "tombstone_item",
]
