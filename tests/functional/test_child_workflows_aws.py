"""Child workflows on the real adapters (moto): creation survives a crash between creating the
child and recording the parent's step, a duplicate answer stores nothing, and a round trip's
AWS calls are counted (not timed)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.children import child_id
from lambda_workflows.engine.model import InstanceRef

from .faults import Faults
from .test_costs import count_calls
from .test_faults import journal_put_of


class Charge(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("charge", lambda: {"charged": event.payload["amount"]})


class Order(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.run_workflow("pay", workflow="charge", params=event.payload)


@pytest.mark.parametrize("kind", ["unreachable", "timeout"])
def test_a_crash_between_creating_the_child_and_recording_the_step_creates_one_child(
    aws_env: Any, kind: str
) -> None:
    # GIVEN the parent's wait for its child is not recorded (unreachable), or recorded with
    # its answer lost (timeout), right after the child was created
    env = aws_env({"order": Order, "charge": Charge})
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.PutItem", kind, match=journal_put_of("pay"))
    order = env.create("order", id=f"o-{kind}", params={"amount": 5})
    # WHEN the work is delivered again and everything runs
    env.run_until_idle()
    # THEN the replay created the same child again (InstanceAlreadyExists is success): one
    # child, and the parent got its output
    assert faults.fired("dynamodb.PutItem") == 1
    status = order.status()
    assert status.status == "complete", status.error
    assert status.output == {"charged": 5}
    children = env.workflow("charge").list().records
    assert [r.id for r in children] == [status.steps[0].child["id"]]
    assert children[0].status == "complete"
    assert children[0].parent is not None and children[0].parent.id == f"o-{kind}"


def test_the_childs_answer_delivered_again_stores_nothing(aws_env: Any) -> None:
    env = aws_env({"order": Order, "charge": Charge})
    order = env.create("order", id="o-again", params={"amount": 2})
    env.run_until_idle()
    child_id = order.status().steps[0].child["id"]
    runtime = env.aws.runtime
    parent = InstanceRef("order", "o-again")
    child = runtime.store.get(InstanceRef("charge", child_id))
    before = runtime.store.load(parent)
    # WHEN the child's end is delivered again (a child run again after a crash)
    runtime.runner.children.deliver(child, child.status, child.output, child.error)
    # THEN nothing is written: the parent finished, and its one answer stays
    after = runtime.store.load(parent)
    assert after.record.version == before.record.version
    assert len(after.events) == len(before.events) == 1


class OrderByHand(WorkflowEntrypoint):
    """The same round trip without run_workflow: it waits for the charge's output as an event."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        got = await step.wait_for_event("pay", type="charged", timeout="365 days")
        return got.payload


def test_a_child_round_trip_costs_what_creating_the_child_and_sending_its_end_by_hand_does(
    aws_env: Any,
) -> None:
    # GIVEN a child round trip, counted
    env = aws_env({"order": Order, "charge": Charge})
    calls = count_calls(env)
    env.create("order", id="o-cost", params={"amount": 1})
    env.run_until_idle()
    calls = Counter(calls)  # as the round trip left it (reading the status below is not part)
    assert env.get("order", "o-cost").status().output == {"charged": 1}
    # AND the same done by hand: the parent waits for an event, the charge is created by the
    # API, and once it completed its output is sent to the parent by the API
    by_hand_env = aws_env({"order": OrderByHand, "charge": Charge})
    by_hand = count_calls(by_hand_env)
    parent = by_hand_env.create("order", id="o-hand")
    by_hand_env.run_until_idle()
    by_hand_env.create("charge", id="c-hand", params={"amount": 1})
    by_hand_env.run_until_idle()
    parent.send_event(type="charged", payload={"charged": 1})
    by_hand_env.run_until_idle()
    # THEN the round trip made exactly the calls the hand-made one made: the child's start is
    # a create, its end is a send_event (a read of the parent, one transaction, one message),
    # and nothing polls the child
    measured = {op: n for op, n in calls.items() if not op.endswith(".Query")}
    assert measured == {op: n for op, n in by_hand.items() if not op.endswith(".Query")}
    assert calls["dynamodb.Query"] == by_hand["dynamodb.Query"] == 3  # one load per invocation
    assert env.invocations == by_hand_env.invocations == 3  # parent, child, parent woken
    assert calls["sqs.SendMessage"] == 3  # parent created, child created, parent woken
    assert calls["dynamodb.GetItem"] == 1  # the child's end reads its parent, once
    assert calls["dynamodb.TransactWriteItems"] == 1  # and stores its answer, once
    assert calls["scheduler.CreateSchedule"] == 1  # the parent step's deadline


def test_a_child_that_ends_before_its_parent_waits_leaves_its_answer_in_the_mailbox(
    aws_env: Any,
) -> None:
    # GIVEN the parent's first pass created the child but could not record its wait
    env = aws_env({"order": Order, "charge": Charge})
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.PutItem", "unreachable", match=journal_put_of("pay"))
    env.create("order", id="o-early", params={"amount": 9})
    env.run_once("order", "o-early")
    parent = env.aws.runtime.store.get(InstanceRef("order", "o-early"))
    child = child_id(parent.ref, parent.generation, "pay\x1f1", "pay")
    assert env.get("order", "o-early").status().steps == []  # nothing recorded
    # WHEN the child runs to its end before the parent runs again (the runner called directly:
    # the queue would hand out the parent's message first)
    asyncio.run(env.aws.runtime.runner.advance(InstanceRef("charge", child)))
    assert env.get("charge", child).status().status == "complete"
    mailbox = env.aws.runtime.store.load(parent.ref).events
    assert [e.type for e in mailbox] == [f"child:charge/{child}"]
    # THEN the parent, run again, creates nothing new and finds the answer waiting
    env.run_until_idle()
    status = env.get("order", "o-early").status()
    assert status.status == "complete", status.error
    assert status.output == {"charged": 9}
    assert [r.id for r in env.workflow("charge").list().records] == [child]


def test_a_lost_post_of_the_childs_work_is_not_a_step_failure_and_the_sweep_starts_it(
    aws_env: Any,
) -> None:
    # GIVEN the child's first work message fails to post (throttled)
    env = aws_env({"order": Order, "charge": Charge})
    faults = Faults.on(env.aws.runtime)
    faults.arm("sqs.SendMessage", "throttle", match=lambda p: "charge" in p.get("MessageBody", ""))
    order = env.create("order", id="o-lost", params={"amount": 3})
    env.run_until_idle()
    # THEN the parent's invocation went on (it was not given back for a retry) and recorded
    # its step, waiting: the child exists, queued, due
    assert faults.fired("sqs.SendMessage") == 1
    assert env.invocations == 1
    status = order.status()
    assert (status.status, status.steps[0].status) == ("waiting", "waiting")
    child = env.get("charge", status.steps[0].child["id"])
    assert child.status().status == "queued"
    # WHEN the recovery sweep runs once the child is overdue
    env.clock.advance("5 minutes")
    assert env.sweep() == 1
    env.run_until_idle()
    # THEN the child runs and its end wakes the parent
    assert child.status().status == "complete"
    assert order.status().output == {"charged": 3}
