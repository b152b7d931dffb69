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

    by_created:  lpk = "<workflow>#<shard>",   lsk = "<created, 17 digits>#<id>"  (+ status)
    by_due:      due_shard = "due#<n>",        due_at (number)                    (keys only)
                 (also "deleted#<n>": deletes still owed a cleanup; "reaping": the reaper's
                 parked partitions, see lambda_workflows.aws.reaper)

``by_created`` lists instances: its keys are written once, at creation, and never move; it
projects the status only, so the index is written when the status changes (one small entry
rewritten in place), never by a lease, a renewal or a due time. A listing filters on that
status and reads the page's items with one BatchGetItem. Its keys are spread over shards (a
stable hash of the id, see :mod:`lambda_workflows.aws.shards`: why, how many, and how items
written under the two listing indexes before it are still listed and moved to it); a
listing merges its shards (:mod:`lambda_workflows.aws.listing`).

``by_due`` is the recovery sweep's index (see :mod:`lambda_workflows.engine.recovery`): only
instances that are neither finished nor paused carry ``due_at``.

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
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lambda_workflows.engine.model import (
    EntryKind,
    ErrorInfo,
    EventRecord,
    FailedStep,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    JournalEntry,
    ParentRef,
    RollbackInfo,
    RollbackStatus,
)
from lambda_workflows.engine.recovery import due_shard
from lambda_workflows.engine.transitions import Change

from .shards import INDEX_SHARDS, created_partition, index_shard

Item = dict[str, Any]

INSTANCE_SK = "I"
EVENT_PREFIX = "E#"
EVENT_KEY_PREFIX = "K#"
JOURNAL_PREFIX = "J#"
CLAIM_PREFIX = "G#"
CHUNK_MARK = "\x1dc"
OUTPUT_TAG = "output"  # an instance's output chunks: "I\x1dcoutput<nn>", apart from its params'
SEEDED = "seeded"  # on a journal entry a restart from a step copied: its step did not run again
INLINE_LIMIT = 64 * 1024  # text up to this size is stored as is: readable in the console
CHUNK_SIZE = 300_000  # bytes per chunk, well under the 400 KB item limit with its keys
JOURNAL_HORIZON = 2 * 366 * 86_400.0
REFRESH_BEFORE = 400 * 86_400.0  # refresh TTLs that would expire within a max sleep + margin


def instance_pk(workflow: str, instance_id: str) -> str:
    """The partition key of an instance."""
    return f"I#{workflow}#{instance_id}"


def instance_ref(pk: str) -> InstanceRef | None:
    """The instance a partition key names (None for anything else)."""
    parts = pk.split("#", 2)
    if len(parts) != 3 or parts[0] != "I":
        return None
    return InstanceRef(parts[1], parts[2])


def journal_sk(generation: int, key: str) -> str:
    """The sort key of a journal entry."""
    return f"{JOURNAL_PREFIX}{generation:06d}#{key}"


def claim_sk(generation: int) -> str:
    """The sort key of a restart's claim on journal ``generation``."""
    return f"{CLAIM_PREFIX}{generation:06d}"


def chunk_sk(owner_sk: str, index: int, tag: str = "") -> str:
    """The sort key of chunk ``index`` of the large value of item ``owner_sk``; ``tag`` tells
    apart the values of an item that has two that can be large (an instance's output)."""
    return f"{owner_sk}{CHUNK_MARK}{tag}{index:02d}"


def created_sort_key(created_at: float, instance_id: str) -> str:
    """Sorts instances by creation time (then id) as a string."""
    return f"{int(created_at * 1000):017d}#{instance_id}"


# --- typed attribute values ---------------------------------------------------------------


def s(value: str) -> dict[str, str]:
    return {"S": value}


def n(value: float | int) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def put_optional(
    item: Item,
    numbers: Mapping[str, float | int | None],
    strings: Mapping[str, str | None],
) -> None:
    """Set the numbers and strings that have a value; leave the others out of the item."""
    for name, number in numbers.items():
        if number is not None:
            item[name] = n(number)
    for name, text in strings.items():
        if text is not None:
            item[name] = s(text)


