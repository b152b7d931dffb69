"""Ids derived from a delivery's own id (an SQS messageId, an EventBridge event id).

SQS and EventBridge keep a message's or an event's id across redeliveries, so an instance id or
an idempotency key derived from it makes a redelivery find the work already done.
"""

from __future__ import annotations

import hashlib

from lambda_workflows.engine.limits import ID_PATTERN, MAX_ID

__all__ = ["derived_id"]


def derived_id(prefix: str, delivery_id: str) -> str:
    """An id for a delivery that names none: stable across redeliveries.

    ``<prefix>-<delivery id>`` when that is a valid instance id, else ``<prefix>-<sha256>``
    (never a lossy rewrite, which could map two deliveries to one id).
    """
    candidate = f"{prefix}-{delivery_id}"
    if len(candidate) <= MAX_ID and ID_PATTERN.fullmatch(candidate):
        return candidate
    return f"{prefix}-{hashlib.sha256(delivery_id.encode('utf-8', 'surrogatepass')).hexdigest()}"
