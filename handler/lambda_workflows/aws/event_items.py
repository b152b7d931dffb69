"""Event items: a buffered event, and the marker of an event's idempotency key (see
:mod:`lambda_workflows.aws.items`)."""

from __future__ import annotations

from lambda_workflows.engine.model import EventRecord

from .attributes import get_int, get_n, get_s, n, put_optional, s
from .blobs import get_blob, put_blob
from .item_keys import EVENT_KEY_PREFIX, EVENT_PREFIX, JOURNAL_HORIZON, Item


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
