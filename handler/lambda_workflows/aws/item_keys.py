"""The keys of the instance table's items, and how long its write-once items are kept.

The layout these keys make is described in :mod:`lambda_workflows.aws.items`. This module is at
the bottom of the item modules: it imports nothing of theirs.
"""

from __future__ import annotations

from typing import Any

from lambda_workflows.engine.model import InstanceRef

Item = dict[str, Any]

INSTANCE_SK = "I"
EVENT_PREFIX = "E#"
EVENT_KEY_PREFIX = "K#"
JOURNAL_PREFIX = "J#"
CLAIM_PREFIX = "G#"
CHUNK_MARK = "\x1dc"
OUTPUT_TAG = "output"  # an instance's output chunks: "I\x1dcoutput<nn>", apart from its params'
SEEDED = "seeded"  # on a journal entry a restart from a step copied: its step did not run again
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


def instance_key(ref: InstanceRef, sk: str) -> Item:
    """The table key of item ``sk`` of an instance's partition."""
    return {"pk": {"S": instance_pk(ref.workflow, ref.id)}, "sk": {"S": sk}}
