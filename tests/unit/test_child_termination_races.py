"""Terminating a parent reaches a child created in the window around its creation: the
terminate just before the child is created (then no child is created), just after it (the
terminate finds it), or after the invocation died right after creating it. On every backend;
the faults are injected at the engine's own seams (the step interceptor a pass consults just
before it starts new work, the work queue that posts the child's first wake-up right after
creating it). ``tests/functional/test_child_workflows_aws.py`` does the same with botocore
hooks around the AWS call itself. Last, the store's promise that makes it so: the child and
its parent's wait are one write, made only while the parent runs on."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import InstanceAlreadyExists
from lambda_workflows.engine.instances.ports import WorkQueue
from lambda_workflows.engine.model import (
    EntryKind,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    JournalEntry,
    ParentRef,
    first_generation,
)
from lambda_workflows.engine.step import StepContext
from lambda_workflows.testing import Crash, TestInstance, WorkflowTestEnv

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

charged: list[Any] = []  # every run of the child's step


class Charge(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def charge() -> Any:
            charged.append(event.payload)
            return {"charged": event.payload["amount"]}

        return await step.do("charge", charge)


class Order(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.run_workflow("pay", workflow="charge", params=event.payload)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    charged.clear()


class TerminateBeforeTheChild:
    """A step interceptor that terminates the parent when its ``pay`` step is about to start
    its child: after the pass last looked for a terminate, before the child is created."""

    def __init__(self, env: WorkflowTestEnv) -> None:
        self.env = env
        self.fired = 0

    def stand_in(self, ref: InstanceRef, ctx: StepContext) -> Callable[..., Any] | None:
        if ref.workflow == "order" and ctx.step.name == "pay" and not self.fired:
            self.fired += 1
            self.env.service.terminate(ref)
        return None

    def event_timed_out(self, ref: InstanceRef, name: str, event_type: str) -> bool:
        return False


class BeforeTheChildsFirstPost:
    """The work queue the runner starts children through, doing ``act`` once just before it
    posts a child's first wake-up: right after the child was created."""

    def __init__(self, queue: WorkQueue, act: Callable[[], None]) -> None:
        self.queue = queue
        self.act: Callable[[], None] | None = act

    def send(self, ref: InstanceRef, delay: float = 0.0) -> None:
        if ref.workflow == "charge" and self.act is not None:
            act, self.act = self.act, None
            act()
        self.queue.send(ref, delay)

    def send_many(self, refs: Sequence[InstanceRef]) -> None:
        self.queue.send_many(refs)


def no_child_ran(env: WorkflowTestEnv) -> None:
    """Whatever child exists is terminated, and none ran its step, even once overdue work
    is swept up."""
    env.run_until_idle()
    env.clock.advance("10 minutes")
    env.sweep()
    env.run_until_idle()
    assert charged == []
    children = env.workflow("charge").list().records
    assert [c.status for c in children if c.status != "terminated"] == []


def terminated(order: TestInstance) -> None:
    status = order.status()
    assert status.status == "terminated", status


def test_a_terminate_just_before_the_child_is_created_creates_no_child(
    make_env: EnvFactory,
) -> None:
    # GIVEN the parent is terminated after its pass last looked, before it creates its child
    env = make_env({"order": Order, "charge": Charge})
    race = TerminateBeforeTheChild(env)
    env.runner.interceptor = race
    order = env.create("order", id="o-before", params={"amount": 1})
    # WHEN the pass goes on to create the child
    env.run_until_idle()
    # THEN no child is created (the creation is conditional on the parent), none runs
    assert race.fired == 1
    terminated(order)
    assert env.workflow("charge").list().records == []
    no_child_ran(env)


