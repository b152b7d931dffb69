"""The runner's writes to the instance item: its versioned update, and its lease.

What makes wake-ups never lost: every write to the instance item bumps ``version``, and the runner's
writes are conditional on the version it loaded (see
:mod:`lambda_workflows.engine.instances.advance`). One runner at a time works on an instance: it
holds the lease (owner, message delivery, expiry) and every lease write is conditional on it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.instances.recovery import due_shard
from lambda_workflows.engine.instances.transitions import Change
from lambda_workflows.engine.instances.usage import schedules_in
from lambda_workflows.engine.model import RUNNABLE, InstanceRecord, InstanceRef, InstanceStatus

from . import items as it
from .boundary import ConditionFailed, conditional
from .instance_reads import InstanceReads

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["InstanceLeases"]

# leased and set running; waitingForPause is leased as it is (the runner pauses it)
_LEASED_TO_RUN = sorted(RUNNABLE - {InstanceStatus.WAITING_FOR_PAUSE})
# the lease is still the one this delivery of this message took (see engine.advance)
_HELD_BY = "lease_owner = :owner AND lease_delivery = :delivery"
# nobody holds a lease live at :free_at (a lease's own condition, minus the takeover of an
# earlier delivery's: see acquire_lease)
_LEASE_FREE = " AND (attribute_not_exists(lease_owner) OR lease_expires_at < :free_at)"


@dataclass
class InstanceLeases:
    """Updates and leases of the instance items of one table (see the module docstring).

    Attributes:
        client: a boto3 DynamoDB client.
        table: the table name.
        clock: the time source (``updated_at``, TTL stamps of a large output's chunks).
        reads: the instance reads (an update with a large output reads the instance back).
    """

    client: DynamoDBClient
    table: str
    clock: Clock
    reads: InstanceReads

    def update(
        self,
        ref: InstanceRef,
        expected_version: int,
        change: Change,
        *,
        lease_free_at: float | None = None,
    ) -> InstanceRecord | None:
        parts = it.change_update(ref, change, expected_version + 1, self.clock.time())
        parts.names["#version"] = "version"
        # what it used, in this same write (see lambda_workflows.engine.instances.usage)
        parts.add("item_writes", 1 + len(parts.chunks))
        if scheduled := schedules_in(change):
            parts.add("schedules", scheduled)
        # version = :expected — nobody (event, control, other runner) wrote since we read
        condition = "#version = :expected"
        values = parts.values | {":expected": it.n(expected_version)}
        if lease_free_at is not None:
            # a runner's write without a lease (engine.lazy_lease): also the lease's own check,
            # nobody holds one live now — a runner whose expired lease was still renewed since
            # our read keeps the instance, as it would have kept it from our lease
            condition += _LEASE_FREE
            values[":free_at"] = it.n(lease_free_at)
        update = {
            "TableName": self.table,
            "Key": it.instance_key(ref, it.INSTANCE_SK),
            "UpdateExpression": parts.expression(),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": parts.names,
            "ExpressionAttributeValues": values,
        }
        try:
            if parts.chunks:
                # a large output's chunks, unconditional: a restarted instance's next output
                # replaces them (the version condition on the update guards the whole write)
                chunks = ({"Put": {"TableName": self.table, "Item": c}} for c in parts.chunks)
                self._transact([{"Update": update}, *chunks])
                return self.reads.get(ref)
            response = conditional(
                lambda: self.client.update_item(**update, ReturnValues="ALL_NEW")  # type: ignore[arg-type]
            )
        except ConditionFailed:
            return None
        return it.instance_record(response["Attributes"])

    def acquire_lease(
        self,
        ref: InstanceRef,
        owner: str,
        now: float,
        expires_at: float,
        *,
        needs_slot: bool = False,
        delivery: int = 1,
    ) -> InstanceRecord | None:
        values: dict[str, Any] = {
            ":owner": it.s(owner),
            ":delivery": it.n(delivery),
            ":expires": it.n(expires_at),
            ":now": it.n(now),
            ":one": it.n(1),
            ":running": it.s(InstanceStatus.RUNNING.value),
            ":shard": it.s(due_shard(ref)),
            **{f":s{i}": it.s(s.value) for i, s in enumerate(_LEASED_TO_RUN)},
        }
        base = (
            "ADD invocations :one, item_writes :one "  # what it used: see engine.usage
            "SET lease_owner = :owner, lease_delivery = :delivery, lease_expires_at = :expires, "
            "version = version + :one, updated_at = :now, "
            "started_at = if_not_exists(started_at, :now), due_at = :expires, due_shard = :shard"
        )
        # runnable (queued, running, waiting) and nobody else holds a live lease: one runner
        # at a time; an expired lease (a runner that died) may be taken over, and so may one
        # an earlier delivery of the same message held (it gave the message back or died), but
        # not one of the same delivery: a copy SQS handed to a second runner meanwhile
        free = (
            "(attribute_not_exists(lease_owner) OR lease_expires_at < :now"
            " OR (lease_owner = :owner AND lease_delivery < :delivery))"
        )
        if needs_slot:  # a limited workflow's instance runs only holding a slot (engine.slots)
            free += " AND attribute_exists(slot)"
        attempt = {
            "TableName": self.table,
            "Key": it.instance_key(ref, it.INSTANCE_SK),
            "UpdateExpression": base + ", #s = :running",
            "ConditionExpression": f"#s IN (:s0, :s1, :s2) AND {free}",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": values,
            "ReturnValues": "ALL_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        try:
            response = conditional(lambda: self.client.update_item(**attempt))  # type: ignore[arg-type]
            return it.instance_record(response["Attributes"])
        except ConditionFailed as failed:
            old = failed.item
            if old is None or it.get_s(old, "status") != InstanceStatus.WAITING_FOR_PAUSE.value:
                return None
        return self._lease_waiting_for_pause(attempt, base, free, values)

    def _lease_waiting_for_pause(
        self, attempt: dict[str, Any], base: str, free: str, values: dict[str, Any]
    ) -> InstanceRecord | None:
        """A lease on a waitingForPause instance, taken without touching its status (the
        runner pauses it): ``attempt`` (the lease that sets running) minus its status change."""
        second = {
            **attempt,
            "UpdateExpression": base,
            "ConditionExpression": f"#s = :wfp AND {free}",
            "ExpressionAttributeValues": {
                k: v for k, v in values.items() if k not in (":running", ":s0", ":s1", ":s2")
            }
            | {":wfp": it.s(InstanceStatus.WAITING_FOR_PAUSE.value)},
        }
        try:
            response = conditional(lambda: self.client.update_item(**second))
        except ConditionFailed:
            return None
        return it.instance_record(response["Attributes"])

    def release_lease(
        self, ref: InstanceRef, owner: str, due_at: float, *, delivery: int = 1
    ) -> None:
        # still ours (this delivery's): never drop a lease another runner took over
        with contextlib.suppress(ConditionFailed):
            conditional(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=it.instance_key(ref, it.INSTANCE_SK),
                    UpdateExpression=(
                        "REMOVE lease_owner, lease_expires_at, lease_delivery"
                        " SET due_at = :due, due_shard = :shard"
                        " ADD item_writes :one"  # see lambda_workflows.engine.instances.usage
                    ),
                    ConditionExpression=_HELD_BY,
                    ExpressionAttributeValues={
                        ":owner": it.s(owner),
                        ":delivery": it.n(delivery),
                        ":due": it.n(due_at),
                        ":shard": it.s(due_shard(ref)),
                        ":one": it.n(1),
                    },
                )
            )

    def renew_lease(
        self, ref: InstanceRef, owner: str, expires_at: float, *, delivery: int = 1
    ) -> InstanceRecord | None:
        try:
            response = conditional(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=it.instance_key(ref, it.INSTANCE_SK),
                    # the write counts itself (see lambda_workflows.engine.instances.usage)
                    UpdateExpression="SET lease_expires_at = :expires ADD item_writes :one",
                    # still ours: a runner whose lease was taken over (by another message, or
                    # by a later delivery of its own) must stop
                    ConditionExpression=_HELD_BY,
                    ExpressionAttributeValues={
                        ":owner": it.s(owner),
                        ":delivery": it.n(delivery),
                        ":expires": it.n(expires_at),
                        ":one": it.n(1),
                    },
                    ReturnValues="ALL_NEW",
                )
            )
        except ConditionFailed:
            return None
        return it.instance_record(response["Attributes"])

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        conditional(lambda: self.client.transact_write_items(TransactItems=actions))  # type: ignore[arg-type]
