"""Child workflows on the real adapters (moto): the child and its parent's wait are one write,
which survives a lost or unanswered call; a terminate of the parent racing that write (just
before or just after it, through botocore hooks) leaves no child running; a duplicate answer
stores nothing; and a round trip's AWS calls are counted (not timed)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest

from lambda_workflows import InstanceNotFound, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import InfrastructureError
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.engine.replay.child_steps import child_id
from tests.aws_faults import Faults

from .test_costs import count_calls


class Charge(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("charge", lambda: {"charged": event.payload["amount"]})


class Order(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.run_workflow("pay", workflow="charge", params=event.payload)


def creates_child_of(step_name: str) -> Any:
    """Matches the one write that records the parent's wait for ``step_name`` and creates its
    child (a transaction of the wait's journal item and the child's instance item)."""

    def match(params: dict[str, Any]) -> bool:
        puts = [a["Put"]["Item"] for a in params.get("TransactItems", []) if "Put" in a]
        sorts = [p["sk"]["S"] for p in puts]
        wait = any(
            sk.startswith("J#") and sk.split("#", 2)[2] == f"{step_name}\x1f1" for sk in sorts
        )
        return wait and "I" in sorts

    return match


@pytest.mark.parametrize("kind", ["unreachable", "timeout"])
def test_a_failed_write_of_the_child_and_the_parents_wait_creates_one_child(
    aws_env: Any, kind: str
) -> None:
    # GIVEN the write creating the child with the parent's wait never happens (unreachable),
    # or happens with its answer lost (timeout)
    env = aws_env({"order": Order, "charge": Charge})
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.TransactWriteItems", kind, match=creates_child_of("pay"))
    order = env.create("order", id=f"o-{kind}", params={"amount": 5})
    # WHEN the work is delivered again and everything runs
    env.run_until_idle()
    # THEN one child was created (again, or found with the wait), and the parent got its output
    assert faults.fired("dynamodb.TransactWriteItems") == 1
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
    # THEN the round trip made the calls the hand-made one made, but for the child's start:
    # one transaction creates the child and records the parent's wait (by hand, two puts);
    # its end is a send_event (a read of the parent, one transaction, one message), and
    # nothing polls the child
    measured = {op: n for op, n in calls.items() if not op.endswith(".Query")}
    expected = {op: n for op, n in by_hand.items() if not op.endswith(".Query")}
    expected["dynamodb.PutItem"] -= 2
    expected["dynamodb.TransactWriteItems"] += 1
    assert measured == expected
    assert calls["dynamodb.Query"] == by_hand["dynamodb.Query"] == 3  # one load per invocation
    assert env.invocations == by_hand_env.invocations == 3  # parent, child, parent woken
    assert calls["lambda.Invoke"] == 3  # parent created, child created, parent woken
    assert calls["sqs.SendMessage"] == 0  # each invoked directly
    assert calls["dynamodb.GetItem"] == 1  # the child's end reads its parent, once
    assert calls["dynamodb.TransactWriteItems"] == 2  # the child's start; its answer, once
    assert calls["scheduler.CreateSchedule"] == 1  # the parent step's deadline


def test_a_child_that_ends_before_its_parent_waits_leaves_its_answer_in_the_mailbox(
    aws_env: Any,
) -> None:
    # GIVEN the parent's first pass created the child and recorded its wait, but the answer
    # of that write was lost (timeout): the pass stopped before waiting
    env = aws_env({"order": Order, "charge": Charge})
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.TransactWriteItems", "timeout", match=creates_child_of("pay"))
    env.create("order", id="o-early", params={"amount": 9})
    env.run_once("order", "o-early")
    parent = env.aws.runtime.store.get(InstanceRef("order", "o-early"))
    child = child_id(parent.ref, parent.generation, "pay\x1f1", "pay")
    # a child's start needs no lease (engine.lazy_lease): the parent was never leased
    assert parent.status == "queued" and parent.lease_owner is None
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
    # GIVEN the child's first work fails to post (throttled: its invoke, then its message)
    env = aws_env({"order": Order, "charge": Charge})
    faults = Faults.on(env.aws.runtime)
    faults.arm("lambda.Invoke", "throttle", match=lambda p: p.get("workflow") == "charge")
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


def records_wait_of(step_name: str) -> Any:
    """Matches a write of the parent's wait for ``step_name``, alone (a PutItem) or with
    its child (a transaction)."""

    def match(params: dict[str, Any]) -> bool:
        puts = [params.get("Item", {})]
        puts += [a["Put"]["Item"] for a in params.get("TransactItems", []) if "Put" in a]
        sorts = [p.get("sk", {}).get("S", "") for p in puts]
        return any(
            sk.startswith("J#") and sk.split("#", 2)[2] == f"{step_name}\x1f1" for sk in sorts
        )

    return match


def creates_instance_of(workflow: str) -> Any:
    """Matches the write that creates an instance of ``workflow`` (a PutItem of its instance
    item, or a transaction holding one)."""

    def match(params: dict[str, Any]) -> bool:
        puts = [params.get("Item", {})]
        puts += [a["Put"]["Item"] for a in params.get("TransactItems", []) if "Put" in a]
        return any(
            p.get("sk", {}).get("S") == "I" and p["pk"]["S"].startswith(f"I#{workflow}#")
            for p in puts
        )

    return match


def child_never_ran(env: Any) -> None:
    """Every child of the test is terminated (or was never created): none charged."""
    env.run_until_idle()
    env.clock.advance("10 minutes")
    env.sweep()
    env.run_until_idle()
    children = env.workflow("charge").list().records
    assert [(c.id, c.status) for c in children if c.status != "terminated"] == []


def test_a_parent_terminated_after_its_childs_start_was_lost_leaves_no_child_running(
    aws_env: Any,
) -> None:
    # GIVEN the write recording the parent's wait for its child fails (unreachable)
    env = aws_env({"order": Order, "charge": Charge})
    faults = Faults.on(env.aws.runtime)
    for operation in ("dynamodb.PutItem", "dynamodb.TransactWriteItems"):
        faults.arm(operation, "unreachable", match=records_wait_of("pay"))
    order = env.create("order", id="o-lost-start", params={"amount": 4})
    env.run_once("order", "o-lost-start")
    assert faults.fired("dynamodb.PutItem") + faults.fired("dynamodb.TransactWriteItems") == 1
    # WHEN the parent is terminated before its work is delivered again
    order.terminate()
    # THEN no child runs: none was created without the wait that names it
    child_never_ran(env)
    assert order.status().status == "terminated"


class TerminateAround:
    """A botocore hook on the store's client: terminates ``parent`` once, just before or just
    after the call that creates a child of ``workflow`` goes out."""

    def __init__(self, env: Any, parent: InstanceRef, workflow: str, when: str) -> None:
        self.env, self.parent, self.when = env, parent, when
        self.creates = creates_instance_of(workflow)
        self.fired = 0
        events = env.aws.runtime.store.client.meta.events
        events.register("before-call.dynamodb.*", self._before)
        events.register("after-call.dynamodb.*", self._after)

    def _before(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        body = json.loads(params.get("body") or b"{}")
        context["creates_child"] = not self.fired and self.creates(body)
        if self.when == "before" and context["creates_child"]:
            self._terminate()

    def _after(self, context: dict[str, Any], **_: Any) -> None:
        if self.when == "after" and context.get("creates_child"):
            self._terminate()

    def _terminate(self) -> None:
        self.fired += 1
        self.env.service.terminate(self.parent)


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_terminate_racing_the_childs_creation_leaves_no_child_running(
    aws_env: Any, when: str
) -> None:
    # GIVEN the parent is terminated just before, or just after, the call creating its child
    env = aws_env({"order": Order, "charge": Charge})
    parent = InstanceRef("order", f"o-race-{when}")
    race = TerminateAround(env, parent, "charge", when)
    env.create("order", id=parent.id, params={"amount": 6})
    # WHEN everything runs
    env.run_until_idle()
    # THEN the terminate happened there, and no child ran: before, none was created (its
    # creation is conditional on the parent); after, the terminate found it (the parent's
    # wait was written with it) and terminated it
    assert race.fired == 1
    assert env.get("order", parent.id).status().status == "terminated"
    child_never_ran(env)
    created = len(env.workflow("charge").list().records)
    assert created == (0 if when == "before" else 1)


class Waiter(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return (await step.wait_for_event("go", type="go")).payload


class WaitsForChild(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.run_workflow("wait", workflow="waiter")


def loads_partition(pk: str) -> Any:
    """Matches the Query that loads a whole partition (the journal a terminate reads)."""
    return lambda params: (
        params.get("KeyConditionExpression") == "pk = :pk"
        and params["ExpressionAttributeValues"][":pk"]["S"] == pk
    )


def test_a_delete_cut_short_after_terminating_the_parent_terminates_its_child_on_retry(
    aws_env: Any,
) -> None:
    # GIVEN a parent waiting on its child, which waits for an event
    env = aws_env({"parent": WaitsForChild, "waiter": Waiter})
    parent = env.create("parent", id="p-del")
    env.run_until_idle()
    [child] = env.workflow("waiter").list().records
    assert child.status == "waiting"
    # WHEN its delete terminates it, then fails reading its journal for the children
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.Query", "unreachable", match=loads_partition("I#parent#p-del"))
    with pytest.raises(InfrastructureError):
        parent.delete()
    assert faults.fired("dynamodb.Query") == 1
    assert parent.status().status == "terminated"
    # AND the client retries the delete
    parent.delete()
    # THEN the parent is gone and its child was terminated too
    with pytest.raises(InstanceNotFound):
        parent.status()
    assert env.get("waiter", child.id).status().status == "terminated"
