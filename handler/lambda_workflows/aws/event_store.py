"""Events sent to an instance: buffered in its partition, once per idempotency key.

An event is written in one transaction with a bump of the instance item's version, on the
condition that the version is the one the sender read: events are ordered by the store (the
event's id is the new version), never by a clock, and an event to a finished instance is
refused. An event sent with a key also writes the key's marker; a second send with that key
fails on it and gets the first event back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.errors import StorageError
from lambda_workflows.engine.instances.recovery import due_shard
from lambda_workflows.engine.model import EventRecord, InstanceRef

from . import items as it
from .boundary import ConditionFailed, call, conditional, write_once
from .instance_reads import InstanceReads

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["EventStore"]


@dataclass
class EventStore:
    """The events of the instances of one table (see the module docstring).

    Attributes:
        client: a boto3 DynamoDB client.
        table: the table name.
        clock: the time source (TTL stamps).
        reads: the instance reads (an event refused tells a missing instance apart).
    """

    client: DynamoDBClient
    table: str
    clock: Clock
    reads: InstanceReads

    def add_event(
        self, ref: InstanceRef, event: EventRecord, expected_version: int, due_at: float | None
    ) -> EventRecord | None:
        pk = it.instance_pk(ref.workflow, ref.id)
        now = self.clock.time()
        item, chunks = it.event_item(pk, event, now)
        sets = "version = :next, updated_at = :now"
        values: dict[str, Any] = {
            ":next": it.n(expected_version + 1),
            ":expected": it.n(expected_version),
            ":now": it.n(now),
            ":c": it.s("complete"),
            ":e": it.s("errored"),
            ":t": it.s("terminated"),
        }
        if due_at is not None:
            sets += ", due_at = :due, due_shard = :shard"
            values |= {":due": it.n(due_at), ":shard": it.s(due_shard(ref))}
        bump = {
            "Update": {
                "TableName": self.table,
                "Key": it.instance_key(ref, it.INSTANCE_SK),
                # item_writes: every item of this transaction (see
                # lambda_workflows.engine.instances.usage)
                "UpdateExpression": "SET " + sets + " ADD item_writes :written",
                # version = :expected: nothing changed since the sender read the instance, so
                # the event's id (the new version) sorts after every event committed before it
                # — FIFO from the store, never from a clock — and the sender's decision to
                # wake the instance or not was taken on its current state. Not finished:
                # events to finished instances are refused.
                "ConditionExpression": "version = :expected AND NOT (#s IN (:c, :e, :t))",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": values,
            }
        }
        actions = [bump, {"Put": write_once(self.table, item)}]
        if event.key is not None:
            marker = write_once(self.table, it.event_key_item(pk, event, now))
            # the key's marker exists: this event was sent before; hand back that one
            marker["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
            actions.append({"Put": marker})
        actions += [{"Put": write_once(self.table, c)} for c in chunks]
        values[":written"] = it.n(len(actions))
        try:
            self._transact(actions)
        except ConditionFailed as failed:
            if event.key is not None and 2 in failed.indexes:
                return self.find_event(ref, event.key)
            if 0 in failed.indexes:
                self.reads.get(ref)  # raises InstanceNotFound when it does not exist
                return None
            raise StorageError(f"event {event.id} of {ref} was already stored") from None
        return event

    def find_event(self, ref: InstanceRef, key: str) -> EventRecord | None:
        response = call(
            lambda: self.client.get_item(
                TableName=self.table,
                Key=it.instance_key(ref, it.EVENT_KEY_PREFIX + key),
                ConsistentRead=True,
            )
        )
        item = response.get("Item")
        return None if item is None else it.keyed_event(item)

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        conditional(lambda: self.client.transact_write_items(TransactItems=actions))  # type: ignore[arg-type]
