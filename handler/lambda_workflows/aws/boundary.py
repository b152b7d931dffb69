"""The one boundary between the instance table's adapters and DynamoDB's failures.

Every call an adapter of the instance table makes goes through :func:`call` or
:func:`conditional`:

- a failed condition (``ConditionalCheckFailedException``, or a transaction cancelled by one
  or more ``ConditionalCheckFailed`` reasons) is a lost race: :func:`conditional` raises
  :class:`ConditionFailed`, carrying what DynamoDB handed back (``ALL_OLD``), and the adapter
  handles it in place. It never leaves the adapter;
- every other failure goes through :func:`lambda_workflows.aws.errors.translate` and becomes
  a StorageError (or InvalidInput for a value too large), which the engine treats as "try
  again later", never as a step failure.

Callers pass the boto3 call itself (``conditional(lambda: self.client.put_item(...))``), so
that the operation stays visible where it is made (the IAM grants are read from there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from .errors import error_code, translate

__all__ = ["ConditionFailed", "call", "conditional", "write_once"]

T = TypeVar("T")
Item = dict[str, Any]


class ConditionFailed(Exception):
    """A condition expression failed (internal: always handled by the adapter that wrote).

    Attributes:
        item: what the failed write found (``ALL_OLD``): of the single write, or of the first
            failed action of a transaction; None when DynamoDB left it out.
        indexes: the failed actions of a transaction (``[0]`` for a single write).
        reasons: a cancelled transaction's reasons, one per action.
    """

    def __init__(
        self,
        item: Item | None,
        indexes: list[int] | None = None,
        reasons: list[Any] | None = None,
    ) -> None:
        super().__init__("condition failed")
        self.item = item
        self.indexes = indexes or []
        self.reasons = reasons or []

    def old_item(self, index: int) -> Item | None:
        """ALL_OLD of action ``index`` of a cancelled transaction, when it failed."""
        if index not in self.indexes or index >= len(self.reasons):
            return None
        old = self.reasons[index].get("Item")
        return dict(old) if old else None


def call(request: Callable[[], T]) -> T:
    """Run one DynamoDB call that has no condition; any failure becomes the library's error."""
    try:
        return request()
    except (ClientError, BotoCoreError) as exc:
        raise translate(exc, "DynamoDB") from exc


def conditional(request: Callable[[], T]) -> T:
    """Run one conditional DynamoDB write (or transaction): a failed condition raises
    :class:`ConditionFailed`, any other failure the library's error."""
    try:
        return request()
    except ClientError as exc:
        failed = _condition_failed(exc)
        if failed is not None:
            raise failed from None
        raise translate(exc, "DynamoDB") from exc
    except BotoCoreError as exc:
        raise translate(exc, "DynamoDB") from exc


def _condition_failed(exc: ClientError) -> ConditionFailed | None:
    code = error_code(exc)
    if code == "ConditionalCheckFailedException":
        return ConditionFailed(exc.response.get("Item"), [0])  # type: ignore[arg-type]
    if code != "TransactionCanceledException":
        return None
    reasons = list(exc.response.get("CancellationReasons", []))
    failed = [i for i, r in enumerate(reasons) if r.get("Code") == "ConditionalCheckFailed"]
    if not failed:
        return None  # cancelled for another reason (throttling, a conflict): translated
    old = reasons[failed[0]].get("Item")
    return ConditionFailed(dict(old) if old else None, failed, reasons)


def write_once(table: str, item: Item) -> dict[str, Any]:
    """The Put of an item written once and never replaced (a chunk, an event), for a
    transaction."""
    # attribute_not_exists(pk): such an item is never overwritten
    return {"TableName": table, "Item": item, "ConditionExpression": "attribute_not_exists(pk)"}
