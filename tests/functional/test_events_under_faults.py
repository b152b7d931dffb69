"""Events under faults: FIFO per type from the store (not from any clock), idempotent sends
that a client may retry, and a wake-up that is recovered when it is lost after the commit."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.dynamodb import DynamoStore
from lambda_workflows.engine.errors import StorageError
from lambda_workflows.engine.instances.recovery import SWEEP_MARGIN
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.entrypoints import sweep
from lambda_workflows.testing import VirtualClock, WorkflowTestEnv
from tests.aws_faults import Faults


class TwoApprovals(WorkflowEntrypoint):
    """Waits for two events of one type and returns their payloads in delivery order."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        first = await step.wait_for_event("first", type="vote", timeout="1 day")
        second = await step.wait_for_event("second", type="vote", timeout="1 day")
        return [first.payload, second.payload]


class SkewedClock(VirtualClock):
    """Another API container's clock: the test's virtual time, ``behind`` seconds late."""

    def __init__(self, base: VirtualClock, behind: float) -> None:
        super().__init__(base.time())
        self._base = base
        self._behind = behind

    def time(self) -> float:
        return self._base.time() - self._behind


def second_container(env: WorkflowTestEnv, behind: float) -> InstanceService:
    """An InstanceService as another API container would build it, with a skewed clock."""
    clock = SkewedClock(env.clock, behind)
    if env.backend == "aws":
        runtime = env.aws.runtime
        store = DynamoStore(runtime.store.client, runtime.store.table, clock)
        return InstanceService(env.workflows, store, runtime.queue, runtime.wakeups, clock)
    return InstanceService(env.workflows, env.store, env.queue, env.scheduler, clock)


def make_env(backend: str, aws_env: Any) -> WorkflowTestEnv:
    if backend == "aws":
        env: WorkflowTestEnv = aws_env({"votes": TwoApprovals})
        return env
    return WorkflowTestEnv({"votes": TwoApprovals})


@pytest.mark.parametrize("backend", ["memory", "aws"])
def test_events_are_delivered_in_commit_order_whatever_the_senders_clocks(
    backend: str, aws_env: Any
) -> None:
    # GIVEN two API containers, the second one's clock 5 ms behind the first's
    env = make_env(backend, aws_env)
    late = second_container(env, behind=0.005)
    inst = env.create("votes", id="skew")
    # WHEN the first container's send is acknowledged before the second container sends
    inst.send_event(type="vote", payload="sent first")
    late.send_event(InstanceRef("votes", "skew"), "vote", "sent second")
    env.run_until_idle()
    # THEN the waits see them in that order
    assert inst.status().output == ["sent first", "sent second"]


@pytest.mark.parametrize("backend", ["memory", "aws"])
def test_a_send_retried_with_its_idempotency_key_is_stored_once(backend: str, aws_env: Any) -> None:
    env = make_env(backend, aws_env)
    inst = env.create("votes", id="retry")
    ref = InstanceRef("votes", "retry")
    first = env.service.send_event(ref, "vote", "one", key="req-1")
    again = env.service.send_event(ref, "vote", "one", key="req-1")
    env.service.send_event(ref, "vote", "two", key="req-2")
    assert again.id == first.id
    env.run_until_idle()
    assert inst.status().output == ["one", "two"]
    assert len(env.store.load(ref).events) == 2
    # a retry that arrives after the instance finished is still answered with the event
    assert env.service.send_event(ref, "vote", "one", key="req-1").id == first.id


def test_a_send_whose_commit_timed_out_is_retried_without_a_second_event(aws_env: Any) -> None:
    # GIVEN the event's transaction commits but the API container sees a read timeout
    env = aws_env({"votes": TwoApprovals})
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.TransactWriteItems", "timeout")
    inst = env.create("votes", id="ambiguous")
    ref = InstanceRef("votes", "ambiguous")
    with pytest.raises(StorageError):
        env.service.send_event(ref, "vote", "one", key="k1")
    # WHEN the client retries with the same key
    retried = env.service.send_event(ref, "vote", "one", key="k1")
    env.service.send_event(ref, "vote", "two", key="k2")
    env.run_until_idle()
    # THEN exactly one "one" was stored and delivered
    assert [e.id for e in env.store.load(ref).events if e.key == "k1"] == [retried.id]
    assert inst.status().output == ["one", "two"]


def test_an_event_whose_wake_up_is_lost_is_delivered_by_the_sweep(aws_env: Any) -> None:
    # GIVEN an instance waiting for a vote
    env = aws_env({"votes": TwoApprovals})
    faults = Faults.on(env.aws.runtime)
    inst = env.create("votes", id="lost")
    ref = InstanceRef("votes", "lost")
    env.run_until_idle()
    assert inst.status().status == "waiting"
    # WHEN the event is committed but its wake-up never reaches the runner: the direct invoke
    # is refused, and the work message it falls back to is lost
    faults.arm("lambda.Invoke", "throttle")
    faults.arm("sqs.SendMessage", "drop")
    inst.send_event(type="vote", payload="one")
    assert faults.fired("sqs.SendMessage") == 1
    env.run_until_idle()
    assert inst.status().status == "waiting"
    # THEN the sweep finds the instance due, and the runner delivers the event
    env.clock.advance(SWEEP_MARGIN + 1)
    assert sweep.make_handler(env.aws.runtime)({}, None) == {"requeued": 1}
    env.run_until_idle()
    [delivered] = [row for row in inst.status().steps if row.name == "first"]
    assert delivered.status == "complete"
    assert env.store.load(ref).events[0].payload == '"one"'


def test_a_throttled_read_before_the_commit_writes_nothing_and_a_retry_succeeds(
    aws_env: Any,
) -> None:
    env = aws_env({"votes": TwoApprovals})
    faults = Faults.on(env.aws.runtime)
    inst = env.create("votes", id="read")
    ref = InstanceRef("votes", "read")
    faults.arm("dynamodb.GetItem", "throttle")
    with pytest.raises(StorageError):
        inst.send_event(type="vote", payload="one", key="r1")
    assert env.store.load(ref).events == []
    inst.send_event(type="vote", payload="one", key="r1")
    inst.send_event(type="vote", payload="two", key="r2")
    env.run_until_idle()
    assert inst.status().output == ["one", "two"]