def get_s(item: Item, name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(value["S"])


def get_n(item: Item, name: str) -> float | None:
    value = item.get(name)
    return None if value is None else float(value["N"])


def get_int(item: Item, name: str, default: int = 0) -> int:
    value = item.get(name)
    return default if value is None else int(value["N"])


def error_value(error: ErrorInfo) -> dict[str, Any]:
    """An error as a map; its traceback (at most 8 KiB, see lambda_workflows.engine.tracebacks) is
    stored inline with it, so an entry with a capped message and traceback fits an item."""
    fields = {"name": s(error.name), "message": s(error.message)}
    if error.traceback is not None:
        fields["traceback"] = s(error.traceback)
    return {"M": fields}


def get_error(item: Item, name: str = "error") -> ErrorInfo | None:
    value = item.get(name)
    if value is None:
        return None
    fields = value["M"]
    traceback = fields.get("traceback")  # absent on errors recorded without one
    return ErrorInfo(
        fields["name"]["S"], fields["message"]["S"], None if traceback is None else traceback["S"]
    )


def rollback_value(rollback: RollbackInfo) -> dict[str, Any]:
    """An instance's rollback as a map: its cause, the status it ends with, how it went."""
    fields: dict[str, Any] = {
        "cause": error_value(rollback.cause),
        "ends_as": s(rollback.ends_as.value),
        "status": s(rollback.status.value),
    }
    if rollback.failed_step is not None:
        fields["failed_step"] = s(rollback.failed_step.name)
        fields["failed_count"] = n(rollback.failed_step.count)
    if rollback.error is not None:
        fields["error"] = error_value(rollback.error)
    return {"M": fields}


def get_rollback(item: Item) -> RollbackInfo | None:
    value = item.get("rollback")
    if value is None:
        return None
    fields = value["M"]
    cause = get_error(fields, "cause")
    assert cause is not None, "a stored rollback always has its cause"
    failed = get_s(fields, "failed_step")
    count = get_int(fields, "failed_count", 1)
    return RollbackInfo(
        cause=cause,
        ends_as=InstanceStatus(str(get_s(fields, "ends_as"))),
        status=RollbackStatus(str(get_s(fields, "status"))),
        failed_step=None if failed is None else FailedStep(failed, count),
        error=get_error(fields),
    )


def pauses_value(pauses: tuple[tuple[float, float], ...]) -> dict[str, Any]:
    return {"L": [{"L": [n(a), n(b)]} for a, b in pauses]}


def get_pauses(item: Item) -> tuple[tuple[float, float], ...]:
    value = item.get("pauses")
    if value is None:
        return ()
    return tuple((float(p["L"][0]["N"]), float(p["L"][1]["N"])) for p in value["L"])


# --- large values -------------------------------------------------------------------------


def put_blob(
    item: Item, name: str, text: str, owner_sk: str, pk: str, ttl: float, tag: str = ""
) -> list[Item]:
    """Store ``text`` in ``item[name]`` (inline, compressed, or chunked); return chunk items.
    Chunks get sort keys with ``tag`` (see :func:`chunk_sk`), which the item then records."""
    raw = text.encode()
    if len(raw) <= INLINE_LIMIT:
        item[name] = s(text)
        return []
    packed = zlib.compress(raw, 6)
    if len(packed) <= CHUNK_SIZE:
        item[f"{name}_z"] = {"B": packed}
        return []
    parts = [packed[i : i + CHUNK_SIZE] for i in range(0, len(packed), CHUNK_SIZE)]
    item[f"{name}_chunks"] = n(len(parts))
    if tag:
        item[f"{name}_chunk_tag"] = s(tag)
    return [
        {
            "pk": s(pk),
            "sk": s(chunk_sk(owner_sk, i, tag)),
            "chunk": {"B": part},
            "expires_at": n(ttl),
        }
        for i, part in enumerate(parts)
    ]


def get_blob(item: Item, name: str, chunks: dict[str, Item]) -> str | None:
    """Read a value stored by :func:`put_blob`; None when absent or its chunks are missing."""
    if name in item:
        return str(item[name]["S"])
    if f"{name}_z" in item:
        return zlib.decompress(bytes(item[f"{name}_z"]["B"])).decode()
    count = item.get(f"{name}_chunks")
    if count is None:
        return None
    owner = item["sk"]["S"]
    tag = get_s(item, f"{name}_chunk_tag") or ""  # untagged: written before tags, or params
    parts = [chunks.get(chunk_sk(owner, i, tag)) for i in range(int(count["N"]))]
    if any(part is None for part in parts):
        return None
    return zlib.decompress(b"".join(bytes(p["chunk"]["B"]) for p in parts if p)).decode()


def has_chunks(item: Item, name: str) -> bool:
    """True when the value ``name`` of the item lives in chunk items."""
    return f"{name}_chunks" in item


# --- instance -----------------------------------------------------------------------------

_INSTANCE_NUMBERS = (
    "updated_at",
    "started_at",
    "finished_at",
    "lease_expires_at",
    "lease_delivery",
    "wake_at",
    "paused_at",
    "expires_at",
    "due_at",
    "slot",
)


def instance_item(record: InstanceRecord, shards: int = INDEX_SHARDS) -> tuple[Item, list[Item]]:
    """The instance item and the chunk items of its params; its listing keys are spread over
    ``shards`` (see :mod:`lambda_workflows.aws.shards`)."""
    pk = instance_pk(record.workflow, record.id)
    shard = index_shard(record.id, shards)
    item: Item = {
        "pk": s(pk),
        "sk": s(INSTANCE_SK),
        "workflow": s(record.workflow),
        "id": s(record.id),
        "status": s(record.status.value),
        "version": n(record.version),
        "generation": n(record.generation),
        "created_at": n(record.created_at),
        # its listing keys, written once: a write of the item never moves them
        "lpk": s(created_partition(record.workflow, shard)),
        "lsk": s(created_sort_key(record.created_at, record.id)),
    }
    put_optional(
        item,
        {name: getattr(record, name) for name in _INSTANCE_NUMBERS},
        {"lease_owner": record.lease_owner},
    )
    if record.due_at is not None:
        item["due_shard"] = s(due_shard(record.ref))
    if record.error is not None:
        item["error"] = error_value(record.error)
    if record.pauses:
        item["pauses"] = pauses_value(record.pauses)
    if record.rollback is not None:
        item["rollback"] = rollback_value(record.rollback)
    item["workflow_version"] = s(record.workflow_version)
    if record.status_reason is not None:
        item["status_reason"] = s(record.status_reason)
    if record.parent is not None:  # a child workflow's parent, written once at creation
        item["parent"] = {"M": {k: s(v) for k, v in record.parent.to_dict().items()}}
    ttl = record.created_at + JOURNAL_HORIZON
    chunks = put_blob(item, "params", record.params, INSTANCE_SK, pk, ttl)
    if record.output is not None:
        chunks += put_blob(item, "output", record.output, INSTANCE_SK, pk, ttl, OUTPUT_TAG)
    # what it used (see lambda_workflows.engine.usage); its creation counts itself and its chunks
    item["item_writes"] = n(record.item_writes + 1 + len(chunks))
    put_optional(
        item, {"invocations": record.invocations or None, "schedules": record.schedules or None}, {}
    )
    return item, chunks


def claim_item(pk: str, generation: int, token: str, now: float) -> Item:
    """A restart's claim on journal ``generation``: the restart's ``token``."""
    return {
        "pk": s(pk),
        "sk": s(claim_sk(generation)),
        "token": s(token),
        "expires_at": n(now + JOURNAL_HORIZON),
    }


def tombstone_item(ref: InstanceRef, version: int, generation: int, now: float) -> Item:
    """What is left of a deleted instance (see the module's docstring): it outlives every
    journal entry a late writer of the deleted instance can still make."""
    return {
        "pk": s(instance_pk(ref.workflow, ref.id)),
        "sk": s(INSTANCE_SK),
        "deleted_at": n(now),
        "version": n(version),
        "generation": n(generation),
        "expires_at": n(now + JOURNAL_HORIZON + REFRESH_BEFORE),
    }


def is_deleted(item: Item) -> bool:
    """True for the tombstone of a deleted instance."""
    return "deleted_at" in item


def instance_record(item: Item, chunks: dict[str, Item] | None = None) -> InstanceRecord:
    """An InstanceRecord from its item. Values kept in chunks need ``chunks`` (from a Query);
    without them ``params`` is "" and ``output`` None (fine for status and lease decisions).
    """
    found = chunks or {}
    return InstanceRecord(
        workflow=str(get_s(item, "workflow")),
        id=str(get_s(item, "id")),
        status=InstanceStatus(str(get_s(item, "status"))),
        params=get_blob(item, "params", found) or "",
        created_at=get_n(item, "created_at") or 0.0,
        version=get_int(item, "version", 1),
        generation=get_int(item, "generation", 1),
        updated_at=get_n(item, "updated_at") or 0.0,
        started_at=get_n(item, "started_at"),
        finished_at=get_n(item, "finished_at"),
        output=get_blob(item, "output", found),
        error=get_error(item),
        lease_owner=get_s(item, "lease_owner"),
        lease_expires_at=get_n(item, "lease_expires_at"),
        lease_delivery=None if "lease_delivery" not in item else get_int(item, "lease_delivery"),
        invocations=get_int(item, "invocations"),
        item_writes=get_int(item, "item_writes"),
        schedules=get_int(item, "schedules"),
        wake_at=get_n(item, "wake_at"),
        paused_at=get_n(item, "paused_at"),
        pauses=get_pauses(item),
        expires_at=get_n(item, "expires_at"),
        due_at=get_n(item, "due_at"),
        slot=None if "slot" not in item else get_int(item, "slot"),
        rollback=get_rollback(item),
        workflow_version=get_s(item, "workflow_version") or "1",  # items before versions: "1"
        status_reason=get_s(item, "status_reason"),
        parent=ParentRef.from_dict(
            {k: v["S"] for k, v in item["parent"]["M"].items()} if "parent" in item else None
        ),
    )


# --- journal entries ----------------------------------------------------------------------


def entry_item(
    pk: str, generation: int, entry: JournalEntry, now: float
) -> tuple[Item, list[Item]]:
    """A journal entry's item and the chunk items of its result."""
    sk = journal_sk(generation, entry.key)
    ttl = now + JOURNAL_HORIZON
    item: Item = {
        "pk": s(pk),
        "sk": s(sk),
        "kind": s(entry.kind.value),
        "key": s(entry.key),
        "name": s(entry.name),
        "count": n(entry.count),
        "at": n(entry.at),
        "attempt": n(entry.attempt),
        "expires_at": n(ttl),
    }
    put_optional(
        item,
        {
            "position": entry.position,
            "started_at": entry.started_at,
            "attempt_started_at": entry.attempt_started_at,
            "wake_at": entry.wake_at,
        },
        {"parent": entry.parent, "event_type": entry.event_type, "event_id": entry.event_id},
    )
    if entry.error is not None:
        item["error"] = error_value(entry.error)
    if entry.sensitive:  # absent when false: older items read as not sensitive
        item["sensitive"] = {"BOOL": True}
    chunks: list[Item] = []
    if entry.result is not None:
        chunks = put_blob(item, "result", entry.result, sk, pk, ttl)
    return item, chunks


def journal_entry(item: Item, chunks: dict[str, Item]) -> JournalEntry:
    """A JournalEntry from its item (and, for large results, its chunks)."""
    position = item.get("position")
    return JournalEntry(
        key=str(get_s(item, "key")),
        kind=EntryKind(str(get_s(item, "kind"))),
        name=str(get_s(item, "name")),
        count=get_int(item, "count"),
        at=get_n(item, "at") or 0.0,
        position=None if position is None else int(position["N"]),
        parent=get_s(item, "parent"),
        started_at=get_n(item, "started_at"),
        attempt_started_at=get_n(item, "attempt_started_at"),
        result=get_blob(item, "result", chunks),
        error=get_error(item),
        attempt=get_int(item, "attempt"),
        wake_at=get_n(item, "wake_at"),
        event_type=get_s(item, "event_type"),
        event_id=get_s(item, "event_id"),
        sensitive=bool(item.get("sensitive", {}).get("BOOL", False)),
    )


# --- events -------------------------------------------------------------------------------


def event_item(pk: str, event: EventRecord, now: float) -> tuple[Item, list[Item]]:
    """A buffered event's item and the chunk items of its payload."""
    sk = EVENT_PREFIX + event.id
    ttl = now + JOURNAL_HORIZON
    item: Item = {
        "pk": s(pk),
        "sk": s(sk),
        "type": s(event.type),
        "timestamp": n(event.timestamp),
        "generation": n(event.generation),
        "expires_at": n(ttl),
    }
    put_optional(item, {}, {"key": event.key})
    return item, put_blob(item, "payload", event.payload, sk, pk, ttl)


def event_key_item(pk: str, event: EventRecord, now: float) -> Item:
    """The marker of an event's idempotency key: which event was stored under it."""
    return {
        "pk": s(pk),
        "sk": s(EVENT_KEY_PREFIX + str(event.key)),
        "event_id": s(event.id),
        "type": s(event.type),
        "timestamp": n(event.timestamp),
        "generation": n(event.generation),
        "expires_at": n(now + JOURNAL_HORIZON),
    }


def keyed_event(item: Item) -> EventRecord:
    """The event an idempotency marker names (its payload is not kept there)."""
    return EventRecord(
        id=str(get_s(item, "event_id")),
        type=str(get_s(item, "type")),
        payload="null",
        timestamp=get_n(item, "timestamp") or 0.0,
        generation=get_int(item, "generation", 1),
        key=str(get_s(item, "sk"))[len(EVENT_KEY_PREFIX) :],
    )


def event_record(item: Item, chunks: dict[str, Item]) -> EventRecord:
    """An EventRecord from its item."""
    return EventRecord(
        id=str(get_s(item, "sk"))[len(EVENT_PREFIX) :],
        type=str(get_s(item, "type")),
        payload=get_blob(item, "payload", chunks) or "null",
        timestamp=get_n(item, "timestamp") or 0.0,
        generation=get_int(item, "generation", 1),
        key=get_s(item, "key"),
    )


# --- changes to the instance item ---------------------------------------------------------


@dataclass
class ItemUpdate:
    """An UpdateExpression being built: ``SET`` and ``REMOVE`` clauses with their names and
    values, and the chunk items of a large output (written in the same transaction)."""

    sets: list[str] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    chunks: list[Item] = field(default_factory=list)
    adds: list[str] = field(default_factory=list)

    def set(self, name: str, value: dict[str, Any]) -> None:
        self.names[f"#{name}"] = name
        self.values[f":{name}"] = value
        self.sets.append(f"#{name} = :{name}")

    def remove(self, *names: str) -> None:
        for name in names:
            self.names[f"#{name}"] = name
            self.removes.append(f"#{name}")

    def add(self, name: str, amount: int) -> None:
        """Add ``amount`` to the number ``name`` (a counter: absent counts as 0)."""
        self.names[f"#{name}"] = name
        self.values[f":add_{name}"] = n(amount)
        self.adds.append(f"#{name} :add_{name}")

    def expression(self) -> str:
        return (
            "SET "
            + ", ".join(self.sets)
            + (" REMOVE " + ", ".join(self.removes) if self.removes else "")
            + (" ADD " + ", ".join(self.adds) if self.adds else "")
        )


_REMOVED_WITH = {
    "output": ("output", "output_z", "output_chunks", "output_chunk_tag"),
    "due_at": ("due_at", "due_shard"),  # out of the due index too
}


def change_update(ref: InstanceRef, change: Change, version: int, now: float) -> ItemUpdate:
    """The update that writes ``change`` to an instance item and moves it to ``version``
    (its listing keys were written at its creation and stay: see the module docstring)."""
    update = ItemUpdate()
    update.set("version", n(version))
    for name, value in change.values().items():
        if value is None or (name == "pauses" and not value):
            update.remove(*_REMOVED_WITH.get(name, (name,)))
        elif name == "output":
            holder: Item = {}
            pk = instance_pk(ref.workflow, ref.id)
            ttl = now + JOURNAL_HORIZON
            update.chunks = put_blob(holder, "output", value, INSTANCE_SK, pk, ttl, OUTPUT_TAG)
            for attribute, stored in holder.items():
                update.set(attribute, stored)
        else:
            update.set(name, _attribute(name, value))
            if name == "due_at":
                update.set("due_shard", s(due_shard(ref)))
    return update


def _attribute(name: str, value: Any) -> dict[str, Any]:
    if name == "error":
        return error_value(value)
    if name == "pauses":
        return pauses_value(tuple(value))
    if name == "rollback":
        return rollback_value(value)
    if name == "status":
        return s(InstanceStatus(value).value)
    if name in ("workflow_version", "status_reason"):
        return s(str(value))
    return n(value)
