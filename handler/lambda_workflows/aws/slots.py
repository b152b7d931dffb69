"""The slots of limited workflows on the instances' DynamoDB table (see
:mod:`lambda_workflows.engine.instances.slots` for the rules).

Items, beside the instances' (see :mod:`lambda_workflows.aws.items`)::

    pk = "S#<workflow>#<slot>",  sk = "S"     one slot: holder (instance id), check_at
    pk = "Q#<workflow>#<group>", sk = <key>   one instance in its group's line; keys sort by
                                              creation time (17 digits, ms), then id

Each slot is its own partition, so acquires and releases spread over N partitions: there is
no counter item that every start and end would write. A group's line is one partition, read
oldest first with a strongly consistent Query; a group has at most 100 slots, so a large
limit spreads its lines as well. An instance holding a slot carries ``slot`` on its item,
written in the same transaction as the slot's holder, so the two never disagree.

Calls (counted by tests/functional/test_concurrency_limit.py): a release hands the slot over
with a Query of the line, one TransactWriteItems (slot, giver, taker, line item) and the
taker's work message; or, with nobody in line, a Query, one TransactWriteItems freeing it and
a second Query (the re-check that loses no wake-up). A runner queues its instance with one
TransactWriteItems (instance item, line item), then pumps: a BatchGetItem of the group's
slots, and, when one is free, a Query of the line and a TransactWriteItems per grant.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from lambda_workflows.engine.instances.ports import Giver, Holder, Moved, Taker
from lambda_workflows.engine.instances.slots import line_key
from lambda_workflows.engine.instances.transitions import Change
from lambda_workflows.engine.model import InstanceRecord, InstanceRef, InstanceStatus

from . import items as it
from .boundary import ConditionFailed, call, conditional

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

T = TypeVar("T")
_SLOT_SK = "S"
_BATCH_TRIES = 8


def slot_pk(workflow: str, slot: int) -> str:
    """The partition of one slot of ``workflow``."""
    return f"S#{workflow}#{slot}"


def line_pk(workflow: str, group: int) -> str:
    """The partition of the line of one group of ``workflow``'s slots."""
    return f"Q#{workflow}#{group}"


