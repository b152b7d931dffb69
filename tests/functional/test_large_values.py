"""Values up to 1 MiB round-trip although a DynamoDB item stops at 400 KB."""

from __future__ import annotations

import random
import string
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws import items

# Incompressible text just under the 1 MiB limit (once JSON-encoded with its quotes).
rng = random.Random(7)
BIG = "".join(rng.choices(string.ascii_letters + string.digits, k=1024 * 1024 - 16))


class BigValues(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        big = await step.do("fetch big", lambda: BIG)
        echoed = await step.do("echo params", lambda: event.payload["blob"][:10])
        await step.sleep("nap", "1 hour")  # the replay after it reads everything back
        got = await step.wait_for_event("big event", type="big")
        return {
            "result_ok": big == BIG,
            "params_ok": event.payload["blob"] == BIG,
            "event_ok": got.payload == BIG,
            "echo": echoed,
        }


def test_a_1_mib_step_result_params_and_event_round_trip(aws_env: Any) -> None:
    env = aws_env({"big": BigValues})
    inst = env.create("big", id="big", params={"blob": BIG})
    env.run_until_idle()
    inst.send_event(type="big", payload=BIG)
    env.run_until_idle()
    status = inst.status()
    assert status.status == "complete", status.error
    assert status.output == {
        "result_ok": True,
        "params_ok": True,
        "event_ok": True,
        "echo": BIG[:10],
    }
    # the value really was split into chunk items (it cannot fit in one item)
    pages = (
        env.aws.session.client("dynamodb")
        .get_paginator("query")
        .paginate(
            TableName=env.aws.settings.table_name,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "I#big#big"}},
        )
    )
    keys = [i["sk"]["S"] for page in pages for i in page["Items"]]
    chunk_keys = [k for k in keys if items.CHUNK_MARK in k]
    assert len(chunk_keys) >= 9  # params, result and event payload: 3+ chunks each
    assert {k.split(items.CHUNK_MARK)[0][:2] for k in chunk_keys} == {"I", "J#", "E#"}


def test_a_compressible_large_result_is_stored_compressed_in_one_item(aws_env: Any) -> None:
    class Repetitive(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            value = await step.do("repetitive", lambda: "abc" * 300_000)
            return len(value)

    env = aws_env({"rep": Repetitive})
    inst = env.create("rep", id="rep")
    env.run_until_idle()
    assert inst.status().output == 900_000
    client = env.aws.session.client("dynamodb")
    page = client.query(
        TableName=env.aws.settings.table_name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "I#rep#rep"}},
    )
    [entry] = [i for i in page["Items"] if i["sk"]["S"].startswith("J#")]
    assert "result_z" in entry
