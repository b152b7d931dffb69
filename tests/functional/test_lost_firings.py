"""Lost firings of recurring schedules on moto: a firing whose delivery was dropped, whose
trigger message was dead-lettered, or whose trigger lost its answer, starts exactly one
instance, by the sweep (SweepFunction's real handler) if by nothing else; delivered twice and
recovered, still one; the sweep survives its own calls failing; and the calls it costs.

The sweep runs at the env's start, as it does after a deploy: that is when it first sees the
schedule (nothing before is started)."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.entrypoints import sweep
from lambda_workflows.testing import WorkflowTestEnv
from tests.aws_faults import Faults

START = datetime(2025, 1, 1, tzinfo=UTC)
ONE = "hourly-20250101T010000Z"
Sweep = Callable[[], dict[str, Any]]


class Hourly(WorkflowEntrypoint):
    schedules = ("rate(1 hour)",)

    async def run(self, event: Any, step: Any) -> Any:
        return await step.do("report", lambda: {"for": event.payload["scheduled_time"]})


class Plain(WorkflowEntrypoint):
    async def run(self, event: Any, step: Any) -> None:
        return None


def deployed(aws_env: Any, workflows: dict[str, type[WorkflowEntrypoint]] | None = None) -> Any:
    """An env on moto whose sweep has run once, at the start (as after a deploy)."""
    env = aws_env(workflows or {"hourly": Hourly}, start=START)
    sweeper(env)()
    return env


def sweeper(env: WorkflowTestEnv) -> Sweep:
    trigger_queue = env.aws.resources.environment("SweepFunction")["TRIGGER_QUEUE_ARN"]
    handler = sweep.make_handler(env.aws.runtime, trigger_queue)
    return lambda: handler({}, None)


def faults_on(env: WorkflowTestEnv) -> Faults:
    """Faults on the engine's clients and on the SQS client that delivers the firings."""
    return Faults.on(env.aws.runtime, env.aws.sqs)


def a_firing(params: dict[str, Any]) -> bool:
    """SendMessage of a firing to the trigger queue (Scheduler's delivery)."""
    return "scheduled_time" in str(params.get("MessageBody", ""))


def creating(instance_id: str) -> Callable[[dict[str, Any]], bool]:
    """PutItem of the instance item of ``instance_id`` (its create)."""
    return lambda params: params.get("Item", {}).get("id", {}).get("S") == instance_id


def the_ledger(params: dict[str, Any]) -> bool:
    """PutItem of the firing watermarks."""
    return params.get("Item", {}).get("pk", {}).get("S") == "C#schedule-firings"


def ids(env: WorkflowTestEnv) -> list[str]:
    return sorted(record.id for record in env.workflow("hourly").list(limit=100).records)


def ran_once(env: WorkflowTestEnv, instance_id: str) -> bool:
    status = env.get("hourly", instance_id).status()
    return status.status == "complete" and [s.attempts for s in status.steps] == [1]


def test_a_dropped_delivery_is_started_once_by_the_sweep(aws_env: Any) -> None:
    env = deployed(aws_env)
    run_sweep = sweeper(env)
    faults = faults_on(env)
    # GIVEN Scheduler's delivery of the 01:00 firing to the trigger queue is lost
    faults.arm("sqs.SendMessage", "drop", match=a_firing)
    env.clock.advance("1 hour")
    env.run_until_idle()
    assert faults.fired("sqs.SendMessage") == 1
    assert ids(env) == []
    # WHEN the sweep runs past the firing's grace
    env.clock.advance("5 minutes")
    assert run_sweep()["firings"] == {"started": 1, "failed": 0}
    env.run_until_idle()
    # THEN its instance ran, once, with the firing's params
    assert ids(env) == [ONE]
    assert ran_once(env, ONE)
    assert env.get("hourly", ONE).status().output == {"for": "2025-01-01T01:00:00Z"}
    # AND the next run starts nothing, nor does the delivery when Scheduler's retry comes
    env.clock.advance("5 minutes")
    assert run_sweep()["firings"] == {"started": 0, "failed": 0}
    env.fire_schedule("hourly", datetime(2025, 1, 1, 1, tzinfo=UTC))
    env.run_until_idle()
    assert ids(env) == [ONE]
    assert ran_once(env, ONE)


