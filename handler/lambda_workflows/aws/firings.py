"""The firing ledger on the instance table: the sweep's watermarks of the recurring schedules,
and which firings' instances exist (see :mod:`lambda_workflows.engine.instances.firing_recovery`).

The watermarks are one config item, ``pk = "C#schedule-firings"``, ``sk = "C"`` (as the cursor
key is, see :mod:`lambda_workflows.aws.cursors`): a map of series name → epoch seconds, and a
``version``. It has no index attribute and no ``expires_at``, so no listing, no sweep of the
due index and no TTL ever sees it. A few hundred bytes per hundred schedules: the 400 KB item
holds thousands. It is read once per sweep run (one strongly consistent GetItem) and written
(one PutItem) only when a watermark moved, on condition that its version is still the one read
(``attribute_not_exists(pk)`` for the first write): two overlapping sweeps never move a
watermark back.

Which firings were started is read from the instance items themselves, keys only
(BatchGetItem, 100 keys a call, strongly consistent): a live instance item or the tombstone of
a deleted one both count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lambda_workflows.engine.errors import StorageError
from lambda_workflows.engine.instances.ports import FiringWatermarks
from lambda_workflows.engine.model import InstanceRef

from .errors import error_code, translate
from .items import INSTANCE_SK, instance_pk, instance_ref, n, s

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["LEDGER_KEY", "DynamoFiringLedger"]

LEDGER_KEY = {"pk": {"S": "C#schedule-firings"}, "sk": {"S": "C"}}
_BATCH_GET = 100  # BatchGetItem's limit per call
_BATCH_TRIES = 8  # calls per batch before keys DynamoDB left unprocessed are given up on


class DynamoFiringLedger:
    """:class:`~lambda_workflows.engine.instances.ports.ScheduleStore` on the instance table: the
    firing
    ledger.

    Args:
        client: a boto3 DynamoDB client.
        table: the instance table's name.
    """

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self.client = client
        self.table = table

    def read(self) -> FiringWatermarks:
        try:
            response = self.client.get_item(
                TableName=self.table, Key=LEDGER_KEY, ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise translate(exc, "DynamoDB", "GetItem (firing watermarks)") from exc
        item = response.get("Item")
        if item is None:
            return FiringWatermarks({})
        through = {name: float(value["N"]) for name, value in item["through"]["M"].items()}
        return FiringWatermarks(through, int(item["version"]["N"]))

    def write(self, through: Mapping[str, float], read: FiringWatermarks) -> bool:
        item = {
            **LEDGER_KEY,
            "through": {"M": {name: n(at) for name, at in through.items()}},
            "version": n(read.version + 1),
        }
        put: dict[str, Any] = {"TableName": self.table, "Item": item}
        if read.version == 0:
            put["ConditionExpression"] = "attribute_not_exists(pk)"  # nobody wrote it first
        else:
            # still the version read: an overlapping sweep's newer watermarks are kept
            put["ConditionExpression"] = "#version = :read"
            put["ExpressionAttributeNames"] = {"#version": "version"}
            put["ExpressionAttributeValues"] = {":read": n(read.version)}
        try:
            self.client.put_item(**put)
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise translate(exc, "DynamoDB", "PutItem (firing watermarks)") from exc
        except BotoCoreError as exc:
            raise translate(exc, "DynamoDB", "PutItem (firing watermarks)") from exc
        return True

    def started(self, refs: Sequence[InstanceRef]) -> set[InstanceRef]:
        found: set[InstanceRef] = set()
        for start in range(0, len(refs), _BATCH_GET):
            found |= self._started(refs[start : start + _BATCH_GET])
        return found

    def _started(self, refs: Sequence[InstanceRef]) -> set[InstanceRef]:
        keys: list[Any] = [
            {"pk": s(instance_pk(ref.workflow, ref.id)), "sk": s(INSTANCE_SK)} for ref in refs
        ]
        found: set[InstanceRef] = set()
        for _ in range(_BATCH_TRIES):
            request: dict[str, Any] = {
                self.table: {"Keys": keys, "ProjectionExpression": "pk", "ConsistentRead": True}
            }
            try:
                response: Any = self.client.batch_get_item(RequestItems=request)
            except (ClientError, BotoCoreError) as exc:
                raise translate(exc, "DynamoDB", "BatchGetItem (firings)") from exc
            for item in response.get("Responses", {}).get(self.table, []):
                ref = instance_ref(str(item["pk"]["S"]))
                if ref is not None:
                    found.add(ref)
            keys = list(response.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", []))
            if not keys:
                return found
        # a key not read is not known to be missing: creating it could revive a deleted instance
        raise StorageError(
            f"DynamoDB BatchGetItem (firings) left {len(keys)} keys unprocessed after "
            f"{_BATCH_TRIES} calls; retry"
        )
