"""Work due now invokes the RunnerFunction directly (moto; the embedded AWS accepts the invoke
as Lambda does and delivers it in-process): no SQS request on the way, the work message when
the invoke is refused or may not have happened, and Lambda's retry of a crashed invocation
fenced, then finished through the work queue."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from lambda_workflows.aws.runner_invoke import EXECUTION_PREFIX
from lambda_workflows.aws.wake_events import LeaseHeldByThisWakeUp
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.local.embedded import LambdaContext, invocation_record
from tests.aws_faults import Faults

from .api.conftest import Api
from .workflows_under_test import ThreeSteps, calls

REF = InstanceRef("three", "direct-1")


ONCE_EACH = Counter({f"{REF.id} one": 1, f"{REF.id} two": 1, f"{REF.id} three": 1})


def api_of(aws_env: Any) -> Api:
    for key in ONCE_EACH:
        calls.pop(key, None)
    return Api(aws_env({"three": ThreeSteps}))


def create(api: Api) -> None:
    answer = api.request("POST", "/workflows/three/instances", {"id": REF.id})
    assert answer.status == 201


def steps_run(api: Api) -> Counter[str]:
    """How often each step's callback ran, once the instance completed."""
    assert api.env.get(REF.workflow, REF.id).status().status == "complete"
    return Counter({key: calls[key] for key in ONCE_EACH})


def test_a_create_through_the_api_costs_no_sqs_request_and_completes(aws_env: Any) -> None:
    # GIVEN the API, its calls counted
    api = api_of(aws_env)
    faults = Faults.on(api.env.aws.runtime)
    # WHEN an instance is created, and the env runs what was posted
    create(api)
    [payload] = list(api.aws.invokes)
    api.env.run_until_idle()
    # THEN one asynchronous invoke of the runner carried it, fenced as a wake-up; no SQS
    assert [c for c in faults.calls if c.startswith(("sqs.", "lambda."))] == ["lambda.Invoke"]
    [invoke] = [p for p in faults.payloads if p.name == "lambda.Invoke"]
    assert invoke.payload == payload
    assert payload["wake"]["execution"].startswith(EXECUTION_PREFIX)
    assert payload["wake"]["attempt"] == "1"
    assert steps_run(api) == ONCE_EACH


@pytest.mark.parametrize("kind", ["throttle", "server_error", "unreachable"])
def test_a_refused_invoke_sends_the_work_message_and_the_instance_completes(
    aws_env: Any, kind: str
) -> None:
    # GIVEN Lambda refusing the invoke
    api = api_of(aws_env)
    faults = Faults.on(api.env.aws.runtime)
    faults.arm("lambda.Invoke", kind)
    # WHEN an instance is created
    create(api)
    # THEN its work went to the queue instead, and the queued work completes it
    assert faults.fired("lambda.Invoke") == 1
    assert api.aws.invokes == []
    assert faults.count("sqs.SendMessage") == 1
    api.env.run_until_idle()
    assert steps_run(api) == ONCE_EACH


def test_an_invoke_that_timed_out_after_it_happened_is_delivered_twice_and_runs_once(
    aws_env: Any,
) -> None:
    # GIVEN an invoke Lambda accepted, but whose answer timed out
    api = api_of(aws_env)
    faults = Faults.on(api.env.aws.runtime)
    faults.arm("lambda.Invoke", "timeout")
    # WHEN an instance is created: the work message goes too (the invoke may not have)
    create(api)
    assert faults.fired("lambda.Invoke") == 1
    assert len(api.aws.invokes) == 1
    assert faults.count("sqs.SendMessage") == 1
    # THEN both deliveries run; each step ran once, and the instance completed once
    api.env.run_until_idle()
    assert api.env._backend.invocations == 3  # the creation twice, then the wake-up
    assert steps_run(api) == ONCE_EACH
    assert api.aws.receive() == [] and api.aws.invokes == []


def test_a_retried_invocation_that_crashed_holding_the_lease_is_fenced_then_queued(
    aws_env: Any,
) -> None:
    # GIVEN a created instance whose direct invocation died holding the lease (as delivery
    # 1000 of its execution id)
    api = api_of(aws_env)
    create(api)
    payload = api.aws.take_invoke()
    assert payload is not None
    store, clock = api.env.store, api.env.clock
    owner = f"wake:{payload['wake']['execution']}"
    now = clock.time()
    assert store.acquire_lease(REF, owner, now, now + 960, delivery=1000) is not None
    # WHEN Lambda retries the same payload: it is turned away, failing so as to be retried
    with pytest.raises(LeaseHeldByThisWakeUp):
        api.aws._runner_handler(payload, LambdaContext())
    assert calls[f"{REF.id} one"] == 0  # nothing ran
    # AND once its retries are spent, Lambda's record reaches the work queue (OnFailure)
    record = invocation_record(payload, LambdaContext().invoked_function_arn, "Crash")
    api.aws.sqs.send_message(QueueUrl=api.aws.settings.work_queue_url, MessageBody=record)
    [message] = api.aws.receive()
    assert json.loads(message["Body"])["requestPayload"] == payload
    api.aws.invoke_runner([message])
    # THEN that later delivery took the dead lease back at once (long before it would have
    # expired) and advanced the instance to its sleep; the instance completes
    assert clock.time() < now + 960
    record = store.get(REF)
    assert (record.status.value, record.lease_owner) == ("waiting", None)
    api.env.run_until_idle()
    assert steps_run(api) == ONCE_EACH


def test_a_delayed_send_and_a_batch_still_use_sqs(aws_env: Any) -> None:
    # GIVEN the runtime's queue, the runner's ARN known
    env = aws_env({"three": ThreeSteps})
    queue = env.aws.runtime.queue
    assert queue.direct is not None and queue.direct.runner_arn is not None
    faults = Faults.on(env.aws.runtime)
    # WHEN work is sent with a delay, and as a batch
    queue.send(REF, 30.0)
    queue.send_many([REF, InstanceRef("three", "direct-2")])
    # THEN both are SQS requests, and nothing invoked the runner
    assert faults.count("lambda.Invoke") == 0
    assert faults.count("sqs.SendMessage") == faults.count("sqs.SendMessageBatch") == 1


def test_without_the_runners_arn_work_goes_to_the_queue(aws_env: Any) -> None:
    # GIVEN a sender that does not know the runner's ARN (RUNNER_FUNCTION_ARN unset)
    env = aws_env({"three": ThreeSteps})
    direct = env.aws.runtime.queue.direct
    direct.runner_arn = None
    faults = Faults.on(env.aws.runtime)
    # WHEN an instance is created
    env.create("three", id=REF.id)
    # THEN its work is a message; the runner learns its own ARN from its first invocation,
    # and invokes itself directly from then on
    assert faults.count("lambda.Invoke") == 0
    assert faults.count("sqs.SendMessage") == 1
    env.run_until_idle()
    assert direct.runner_arn == LambdaContext().invoked_function_arn
