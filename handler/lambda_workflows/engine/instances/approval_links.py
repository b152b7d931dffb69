"""Opening and using an approval link against the instance it names (rules in :mod:`.links`).

Both check everything before writing anything: the signature, the instance and its
generation, that the link was not used, and that its wait is pending and before its
deadline. Using the link then sends the event with the link's idempotency key, so of two
concurrent uses one is stored and the other refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lambda_workflows.engine.errors import InstanceNotFound
from lambda_workflows.engine.links import LinkClaims, LinkRefused, LinkSigner, event_key
from lambda_workflows.engine.model import (
    FINISHED,
    EntryKind,
    EventRecord,
    InstanceRef,
    JournalEntry,
)
from lambda_workflows.engine.replay.journal import delivery_key

if TYPE_CHECKING:
    from .service import InstanceService

__all__ = ["check_link", "use_link"]


def check_link(service: InstanceService, signer: LinkSigner, token: str) -> LinkClaims:
    """The claims of a link that can be used now. Reads only.

    Raises:
        LinkRefused: the link is invalid, used, expired or stale (its ``status`` and ``code``).
    """
    claims = signer.verify(token)
    ref = InstanceRef(claims.workflow, claims.instance)
    try:
        state = service.store.load(ref)
    except InstanceNotFound:
        raise _stale("its instance no longer exists") from None
    record = state.record
    if record.generation != claims.generation:
        raise _stale("its instance was restarted since the link was made")
    if service.store.find_event(ref, event_key(token)) is not None:
        raise LinkRefused(409, "link_used", "this link was used already; a link works once")
    if record.status in FINISHED:
        raise _expired(f"its instance is {record.status}")
    keys = {entry.key for entry in state.entries}
    waits = [e for e in state.entries if _is_wait(e, claims)]
    pending = [w for w in waits if delivery_key(w.key) not in keys]
    if not pending:
        if waits:
            raise _expired(f"the wait {claims.name!r} has ended")
        raise LinkRefused(
            409,
            "link_not_ready",
            f"the instance is not waiting on {claims.name!r} yet; try again in a moment",
        )
    if service.clock.time() >= (pending[-1].wake_at or 0.0):
        raise _expired(f"the wait {claims.name!r} timed out")
    return claims


def use_link(
    service: InstanceService, signer: LinkSigner, token: str, payload: Any = None
) -> tuple[LinkClaims, EventRecord]:
    """Send the link's event (``payload`` as its payload), once.

    Raises:
        LinkRefused: as :func:`check_link`; ``link_used`` also when a concurrent use of the
            same link stored its event first.
        InvalidInput: the payload cannot be stored.
    """
    claims = check_link(service, signer, token)
    ref = InstanceRef(claims.workflow, claims.instance)
    stored, fresh = service.send_event_once(ref, claims.type, payload, key=event_key(token))
    if not fresh:
        raise LinkRefused(409, "link_used", "this link was used already; a link works once")
    return claims, stored


def _is_wait(entry: JournalEntry, claims: LinkClaims) -> bool:
    return (
        entry.kind == EntryKind.WAIT
        and entry.name == claims.name
        and entry.event_type == claims.type
        and entry.parent is None
    )


def _stale(why: str) -> LinkRefused:
    return LinkRefused(410, "link_stale", f"this link no longer works: {why}")


def _expired(why: str) -> LinkRefused:
    return LinkRefused(410, "link_expired", f"this link has expired: {why}")
