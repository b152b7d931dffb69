"""The instance item: written whole at creation, changed by versioned updates, and replaced
by a tombstone when the instance is deleted (see :mod:`lambda_workflows.aws.items`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lambda_workflows.engine.instances.recovery import due_shard
from lambda_workflows.engine.instances.transitions import Change
from lambda_workflows.engine.model import InstanceRecord, InstanceRef, InstanceStatus, ParentRef

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
from .blobs import get_blob, put_blob
from .item_keys import (
    INSTANCE_SK,
    JOURNAL_HORIZON,
    OUTPUT_TAG,
    REFRESH_BEFORE,
    Item,
    created_sort_key,
    instance_pk,
)
from .shards import INDEX_SHARDS, created_partition, index_shard

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
    # what it used (see lambda_workflows.engine.instances.usage); its creation counts itself and
    # its chunks
    item["item_writes"] = n(record.item_writes + 1 + len(chunks))
    put_optional(
        item, {"invocations": record.invocations or None, "schedules": record.schedules or None}, {}
    )
    return item, chunks


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