def test_a_dead_lettered_trigger_message_is_started_by_the_sweep(aws_env: Any) -> None:
    env = deployed(aws_env)
    faults = faults_on(env)
    # GIVEN TriggerFunction fails on the firing's message (its create throttled): the test kit
    # drops a failed message, as the queue dead-letters it after its 5th failed receive
    faults.arm("dynamodb.PutItem", "throttle", match=creating(ONE))
    env.clock.advance("1 hour")
    env.run_until_idle()
    assert ids(env) == []
    # WHEN the sweep runs, THEN the firing starts
    env.clock.advance("5 minutes")
    assert sweeper(env)()["firings"] == {"started": 1, "failed": 0}
    env.run_until_idle()
    assert ids(env) == [ONE]
    assert ran_once(env, ONE)


def test_a_trigger_that_created_the_instance_but_lost_the_answer_is_not_started_again(
    aws_env: Any,
) -> None:
    env = deployed(aws_env)
    faults = faults_on(env)
    # GIVEN the trigger's create happened but its answer was lost (the message failed)
    faults.arm("dynamodb.PutItem", "timeout", match=creating(ONE))
    env.clock.advance("1 hour")
    env.run_until_idle()
    assert faults.fired("dynamodb.PutItem") == 1
    # WHEN the sweep runs, THEN it finds the instance: nothing is started twice
    env.clock.advance("5 minutes")
    assert sweeper(env)()["firings"] == {"started": 0, "failed": 0}
    env.run_until_idle()
    assert ids(env) == [ONE]
    assert ran_once(env, ONE)


def test_a_firing_delivered_twice_and_recovered_starts_one_instance(aws_env: Any) -> None:
    env = deployed(aws_env)
    run_sweep = sweeper(env)
    # GIVEN the 01:00 firing delivered twice (Scheduler delivers at least once)
    env.clock.advance("1 hour")
    env.run_until_idle()
    env.fire_schedule("hourly", datetime(2025, 1, 1, 1, tzinfo=UTC))
    # WHEN the sweep runs twice, and a third delivery comes
    env.clock.advance("5 minutes")
    assert run_sweep()["firings"]["started"] == 0
    assert run_sweep()["firings"]["started"] == 0
    env.fire_schedule("hourly", datetime(2025, 1, 1, 1, tzinfo=UTC))
    env.run_until_idle()
    # THEN one instance, whose step ran once
    assert ids(env) == [ONE]
    assert ran_once(env, ONE)


def test_an_hourly_schedule_with_random_losses_starts_one_instance_per_firing(
    aws_env: Any,
) -> None:
    env = deployed(aws_env)
    run_sweep = sweeper(env)
    faults = faults_on(env)
    rng = random.Random(24)
    # GIVEN 40 % of the deliveries dropped, and a fifth of the firings delivered again
    faults.arm(
        "sqs.SendMessage", "drop", times=1000, match=lambda p: a_firing(p) and rng.random() < 0.4
    )
    started = 0
    # WHEN 8 virtual hours pass, the sweep running every 5 minutes
    for _ in range(8 * 12 + 2):
        env.clock.advance("5 minutes")
        env.run_until_idle()
        now = env.clock.time()
        if now % 3600 == 600 and rng.random() < 0.2:
            env.fire_schedule("hourly", now - 600)
        started += run_sweep()["firings"]["started"]
    env.run_until_idle()
    # THEN each firing time started exactly one instance, each of which ran once
    expected = [f"hourly-20250101T{hour:02d}0000Z" for hour in range(1, 9)]
    assert ids(env) == expected
    assert all(ran_once(env, instance_id) for instance_id in expected)
    dropped = faults.fired("sqs.SendMessage")
    assert 0 < dropped < 8
    assert started == dropped


LEDGER_READ = ("dynamodb.GetItem", None)
STARTED_READ = ("dynamodb.BatchGetItem", None)
CREATE = ("dynamodb.PutItem", creating(ONE))
LEDGER_WRITE = ("dynamodb.PutItem", the_ledger)


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        pytest.param(LEDGER_READ, "throttle", id="watermarks-read-throttled"),
        pytest.param(STARTED_READ, "throttle", id="instances-read-throttled"),
        pytest.param(STARTED_READ, "unreachable", id="instances-read-unreachable"),
        pytest.param(CREATE, "throttle", id="create-throttled"),
        pytest.param(CREATE, "timeout", id="create-timed-out-after-writing"),
        pytest.param(LEDGER_WRITE, "throttle", id="watermarks-write-throttled"),
        pytest.param(LEDGER_WRITE, "timeout", id="watermarks-write-timed-out-after-writing"),
    ],
)
def test_a_failed_sweep_call_is_survived_and_the_firing_still_starts_once(
    aws_env: Any, call: tuple[str, Any], kind: str
) -> None:
    env = deployed(aws_env)
    run_sweep = sweeper(env)
    faults = faults_on(env)
    faults.arm("sqs.SendMessage", "drop", match=a_firing)
    env.clock.advance("1 hour")
    env.run_until_idle()
    # WHEN one of the sweep's calls fails
    operation, match = call
    faults.arm(operation, kind, match=match)
    env.clock.advance("5 minutes")
    first = run_sweep()
    # THEN the sweep answers (its other work done) and the next run puts it right
    assert faults.fired(operation) == 1
    assert first["requeued"] == 0
    second = run_sweep()
    assert second["firings"]["failed"] == 0
    assert first["firings"]["started"] + second["firings"]["started"] <= 1
    # AND the watermark moved past it: a later run starts nothing (it re-enqueues an instance
    # whose create timed out before its work message was sent, as for any instance)
    env.clock.advance(sweep.GRACE_SECONDS + 1)
    assert run_sweep()["firings"] == {"started": 0, "failed": 0}
    env.run_until_idle()
    assert ids(env) == [ONE]
    assert ran_once(env, ONE)


