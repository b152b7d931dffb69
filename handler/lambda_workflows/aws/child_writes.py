"""A child workflow's creation and its parent's wait, in one DynamoDB transaction.

What :meth:`InstanceStore.record_child_wait
<lambda_workflows.engine.instances.ports.InstanceStore.record_child_wait>` promises (why: see
:mod:`lambda_workflows.engine.instances.children`): the child exists only if its parent's journal
holds the wait that names it, and neither is written once the parent moved on (terminated,
restarted, deleted, rolling back). One ``TransactWriteItems`` does it:

- a ``ConditionCheck`` of the parent's instance item (still this journal generation, not
  finished, not rolling back, not deleted);
- the wait's journal item (``attribute_not_exists``: first writer wins, as every entry);
- the child's instance item and the chunks of its params (``attribute_not_exists``, or over
  the tombstone of a deleted instance with the same id, above its version and generation).

It replaces the two puts a child's start made before (the child, then the wait): one call, and
each of its items costs two write units instead of one (a transaction's price), plus two for
the check.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from lambda_workflows.engine.errors import InstanceAlreadyExists, StorageError
from lambda_workflows.engine.model import InstanceRecord, InstanceRef, InstanceStatus, JournalEntry

from . import items as it
from .boundary import ConditionFailed, call, conditional, write_once

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["ChildWrites"]

_PARENT, _WAIT = 0, 1  # the first two actions of the transaction


class _Reborn(Exception):
    """The child's id is a deleted instance's tombstone: create the child over it."""

    def __init__(self, tombstone: dict[str, Any]) -> None:
        super().__init__("deleted instance")
        self.tombstone = tombstone


class ChildWrites:
    """Records a ``step.run_workflow`` wait, with its child, on the instances' table."""

    def __init__(self, client: DynamoDBClient, table: str, index_shards: int) -> None:
        self.client = client
        self.table = table
        self.index_shards = index_shards

    def record(
        self,
        parent: InstanceRef,
        generation: int,
        wait: JournalEntry,
        child: InstanceRecord | None,
        now: float,
    ) -> JournalEntry | None:
        """See :meth:`~lambda_workflows.engine.instances.ports.InstanceStore.record_child_wait`."""
        try:
            return self._attempt(parent, generation, wait, child, None, now)
        except _Reborn as deleted:  # the child's id is a deleted instance's: start above it
            return self._attempt(parent, generation, wait, child, deleted.tombstone, now)

    def _attempt(
        self,
        parent: InstanceRef,
        generation: int,
        wait: JournalEntry,
        child: InstanceRecord | None,
        over: dict[str, Any] | None,
        now: float,
    ) -> JournalEntry | None:
        actions = self._actions(parent, generation, wait, now)
        child_at = len(actions)  # the index of the child's put
        if child is not None:
            actions += self._child_actions(child, over)
        try:
            self._transact(actions)
        except ConditionFailed as failed:
            if _PARENT in failed.indexes:
                return None  # the parent moved on first: nothing was written
            if _WAIT in failed.indexes:  # another runner recorded it first (and its child)
                return self._winner(failed.old_item(_WAIT), wait, parent, generation)
            assert child is not None, "only the child's put is left to fail"
            old = failed.old_item(child_at)
            if over is None and old is not None and it.is_deleted(old):
                raise _Reborn(old) from None
            raise InstanceAlreadyExists(child.workflow, child.id) from None
        return wait

    def _actions(
        self, parent: InstanceRef, generation: int, wait: JournalEntry, now: float
    ) -> list[dict[str, Any]]:
        pk = it.instance_pk(parent.workflow, parent.id)
        item, chunks = it.entry_item(pk, generation, wait, now)
        check = {
            "TableName": self.table,
            "Key": {"pk": it.s(pk), "sk": it.s(it.INSTANCE_SK)},
            # The parent still runs this generation forward: a terminate, restart, delete or
            # terminate(rollback=True) that came first cancels the whole write, so no child
            # ever exists that the parent's journal does not name (engine.children).
            "ConditionExpression": (
                "#generation = :generation AND NOT (#status IN (:complete, :errored, "
                ":terminated)) AND attribute_not_exists(#rollback) "
                "AND attribute_not_exists(deleted_at)"
            ),
            "ExpressionAttributeNames": {
                "#generation": "generation",
                "#status": "status",
                "#rollback": "rollback",
            },
            "ExpressionAttributeValues": {
                ":generation": it.n(generation),
                ":complete": it.s(InstanceStatus.COMPLETE.value),
                ":errored": it.s(InstanceStatus.ERRORED.value),
                ":terminated": it.s(InstanceStatus.TERMINATED.value),
            },
        }
        put = {
            "TableName": self.table,
            "Item": item,
            # attribute_not_exists(pk): a journal entry is recorded once; a second runner
            # loses and continues with the first one's wait (and its child)
            "ConditionExpression": "attribute_not_exists(pk)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        return [{"ConditionCheck": check}, {"Put": put}, *map(self._new, chunks)]

    def _child_actions(
        self, child: InstanceRecord, tombstone: dict[str, Any] | None
    ) -> list[dict[str, Any]]:
        put: dict[str, Any] = {
            "TableName": self.table,
            # attribute_not_exists(pk): the child's id is free; a taken one fails the step
            "ConditionExpression": "attribute_not_exists(pk)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if tombstone is not None:
            version = it.get_int(tombstone, "version")
            generation = max(child.generation, it.get_int(tombstone, "generation"))
            child = dataclasses.replace(child, version=version + 1, generation=generation)
            # still that tombstone: nobody created (or deleted) the id meanwhile
            put["ConditionExpression"] = "attribute_exists(deleted_at) AND #version = :tombstone"
            put["ExpressionAttributeNames"] = {"#version": "version"}
            put["ExpressionAttributeValues"] = {":tombstone": it.n(version)}
        item, chunks = it.instance_item(child, self.index_shards)
        return [{"Put": put | {"Item": item}}, *map(self._new, chunks)]

    def _new(self, item: dict[str, Any]) -> dict[str, Any]:
        return {"Put": write_once(self.table, item)}  # a chunk item: written once

    def _winner(
        self,
        old: dict[str, Any] | None,
        wait: JournalEntry,
        parent: InstanceRef,
        generation: int,
    ) -> JournalEntry:
        """The wait another runner recorded first (read back when ALL_OLD was left out)."""
        if old is None:
            pk = it.instance_pk(parent.workflow, parent.id)
            key = {"pk": it.s(pk), "sk": it.s(it.journal_sk(generation, wait.key))}
            found = call(
                lambda: self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True)
            )
            old = found.get("Item")
            if old is None:
                raise StorageError(f"journal entry {wait.key!r} of {parent} vanished")
        return it.journal_entry(old, {})  # a wait has no result: no chunks

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        conditional(lambda: self.client.transact_write_items(TransactItems=actions))  # type: ignore[arg-type]