class DynamoSlots:
    """:class:`~lambda_workflows.engine.instances.ports.SlotStore` on the instances' table."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self.client = client
        self.table = table

    # --- the line -------------------------------------------------------------------------

    def _line_item(self, workflow: str, group: int, key: str) -> dict[str, Any]:
        return {"pk": it.s(line_pk(workflow, group)), "sk": it.s(key)}

    def enqueue(self, record: InstanceRecord, group: int, change: Change) -> InstanceRecord | None:
        update = self._instance_update(record.ref, change)
        update["ConditionExpression"] = "#version = :expected AND attribute_not_exists(slot)"
        update["ExpressionAttributeValues"][":expected"] = it.n(record.version)
        line = self._line_item(record.workflow, group, line_key(record))
        actions = [{"Update": update}, {"Put": {"TableName": self.table, "Item": line}}]
        try:
            conditional(lambda: self.client.transact_write_items(TransactItems=actions))  # type: ignore[arg-type]
        except ConditionFailed:
            return None
        return change.applied(record)

    def join(self, workflow: str, group: int, key: str) -> None:
        item = self._line_item(workflow, group, key)
        call(lambda: self.client.put_item(TableName=self.table, Item=item))

    def leave(self, workflow: str, group: int, key: str) -> None:
        item = self._line_item(workflow, group, key)
        call(lambda: self.client.delete_item(TableName=self.table, Key=item))

    def waiting(self, workflow: str, group: int, limit: int) -> list[str]:
        page = call(
            lambda: self.client.query(
                TableName=self.table,
                KeyConditionExpression="pk = :pk",  # the line, oldest first
                ExpressionAttributeValues={":pk": it.s(line_pk(workflow, group))},
                ProjectionExpression="sk",
                ConsistentRead=True,
                Limit=limit,
            )
        )
        return [str(it.get_s(item, "sk")) for item in page.get("Items", [])]

    def ahead(self, workflow: str, group: int, key: str) -> int:
        query: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND sk < :key",  # those before it in line
            "ExpressionAttributeValues": {":pk": it.s(line_pk(workflow, group)), ":key": it.s(key)},
            "Select": "COUNT",
            "ConsistentRead": True,
        }
        total = 0
        while True:
            page = call(lambda q=dict(query): self.client.query(**q))  # type: ignore[misc]
            total += int(page.get("Count", 0))
            if not page.get("LastEvaluatedKey"):
                return total
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # --- the slots ------------------------------------------------------------------------

    def _slot_key(self, workflow: str, slot: int) -> dict[str, Any]:
        return {"pk": it.s(slot_pk(workflow, slot)), "sk": it.s(_SLOT_SK)}

    def holders(self, workflow: str, slots: Sequence[int]) -> list[Holder]:
        """One BatchGetItem (a group has at most 100 slots), again for unprocessed keys."""
        keys = [self._slot_key(workflow, k) for k in slots]
        found: list[Holder] = []
        for _ in range(_BATCH_TRIES):
            if not keys:
                break
            request = {self.table: {"Keys": keys, "ConsistentRead": True}}
            answer: Any = call(lambda r=request: self.client.batch_get_item(RequestItems=r))  # type: ignore[misc]
            for item in answer.get("Responses", {}).get(self.table, []):
                holder = it.get_s(item, "holder")
                if holder is not None:
                    slot = int(str(it.get_s(item, "pk")).rsplit("#", 1)[1])
                    found.append(Holder(slot, holder, it.get_n(item, "check_at") or 0.0))
            keys = list(answer.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", []))
        return sorted(found, key=lambda h: h.slot)

    def move(
        self,
        workflow: str,
        slot: int,
        giver: Giver | None,
        taker: Taker | None,
        check_at: float,
    ) -> Moved:
        actions = [self._slot_action(workflow, slot, giver, taker, check_at)]
        outcomes = [Moved.SLOT_CHANGED]
        if giver is not None:
            given = self._giver_actions(workflow, slot, giver)
            actions += given
            outcomes += [Moved.GIVER_CHANGED] * len(given)
        if taker is not None:
            actions += self._taker_actions(workflow, taker)
            outcomes += [Moved.TAKER_GONE] * 2
        try:
            conditional(lambda: self.client.transact_write_items(TransactItems=actions))  # type: ignore[arg-type]
        except ConditionFailed as failed:
            return outcomes[failed.indexes[0]]
        return Moved.DONE

    def _slot_action(
        self, workflow: str, slot: int, giver: Giver | None, taker: Taker | None, check_at: float
    ) -> dict[str, Any]:
        values: dict[str, Any] = {}
        if giver is None:
            condition = "attribute_not_exists(holder)"  # free
        else:
            condition = "holder = :giver"  # still the giver's
            values[":giver"] = it.s(giver.id)
        update: dict[str, Any] = {
            "TableName": self.table,
            "Key": self._slot_key(workflow, slot),
            "ConditionExpression": condition,
        }
        if taker is None:
            update["UpdateExpression"] = "REMOVE holder, check_at"
        else:
            update["UpdateExpression"] = "SET holder = :taker, check_at = :check"
            values |= {":taker": it.s(taker.id), ":check": it.n(check_at)}
        if values:
            update["ExpressionAttributeValues"] = values
        return {"Update": update}

    def _giver_actions(self, workflow: str, slot: int, giver: Giver) -> list[dict[str, Any]]:
        ref = InstanceRef(workflow, giver.id)
        key = {"pk": it.s(it.instance_pk(workflow, giver.id)), "sk": it.s(it.INSTANCE_SK)}
        if giver.change is None:
            # it does not hold the slot (any more), or is gone: the slot is only freed
            check = {
                "TableName": self.table,
                "Key": key,
                "ConditionExpression": "attribute_not_exists(slot) OR slot <> :slot",
                "ExpressionAttributeValues": {":slot": it.n(slot)},
            }
            return [{"ConditionCheck": check}]
        update = self._instance_update(ref, giver.change)
        # it holds the slot, and nothing changed since the decision was taken on it
        update["ConditionExpression"] = "slot = :slot" + (
            " AND #version = :expected" if giver.version is not None else ""
        )
        update["ExpressionAttributeValues"][":slot"] = it.n(slot)
        if giver.version is not None:
            update["ExpressionAttributeValues"][":expected"] = it.n(giver.version)
        actions: list[dict[str, Any]] = [{"Update": update}]
        if giver.requeue is not None:
            line = self._line_item(workflow, *giver.requeue)
            actions.append({"Put": {"TableName": self.table, "Item": line}})
        return actions

    def _taker_actions(self, workflow: str, taker: Taker) -> list[dict[str, Any]]:
        update = self._instance_update(InstanceRef(workflow, taker.id), taker.change)
        # still queued, holding no slot (not paused, terminated, deleted or started meanwhile)
        update["ConditionExpression"] = (
            "attribute_exists(pk) AND attribute_not_exists(deleted_at) AND #status = :queued "
            "AND attribute_not_exists(slot)"
        )
        update["ExpressionAttributeNames"]["#status"] = "status"
        update["ExpressionAttributeValues"][":queued"] = it.s(InstanceStatus.QUEUED.value)
        line = self._line_item(workflow, taker.group, taker.key)
        return [{"Update": update}, {"Delete": {"TableName": self.table, "Key": line}}]

    def recheck(self, workflow: str, holder: Holder, check_at: float) -> None:
        # holder = :holder: still that holder's; else it moved, and the next look sees it
        with contextlib.suppress(ConditionFailed):
            conditional(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=self._slot_key(workflow, holder.slot),
                    UpdateExpression="SET check_at = :check",
                    ConditionExpression="holder = :holder",
                    ExpressionAttributeValues={
                        ":check": it.n(check_at),
                        ":holder": it.s(holder.id),
                    },
                )
            )

    def _instance_update(self, ref: InstanceRef, change: Change) -> dict[str, Any]:
        """An Update of the instance item writing ``change`` and bumping its version by one
        (without reading it: the condition says what it must be)."""
        parts = it.change_update(ref, change, 0, 0.0)
        parts.sets = [
            "#version = #version + :one" if s == "#version = :version" else s for s in parts.sets
        ]
        values = {k: v for k, v in parts.values.items() if k != ":version"} | {":one": it.n(1)}
        return {
            "TableName": self.table,
            "Key": {"pk": it.s(it.instance_pk(ref.workflow, ref.id)), "sk": it.s(it.INSTANCE_SK)},
            "UpdateExpression": parts.expression(),
            "ExpressionAttributeNames": dict(parts.names),
            "ExpressionAttributeValues": values,
        }
