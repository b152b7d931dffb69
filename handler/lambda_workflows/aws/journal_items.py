"""Journal items: a journal entry, written once and never changed, and a restart's claim on a
journal generation (see :mod:`lambda_workflows.aws.items`)."""

from __future__ import annotations

from lambda_workflows.engine.model import EntryKind, JournalEntry

from .attributes import error_value, get_error, get_int, get_n, get_s, n, put_optional, s
from .blobs import get_blob, put_blob
from .item_keys import JOURNAL_HORIZON, Item, claim_sk, journal_sk


def claim_item(pk: str, generation: int, token: str, now: float) -> Item:
    """A restart's claim on journal ``generation``: the restart's ``token``."""
    return {
        "pk": s(pk),
        "sk": s(claim_sk(generation)),
        "token": s(token),
        "expires_at": n(now + JOURNAL_HORIZON),
    }


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