def test_a_terminate_just_after_the_child_is_created_terminates_it(
    make_env: EnvFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the parent is terminated the moment its child exists
    env = make_env({"order": Order, "charge": Charge})
    children = env.runner.children
    order = env.create("order", id="o-after", params={"amount": 2})
    race = BeforeTheChildsFirstPost(children.queue, order.terminate)
    monkeypatch.setattr(children, "queue", race)
    # WHEN everything runs
    env.run_until_idle()
    # THEN the terminate found the child (its parent's wait was recorded with it) and
    # terminated it before it ran its step
    assert race.act is None
    terminated(order)
    assert len(env.workflow("charge").list().records) == 1
    no_child_ran(env)


def test_a_parent_terminated_after_dying_right_after_creating_its_child_terminates_it(
    make_env: EnvFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the parent's invocation died right after creating its child
    env = make_env({"order": Order, "charge": Charge})
    children = env.runner.children

    def die() -> None:
        raise Crash("the invocation dies")

    monkeypatch.setattr(children, "queue", BeforeTheChildsFirstPost(children.queue, die))
    order = env.create("order", id="o-crash", params={"amount": 3})
    env.run_once("order", "o-crash")
    assert env.crashes == 1
    # WHEN the parent is terminated before it runs again
    order.terminate()
    # THEN its child is terminated too: it never runs its step
    terminated(order)
    no_child_ran(env)


# --- the store's promise (InstanceStore.record_child_wait), on each backend -------------------


def a_child_start(env: WorkflowTestEnv, parent_id: str, child: str) -> tuple[Any, Any, Any]:
    """A parent created (queued), and the wait and child record its ``pay`` step writes."""
    order = env.create("order", id=parent_id, params={"amount": 1})
    parent = env.store.get(order.ref)
    now = env.clock.time()
    wait = JournalEntry(
        key="pay\x1f1",
        kind=EntryKind.WAIT,
        name="pay",
        count=1,
        at=now,
        position=0,
        started_at=now,
        wake_at=now + 60,
        event_type=f"child:charge/{child}",
    )
    record = InstanceRecord(
        workflow="charge",
        id=child,
        status=InstanceStatus.QUEUED,
        params='{"amount": 1}',
        created_at=now,
        updated_at=now,
        generation=first_generation(now),
        parent=ParentRef("order", parent_id, "pay"),
    )
    return parent, wait, record


def test_a_second_writer_of_the_wait_gets_the_first_ones_and_creates_nothing(
    make_env: EnvFactory,
) -> None:
    env = make_env({"order": Order, "charge": Charge})
    parent, wait, child = a_child_start(env, "o-twice", "c-twice")
    first = env.store.record_child_wait(parent.ref, parent.generation, wait, child)
    # WHEN another runner writes the same wait with the same child
    later = dataclasses.replace(wait, at=wait.at + 1)
    second = env.store.record_child_wait(parent.ref, parent.generation, later, child)
    # THEN it gets the first wait back (and continues with its child): no InstanceAlreadyExists
    assert first is wait
    assert second == wait and second is not later
    assert [r.id for r in env.workflow("charge").list().records] == ["c-twice"]


def test_a_parent_that_moved_on_gets_no_child_and_no_wait(make_env: EnvFactory) -> None:
    env = make_env({"order": Order, "charge": Charge})
    parent, wait, child = a_child_start(env, "o-moved", "c-moved")
    env.service.terminate(parent.ref)
    # WHEN its step writes the child with its wait, on the generation it had
    written = env.store.record_child_wait(parent.ref, parent.generation, wait, child)
    # THEN nothing is written
    assert written is None
    assert env.workflow("charge").list().records == []
    assert env.store.load(parent.ref).entries == []


def test_a_taken_child_id_writes_no_wait(make_env: EnvFactory) -> None:
    env = make_env({"order": Order, "charge": Charge})
    parent, wait, child = a_child_start(env, "o-taken", "c-taken")
    env.create("charge", id="c-taken", params={"amount": 9})
    # WHEN the step writes its child under that id
    with pytest.raises(InstanceAlreadyExists):
        env.store.record_child_wait(parent.ref, parent.generation, wait, child)
    # THEN the wait was not recorded either
    assert env.store.load(parent.ref).entries == []
