"""An id taken again after its instance expired starts a journal of its own.

DynamoDB's TTL removes a finished instance's item at its retention, but its journal, event and
chunk items carry a later TTL (they are written once, never touched again). A new instance
with the same id must not replay what the old one recorded: each instance starts at a journal
generation of its own (its creation time in milliseconds).
"""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.items import INSTANCE_SK, instance_pk

CHARGES: list[Any] = []


class Charge(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def charge() -> Any:
            CHARGES.append(event.payload["amount"])
            return event.payload["amount"]

        return await step.do("charge", charge)


def test_a_new_instance_with_an_expired_ones_id_runs_its_own_steps(aws_env: Any) -> None:
    CHARGES.clear()
    env = aws_env({"pay": Charge})
    first = env.create("pay", id="order-7", params={"amount": 10})
    env.run_until_idle()
    assert first.status().output == 10

    # WHEN its retention passes: DynamoDB's TTL removes the instance item (and only that one)
    table = env.aws.session.client("dynamodb")
    key = {"pk": {"S": instance_pk("pay", "order-7")}, "sk": {"S": INSTANCE_SK}}
    table.delete_item(TableName=env.aws.settings.table_name, Key=key)
    left = table.query(
        TableName=env.aws.settings.table_name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": key["pk"]},
    )["Items"]
    assert left, "the old journal is still in the table, as after a real TTL expiry"

    # AND the id is taken again, a moment later
    env.clock.advance("1 second")
    second = env.create("pay", id="order-7", params={"amount": 25})
    env.run_until_idle()

    # THEN the new instance charged for itself, and shows its own step
    assert CHARGES == [10, 25]
    assert second.status().output == 25
    assert [row.output for row in second.status().steps] == [25]
