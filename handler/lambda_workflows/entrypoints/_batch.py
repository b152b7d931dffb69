"""SQS batches answered with a partial batch response (``ReportBatchItemFailures``).

The runner and the trigger take SQS batches; a message whose handler raised is reported in
``batchItemFailures`` (SQS delivers it again), the others are deleted. Powertools' batch
utility runs the same loop, but importing it loads its event data classes (and its pydantic
parser models whenever pydantic is loaded): a cold-start cost paid by every runner for a loop
of a few lines. This is that loop, with what the handlers read of a message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from lambda_workflows.engine.immutable import immutable

__all__ = ["SqsRecord", "partial_batch_response"]

log = logging.getLogger("lambda_workflows.batch")


@immutable
class SqsRecord:
    """What a handler reads of one SQS message."""

    message_id: str
    receipt_handle: str
    body: str
    receive_count: int  # ApproximateReceiveCount: 1 on the first delivery

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> SqsRecord:
        """The record of one entry of an SQS event's ``Records``."""
        attributes = raw.get("attributes") or {}
        try:
            received = int(attributes.get("ApproximateReceiveCount", 1))
        except (TypeError, ValueError):
            received = 1
        return cls(
            message_id=str(raw.get("messageId", "")),
            receipt_handle=str(raw.get("receiptHandle", "")),
            body=str(raw.get("body", "")),
            receive_count=received,
        )


def partial_batch_response(
    event: Mapping[str, Any], handle: Callable[[SqsRecord], object]
) -> dict[str, Any]:
    """Call ``handle`` on each message of an SQS batch, in order; report each one it raised
    for in ``batchItemFailures``.

    A batch whose every message failed is still a partial batch response, not an invocation
    error: each message comes back on its own terms (its own visibility timeout).

    Raises:
        ValueError: ``event`` is not an SQS batch (no ``Records`` list).
    """
    records = event.get("Records")
    if not isinstance(records, list):
        raise ValueError(
            f"expected an SQS batch event with a 'Records' list; got keys {sorted(event)[:10]}"
        )
    failures: list[dict[str, str]] = []
    for raw in records:
        record = SqsRecord.of(raw)
        try:
            handle(record)
        except Exception as exc:  # reported, redelivered: the handler logged what it knew
            log.debug("message %s failed: %s: %s", record.message_id, type(exc).__name__, exc)
            failures.append({"itemIdentifier": record.message_id})
    return {"batchItemFailures": failures}