def count_ledger_calls(env: WorkflowTestEnv) -> Counter[str]:
    calls: Counter[str] = Counter()

    def hook(model: Any, **_: Any) -> None:
        if model.name in ("GetItem", "BatchGetItem", "PutItem"):
            calls[model.name] += 1

    env.aws.runtime.store.client.meta.events.register("before-call.dynamodb", hook)
    return calls


def test_a_run_costs_one_read_and_a_firing_one_batch_read_and_one_write(aws_env: Any) -> None:
    env = deployed(aws_env)
    run_sweep = sweeper(env)
    calls = count_ledger_calls(env)
    # GIVEN no firing since the last run: one GetItem (the watermarks)
    env.clock.advance("5 minutes")
    run_sweep()
    assert calls == Counter({"GetItem": 1})
    # WHEN a firing was delivered: which exist (one BatchGetItem), the watermark moved (one
    # PutItem); nothing created
    env.clock.advance("55 minutes")
    env.run_until_idle()
    env.clock.advance("5 minutes")
    calls.clear()
    assert run_sweep()["firings"] == {"started": 0, "failed": 0}
    assert calls == Counter({"GetItem": 1, "BatchGetItem": 1, "PutItem": 1})


def test_a_stack_without_schedules_pays_one_read_and_answers_as_before(aws_env: Any) -> None:
    env = deployed(aws_env, {"plain": Plain})
    calls = count_ledger_calls(env)
    env.clock.advance("5 minutes")
    assert "firings" not in sweeper(env)()
    assert calls == Counter({"GetItem": 1})


def unprocessed(times: int) -> Callable[..., Any]:
    """A before-call hook: the next ``times`` BatchGetItem calls read nothing and hand every
    key back as unprocessed (as DynamoDB does under load)."""
    left = [times]

    def hook(model: Any, params: dict[str, Any], **_: Any) -> Any:
        if model.name != "BatchGetItem" or left[0] == 0:
            return None
        left[0] -= 1
        from botocore.awsrequest import AWSResponse

        request = json.loads(params["body"])["RequestItems"]
        parsed = {
            "Responses": {table: [] for table in request},
            "UnprocessedKeys": request,
            "ResponseMetadata": {"HTTPStatusCode": 200},
        }
        return AWSResponse("https://aws.invalid", 200, {}, None), parsed

    return hook


@pytest.mark.parametrize("rounds", [1, 8])
def test_keys_dynamodb_leaves_unprocessed_are_read_again_never_taken_as_missing(
    aws_env: Any, rounds: int
) -> None:
    env = deployed(aws_env)
    run_sweep = sweeper(env)
    # GIVEN the 01:00 firing's instance, deleted (its tombstone must keep it deleted)
    env.clock.advance("1 hour")
    env.run_until_idle()
    env.get("hourly", ONE).delete()
    # WHEN the sweep's BatchGetItem comes back with every key unprocessed, once or every time
    env.aws.runtime.store.client.meta.events.register(
        "before-call.dynamodb.BatchGetItem", unprocessed(rounds)
    )
    env.clock.advance("5 minutes")
    answer = run_sweep()["firings"]
    # THEN it asks again (1 round) or gives up for this run (8): the firing is never
    # taken as lost, and its deleted instance is not created again
    assert answer == ({"started": 0, "failed": 0} if rounds == 1 else {"started": 0, "failed": 1})
    assert run_sweep()["firings"] == {"started": 0, "failed": 0}
    assert ids(env) == []
