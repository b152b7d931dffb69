"""Reading an instance: its item alone, or its whole partition (the instance store's reads).

Both read strongly consistent: a runner decides on what it loaded, and every write it then makes is
conditional on the version it read (see :mod:`lambda_workflows.engine.instances.advance`). A deleted
instance's tombstone reads as missing.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.errors import InstanceNotFound
from lambda_workflows.engine.instances.ports import InstanceState
from lambda_workflows.engine.model import FINISHED, InstanceRecord, InstanceRef

from . import items as it
from .boundary import ConditionFailed, call, conditional

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["InstanceReads", "not_found"]


@dataclass
class InstanceReads:
    """Reads instance items and partitions (see the module docstring).

    Attributes:
        client: a boto3 DynamoDB client.
        table: the table name.
        clock: the time source (a load pushes back the TTL of very old items).
    """

    client: DynamoDBClient
    table: str
    clock: Clock

    def get(self, ref: InstanceRef) -> InstanceRecord:
        response = call(
            lambda: self.client.get_item(
                TableName=self.table,
                Key=it.instance_key(ref, it.INSTANCE_SK),
                ConsistentRead=True,
            )
        )
        item = response.get("Item")
        if item is None or it.is_deleted(item):
            raise not_found(ref)
        return it.instance_record(item)

    def load(self, ref: InstanceRef) -> InstanceState:
        """One strongly consistent Query over the instance's partition (paginated past 1 MB)."""
        pk = it.instance_pk(ref.workflow, ref.id)
        found: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        while True:
            query: dict[str, Any] = {
                "TableName": self.table,
                # the whole partition: instance item, events, journal, chunks
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": it.s(pk)},
                "ConsistentRead": True,
            }
            if start:
                query["ExclusiveStartKey"] = start
            page = call(lambda q=query: self.client.query(**q))  # type: ignore[misc]
            found.extend(page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if not start:
                break
        chunks = {i["sk"]["S"]: i for i in found if it.CHUNK_MARK in i["sk"]["S"]}
        instance = next((i for i in found if i["sk"]["S"] == it.INSTANCE_SK), None)
        if instance is None or it.is_deleted(instance):
            raise not_found(ref)
        record = it.instance_record(instance, chunks)
        prefix = it.journal_sk(record.generation, "")
        entries = [
            it.journal_entry(i, chunks)
            for i in found
            if i["sk"]["S"].startswith(prefix) and it.CHUNK_MARK not in i["sk"]["S"]
        ]
        events = [
            it.event_record(i, chunks)
            for i in found
            if i["sk"]["S"].startswith(it.EVENT_PREFIX) and it.CHUNK_MARK not in i["sk"]["S"]
        ]
        if record.status not in FINISHED:
            self._refresh_ttl(found)
        return InstanceState(
            record, entries, [e for e in events if e.generation == record.generation]
        )

    def _refresh_ttl(self, found: list[dict[str, Any]]) -> None:
        """Push back the TTL of items of a very long-lived instance before they expire."""
        soon = self.clock.time() + it.REFRESH_BEFORE
        for item in found:
            ttl = item.get("expires_at")
            if item["sk"]["S"] != it.INSTANCE_SK and ttl is not None and float(ttl["N"]) < soon:
                later = it.n(self.clock.time() + it.JOURNAL_HORIZON)
                with contextlib.suppress(ConditionFailed):  # deleted since it was read
                    conditional(
                        lambda i=item, v=later: self.client.update_item(  # type: ignore[misc]
                            TableName=self.table,
                            Key={"pk": i["pk"], "sk": i["sk"]},
                            UpdateExpression="SET expires_at = :t",
                            # attribute_exists(pk): an update never recreates an item the
                            # instance's delete removed after the load read it
                            ConditionExpression="attribute_exists(pk)",
                            ExpressionAttributeValues={":t": v},
                        )
                    )


def not_found(ref: InstanceRef) -> InstanceNotFound:
    """The error for an instance that does not exist (or was deleted)."""
    return InstanceNotFound(
        f"no instance '{ref.id}' of workflow '{ref.workflow}'; check the id, or list the "
        "workflow's instances"
    )
