"""Creating instances: one, or a batch in one transaction (the instance store's creation).

An id is taken once: a create writes the instance item on the condition that no item has
its key, so a second create of the same id fails instead of overwriting. The id of a deleted
instance is free again: a create over its tombstone starts above the tombstone's version and
journal generation, so a late writer of the deleted instance is never read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lambda_workflows.engine.errors import InstanceAlreadyExists
from lambda_workflows.engine.instances.ports import BatchCreateResult
from lambda_workflows.engine.model import InstanceRecord

from . import items as it
from .boundary import ConditionFailed, conditional, write_once

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from .deletes import InstanceDeletes

__all__ = ["CreationWrites"]

_TRANSACTION_BYTES = 3_500_000  # under the 4 MB TransactWriteItems limit
_TRANSACTION_ITEMS = 100


@dataclass
class CreationWrites:
    """Writes new instance items (see the module docstring).

    Attributes:
        client: a boto3 DynamoDB client.
        table: the table name.
        index_shards: shards of the listing index keys (see :mod:`lambda_workflows.aws.shards`).
        deletes: the store's deletes, asked for only when a create replaces a tombstone.
    """

    client: DynamoDBClient
    table: str
    index_shards: int
    deletes: Callable[[], InstanceDeletes]

    def create(self, record: InstanceRecord) -> None:
        try:
            # attribute_not_exists(pk): only if no instance with this id exists — a second
            # create of the same id fails instead of overwriting.
            self._put_instance(record, "attribute_not_exists(pk)", {})
        except ConditionFailed as taken:
            if taken.item is None or not it.is_deleted(taken.item):
                raise InstanceAlreadyExists(record.workflow, record.id) from None
            self._create_over(record, taken.item)

    def _create_over(self, record: InstanceRecord, tombstone: dict[str, Any]) -> None:
        """Create ``record`` in place of a deleted instance's tombstone, above its version
        and journal generation (a late writer of the deleted instance is never read); what
        that delete still owes the sweep is carried over first (see
        :mod:`lambda_workflows.aws.deletes`)."""
        self.deletes().carry_over(tombstone)
        version = it.get_int(tombstone, "version")
        generation = max(record.generation, it.get_int(tombstone, "generation"))
        reborn = dataclasses.replace(record, version=version + 1, generation=generation)
        try:
            # still that tombstone: nobody created (or deleted) the id meanwhile
            self._put_instance(
                reborn,
                "attribute_exists(deleted_at) AND #version = :tombstone",
                {":tombstone": it.n(version)},
            )
        except ConditionFailed:
            raise InstanceAlreadyExists(record.workflow, record.id) from None

    def _put_instance(self, record: InstanceRecord, condition: str, values: dict[str, Any]) -> None:
        """Write a new instance item (and its chunks) if ``condition`` holds; ConditionFailed
        carries the item that was there."""
        item, chunks = it.instance_item(record, self.index_shards)
        put: dict[str, Any] = {
            "TableName": self.table,
            "Item": item,
            "ConditionExpression": condition,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if values:
            put |= {"ExpressionAttributeNames": {"#version": "version"}}
            put |= {"ExpressionAttributeValues": values}
        if chunks:
            try:
                self._transact(
                    [{"Put": put}, *({"Put": write_once(self.table, c)} for c in chunks)]
                )
            except ConditionFailed as failed:
                raise ConditionFailed(failed.old_item(0)) from None
        else:
            conditional(lambda: self.client.put_item(**put))

    def create_many(self, records: Sequence[InstanceRecord]) -> BatchCreateResult:
        """One transaction for the batch when it fits (≤ 100 items, < 4 MB); ids that exist
        make the transaction fail with a per-item reason, and the rest is retried without them.
        """
        result = BatchCreateResult()
        pending = list(records)
        for group in self._groups(pending):
            remaining = list(group)
            while remaining:
                puts = []
                for record in remaining:
                    item, chunks = it.instance_item(record, self.index_shards)
                    puts.append((record, item, chunks))
                if any(chunks for _, _, chunks in puts):
                    self._create_each(remaining, result)  # chunked params: a transaction each
                    break
                actions = [
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": item,
                            # only if the id is free (see create)
                            "ConditionExpression": "attribute_not_exists(pk)",
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    }
                    for _, item, _ in puts
                ]
                try:
                    self._transact(actions)
                except ConditionFailed as failed:
                    taken = {remaining[i].id for i in failed.indexes if i < len(remaining)}
                    deleted = [  # ids of deleted instances are free: created one by one
                        remaining[i]
                        for i in failed.indexes
                        if i < len(remaining) and it.is_deleted(failed.old_item(i) or {})
                    ]
                    self._create_each(deleted, result)
                    reborn = {r.id for r in deleted}
                    result.existing.extend(
                        r.id for r in remaining if r.id in taken and r.id not in reborn
                    )
                    remaining = [r for r in remaining if r.id not in taken]
                    continue
                result.created.extend(r.id for r in remaining)
                remaining = []
        return result

    def _create_each(self, records: Sequence[InstanceRecord], result: BatchCreateResult) -> None:
        for record in records:
            try:
                self.create(record)
                result.created.append(record.id)
            except InstanceAlreadyExists:
                result.existing.append(record.id)

    def _groups(self, records: list[InstanceRecord]) -> list[list[InstanceRecord]]:
        groups: list[list[InstanceRecord]] = [[]]
        size = 0
        for record in records:
            weight = len(record.params) + 512
            if groups[-1] and (
                len(groups[-1]) >= _TRANSACTION_ITEMS or size + weight > _TRANSACTION_BYTES
            ):
                groups.append([])
                size = 0
            groups[-1].append(record)
            size += weight
        return [g for g in groups if g]

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        conditional(lambda: self.client.transact_write_items(TransactItems=actions))  # type: ignore[arg-type]
