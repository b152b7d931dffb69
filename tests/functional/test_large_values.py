"""Values up to 1 MiB round-trip although a DynamoDB item stops at 400 KB."""

from __future__ import annotations

import json
import random
import string
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws import items
from lambda_workflows.engine.model import InstanceRecord, InstanceStatus

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


# Incompressible params and output, each too large for one item even compressed.
PARAMS_400K = "".join(rng.choices(string.ascii_letters + string.digits, k=400_000))


class Reverser(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # no step: each run recomputes the output from the params it was given
        return event.payload["blob"][::-1]


def test_large_params_and_large_output_each_keep_their_own_chunks(aws_env: Any) -> None:
    # GIVEN an instance whose params and output are both chunked
    env = aws_env({"rev": Reverser})
    inst = env.create("rev", id="rev", params={"blob": PARAMS_400K})
    env.run_until_idle()
    # THEN status reads the output intact, and the params read back intact after it
    assert inst.status().output == PARAMS_400K[::-1]
    assert json.loads(env.store.load(inst.ref).record.params) == {"blob": PARAMS_400K}
    # WHEN it restarts, run() gets the original params again (the output's chunks are gone)
    inst.restart()
    env.run_until_idle()
    status = inst.status()
    assert status.status == "complete", status.error
    assert status.output == PARAMS_400K[::-1]
    chunk_keys = [k for k in partition_keys(env, "I#rev#rev") if items.CHUNK_MARK in k]
    assert {k.startswith("I" + items.CHUNK_MARK + "output") for k in chunk_keys} == {True, False}
    # WHEN it is deleted, THEN both values' chunks go with it: only the tombstone stays
    inst.delete()
    assert partition_keys(env, "I#rev#rev") == ["I"]


def partition_keys(env: Any, pk: str) -> list[str]:
    pages = (
        env.aws.session.client("dynamodb")
        .get_paginator("query")
        .paginate(
            TableName=env.aws.settings.table_name,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": pk}},
            ConsistentRead=True,
        )
    )
    return sorted(i["sk"]["S"] for page in pages for i in page["Items"])


def test_an_output_chunked_under_the_old_keys_still_reads() -> None:
    # GIVEN an instance item written before output chunks had keys of their own
    output = json.dumps(PARAMS_400K)
    record = InstanceRecord("rev", "old", InstanceStatus.COMPLETE, "{}", 1.0, output=output)
    item, chunks = items.instance_item(record)
    assert item.pop("output_chunk_tag") == {"S": "output"}
    old_layout = {
        c["sk"]["S"].replace(items.CHUNK_MARK + "output", items.CHUNK_MARK): c for c in chunks
    }
    # THEN its output reads back as written
    assert items.instance_record(item, old_layout).output == output
