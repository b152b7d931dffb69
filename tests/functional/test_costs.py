"""Cost is counted, not timed: AWS API calls per instance, from botocore's event hooks."""

from __future__ import annotations

from collections import Counter
from typing import Any

from lambda_workflows.aws.runtime import LAMBDA_RUNNER

from .workflows_under_test import Sequential

DYNAMODB_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


def count_calls(env: Any) -> Counter[str]:
    """Count every AWS call the runtime's clients make, as 'service.Operation'."""
    calls: Counter[str] = Counter()
    runtime = env.aws.runtime
    clients = {
        "dynamodb": runtime.store.client,
        "sqs": runtime.queue.client,
        "scheduler": runtime.wakeups.client,
    }
    if runtime.queue.direct is not None:  # direct invokes of the runner (not queue_only())
        clients["lambda"] = runtime.queue.direct.client
    for service, client in clients.items():

        def hook(model: Any, service: str = service, **_: Any) -> None:
            calls[f"{service}.{model.name}"] += 1

        client.meta.events.register(f"before-call.{service}", hook)
    return calls


def dynamodb_writes(calls: Counter[str]) -> int:
    return sum(n for op, n in calls.items() if op.split(".")[1] in DYNAMODB_WRITES)


def test_a_100_step_workflow_costs_one_invocation_one_query_and_a_write_per_step(
    aws_env: Any,
) -> None:
    env = aws_env({"seq": Sequential}, settings=LAMBDA_RUNNER)
    calls = count_calls(env)
    inst = env.create("seq", id="s100", params={"steps": 100})
    env.run_until_idle()
    assert inst.status().status == "complete"
    assert inst.status().output == sum(range(100))
    calls_for_status = Counter({"dynamodb.Query": 2})  # the two status() reads above
    calls.subtract(calls_for_status)
    assert env.invocations == 1
    assert calls["dynamodb.Query"] == 1  # the journal load: one page
    # 100 step results + create + lease + final status: no per-step instance update (the
    # deployed runner looks for pause/terminate at most every 2 s, not before every step)
    assert dynamodb_writes(calls) <= 100 + 3
    assert calls["dynamodb.PutItem"] == 101  # create + 100 results
    assert calls["dynamodb.GetItem"] == 0  # no per-step read
    assert sum(n for op, n in calls.items() if op.startswith("scheduler.")) == 0


def test_the_same_workflow_with_one_sleep_costs_two_invocations_and_one_schedule(
    aws_env: Any,
) -> None:
    env = aws_env({"seq": Sequential}, settings=LAMBDA_RUNNER)
    calls = count_calls(env)
    inst = env.create("seq", id="s100z", params={"steps": 100, "sleep": True})
    env.run_until_idle()
    assert inst.status().status == "complete"
    assert env.invocations == 2
    assert calls["scheduler.CreateSchedule"] == 1
    assert calls["dynamodb.Query"] - 1 == 2  # one load per invocation (+1 for status())
    # 100 results + the sleep + create + (lease + status) per invocation
    assert dynamodb_writes(calls) <= 101 + 1 + 2 * 2


def test_create_batch_is_one_transaction_and_sqs_batches_of_ten(aws_env: Any) -> None:
    env = aws_env({"seq": Sequential}, settings=LAMBDA_RUNNER)
    calls = count_calls(env)
    items = [{"id": f"b-{i}", "params": {"steps": 1}} for i in range(25)]
    result = env.create_batch("seq", items)
    assert len(result.created) == 25
    assert calls["dynamodb.TransactWriteItems"] == 1
    assert calls["sqs.SendMessageBatch"] == 3  # 10 + 10 + 5
    assert calls["dynamodb.PutItem"] == 0
    # with taken ids: the transaction fails naming them, and is retried once without them
    calls.clear()
    again = env.create_batch("seq", [*items[:3], {"id": "b-new", "params": {"steps": 1}}])
    assert again.created == ["b-new"]
    assert [e["id"] for e in again.errors] == ["b-0", "b-1", "b-2"]
    assert calls["dynamodb.TransactWriteItems"] == 2
    assert calls["sqs.SendMessageBatch"] == 1
