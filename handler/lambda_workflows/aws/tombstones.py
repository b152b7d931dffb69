"""What a deleted instance's tombstone still owes, as the table holds it (the calls that
settle it are :mod:`lambda_workflows.aws.deletes`).

A tombstone (see :mod:`lambda_workflows.aws.items`) carries ``cleanup`` (:class:`Cleanup`)
and a ``by_due`` entry (``due_shard = "deleted#<n>"``, ``due_at``) until the partition was
found empty after every late writer is done; a marker item ``sk = "D#<tombstone version>"``
carries the same attributes instead once an instance was created again with the id.
Which items are the deleted instance's is read from their sort keys alone
(:meth:`Owed.owns`): a new instance starts above the tombstone's version and journal
generation.
"""

from __future__ import annotations

import dataclasses
import zlib
from enum import StrEnum
from typing import Any

from lambda_workflows.engine.instances.deletion import SETTLE_SECONDS
from lambda_workflows.engine.model import InstanceRef

from . import items as it

__all__ = ["CARRIED_PREFIX", "DELETED_SHARDS", "Cleanup", "Owed", "all_deleted_shards"]

Item = dict[str, Any]

CARRIED_PREFIX = "D#"
DELETED_SHARDS = 8
"""Due index partitions of owed deletes: a delete writes its entry about three times (in, to
settling, out), so 8 take ~2,500 deletes a second before one partition's ~1,000 writes a
second; each costs the sweep one Query per run."""


class Cleanup(StrEnum):
    """What a deleted instance's tombstone (or carried marker) is still owed."""

    OWED = "owed"
    SETTLING = "settling"


def deleted_shard(ref: InstanceRef) -> str:
    """The due index partition of a deleted instance whose cleanup is owed."""
    return f"deleted#{zlib.crc32(f'{ref.workflow}/{ref.id}'.encode()) % DELETED_SHARDS}"


def all_deleted_shards() -> list[str]:
    """Every due index partition of owed deletes, for the sweep (it may grow, never shrink:
    the sweep asks every shard below it)."""
    return [f"deleted#{i}" for i in range(DELETED_SHARDS)]


@dataclasses.dataclass(frozen=True)
class Owed:
    """A delete's cleanup still owed, as its tombstone (``sk`` "I") or carried marker says."""

    pk: str
    sk: str
    version: int  # the tombstone's: events below it are the deleted instance's
    generation: int  # the tombstone's: journal generations below it are too
    deleted_at: float
    state: Cleanup

    @classmethod
    def of(cls, item: Item | None) -> Owed | None:
        """What ``item`` says is owed; None when it owes nothing (a live instance, a
        tombstone cleaned up, an item that is gone)."""
        if item is None or "cleanup" not in item or not it.is_deleted(item):
            return None
        return cls(
            pk=str(it.get_s(item, "pk")),
            sk=str(it.get_s(item, "sk")),
            version=it.get_int(item, "version"),
            generation=it.get_int(item, "generation"),
            deleted_at=it.get_n(item, "deleted_at") or 0.0,
            state=Cleanup(str(it.get_s(item, "cleanup"))),
        )

    @property
    def on_tombstone(self) -> bool:
        return self.sk == it.INSTANCE_SK

    @property
    def settle_at(self) -> float:
        return self.deleted_at + SETTLE_SECONDS

    def owns(self, sk: str) -> bool:
        """True for a key only the deleted instance (or an older one) wrote."""
        number = _number_after_prefix(sk)
        if number is None:
            return False
        if sk.startswith((it.JOURNAL_PREFIX, it.CLAIM_PREFIX)):
            return number < self.generation
        return sk.startswith(it.EVENT_PREFIX) and number < self.version

    def fields(self, due_at: float) -> Item:
        """The attributes that say what is owed (and put it on the due index)."""
        ref = it.instance_ref(self.pk)
        assert ref is not None, "an owed cleanup is in an instance's partition"
        return {
            "cleanup": it.s(self.state.value),
            "due_at": it.n(due_at),
            "due_shard": it.s(deleted_shard(ref)),
        }


def _number_after_prefix(sk: str) -> int | None:
    """The number a sort key carries after its two-character prefix (``J#000042#...``: 42),
    None when there is none."""
    digits = ""
    for character in sk[2:]:
        if not character.isdigit():
            break
        digits += character
    return int(digits) if digits else None
