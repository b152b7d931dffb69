"""Deleting instances: what ``delete_batch`` takes and what it answers.

Deleting an instance removes its record, journal, events and large-value chunks, and cancels its
pending wake-ups; a running or waiting instance is terminated first, so a runner busy with it stops
at its next step and every conditional write it still makes is refused (see
:meth:`~lambda_workflows.engine.instances.ports.InstanceStore.delete`). A wake-up already on its way
(a schedule that fired, a message in flight) finds nothing and does nothing.

A delete is committed by one write (the instance reads as missing from then on); removing the
rest can be cut short (a throttled call, a process that dies) or undone by a late writer (a
runner that loaded the instance before the delete records the step it was running: a journal
write is conditional on its own key, not on the instance). So a store that cannot remove
everything at once keeps the cleanup owed until it is done: a delete of the same id while it
is owed (a client's retry after a timeout) completes it and succeeds, and the recovery sweep
completes every one, then looks again once :data:`SETTLE_SECONDS` have passed, when no such
late writer can be left.

The children of a deleted parent are terminated before that one write, after the terminate
of the parent: a delete cut short between the two leaves the parent terminated and not yet
deleted, and the retry, finding it terminated, terminates the children again (idempotent)
before it deletes. So an owed cleanup, the sweep's, never owes children.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lambda_workflows.engine.limits import MAX_ID

from .batch_forms import DELETE_BATCH, MAX_BATCH, check_batch

__all__ = [
    "DELETE_ERROR_CODES",
    "MAX_DELETE_BATCH",
    "SETTLE_SECONDS",
    "DeleteBatchResult",
    "check_delete_batch",
]

MAX_DELETE_BATCH = MAX_BATCH
SETTLE_SECONDS = 960.0
"""How long after a delete a writer that loaded the instance before it may still write: a
runner invocation lasts at most the Lambda timeout (900 s), a little less than a lease
(``RunnerSettings.lease_seconds``); a restart under way, at most the API's 29 s. The sweep's
last look at a deleted instance's partition comes after this."""
DELETE_ERROR_CODES = {
    "not_found": "no instance has this id (never created, or already deleted)",
    "invalid_input": "the id is not a valid instance id",
}
"""Why a batch item was not deleted, by its ``code`` in ``DeleteBatchResult.errors``."""


@dataclass(slots=True)
class DeleteBatchResult:
    """What ``delete_batch`` did, per position of the ids it was given.

    ``deleted`` holds ``{"id"}`` for each position whose instance is gone because of this
    call; ``errors`` holds ``{"index", "id", "code", "message"}`` for each other position
    (``code`` one of :data:`DELETE_ERROR_CODES`). An id given twice is deleted once and
    reported at each of its positions.
    """

    deleted: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"deleted": [dict(d) for d in self.deleted], "errors": list(self.errors)}

    def __getitem__(self, key: str) -> Any:
        """Also readable as a mapping: ``result["deleted"]``."""
        return self.to_dict()[key]

    @classmethod
    def from_dict(cls, shown: Any) -> DeleteBatchResult:
        """The result a :meth:`to_dict` shows (the body of the API's answer)."""
        return cls(
            deleted=[{"id": str(d["id"])} for d in shown["deleted"]],
            errors=[dict(e) for e in shown["errors"]],
        )

    def refuse(self, index: int, id: Any, code: str, message: str) -> None:
        """Report position ``index`` as not deleted (a string id of at most 100 characters is
        shown; anything else is None)."""
        shown = id if isinstance(id, str) and len(id) <= MAX_ID else None
        self.errors.append({"index": index, "id": shown, "code": code, "message": message})


def check_delete_batch(ids: Any) -> list[str]:
    """The ids of a batch delete, or InvalidInput for a batch malformed as a whole (nothing
    is deleted then): not a list, more than 100 ids, an id that is not a string (see
    :func:`~lambda_workflows.engine.instances.batch_forms.check_batch`, which a batch create's items
    pass
    as well)."""
    return list(check_batch(ids, DELETE_BATCH, "delete_batch takes a list of instance ids"))
