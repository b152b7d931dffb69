"""A workflow's ``concurrency = N``: at most N of its instances run at once, the others wait
queued and start oldest first; a dead runner's slot comes back once its lease expired; and what
a slot costs in AWS calls. On the memory store and on DynamoDB (moto), with runner threads
pulling from the work queue."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.sqs import parse_work_message
from lambda_workflows.engine.errors import InvalidWorkflowError
from lambda_workflows.engine.instances.advance import Runner
from lambda_workflows.engine.instances.recovery import QUEUE_GRACE, SWEEP_MARGIN
from lambda_workflows.engine.instances.slots import line_key
from lambda_workflows.engine.model import InstanceRecord, InstanceRef, InstanceStatus
from lambda_workflows.engine.versions import PARK_RETRY_SECONDS
from lambda_workflows.testing import Crash, WorkflowTestEnv
from tests.aws_faults import Faults

from .test_costs import count_calls

LIMIT = 5
_invocation = threading.local()  # per runner thread: did this invocation run a step yet?
_crash_once: set[str] = set()  # instances whose next step kills its runner


async def _one_step() -> str:
    # async: it runs on the runner thread's event loop, where _invocation is that runner's
    if _invocation.__dict__.pop("crash", None) is not None:
        raise Crash("the runner dies holding its slot")
    _invocation.stepped = True
    return "done"


def _remaining() -> float:
    """One step per invocation: then the runner is out of time and yields (the instance stays
    running, holding its slot, its work posted again): so more instances are running than
    there are runners, and the limit is what keeps them at N."""
    return 0.0 if getattr(_invocation, "stepped", False) else 900.0


class Limited(WorkflowEntrypoint):
    concurrency = LIMIT

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for part in range(2):
            await step.do(f"part {part}", _one_step)
        return event.payload["n"]


class Solo(WorkflowEntrypoint):
    concurrency = 1

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        if event.instance_id in _crash_once:
            _crash_once.discard(event.instance_id)
            _invocation.crash = True
        return await step.do("only", _one_step)


class Unlimited(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("only", _one_step)


class Observed:
    """The backend's own store, watched: each write that moves an instance in or out of
    ``running`` (a lease, a status change) is checked, under a lock held across the write, so
    what the pool sees is the exact sequence of transitions, not a later snapshot."""

    def __init__(self, store: Any, pool: Pool) -> None:
        self._store = store
        self._pool = pool
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def acquire_lease(self, *args: Any, **kwargs: Any) -> InstanceRecord | None:
        with self._lock:
            record: InstanceRecord | None = self._store.acquire_lease(*args, **kwargs)
            if record is not None:
                self._pool.transition(record)
            return record

    def update(self, *args: Any, **kwargs: Any) -> InstanceRecord | None:
        with self._lock:
            record: InstanceRecord | None = self._store.update(*args, **kwargs)
            if record is not None:
                self._pool.transition(record)
            return record


class Pool:
    """Runner threads on one backend, each taking one work message at a time; every status
    change a runner makes is checked against the limit (and FIFO) as it happens."""

    def __init__(self, env: WorkflowTestEnv, workflow: str, limit: int) -> None:
        self.env = env
        self.workflow = workflow
        self.limit = limit
        self.store = Observed(env.store, self)
        if env.backend == "aws":
            runtime = env.aws.runtime
            queue, wakeups, slots = runtime.queue, runtime.wakeups, runtime.slot_store
        else:
            queue, wakeups, slots = env.queue, env.scheduler, env.store.slots
        self.runner = Runner(env.workflows, self.store, queue, wakeups, env.clock, slot_store=slots)
        self.running: set[str] = set()
        self.started: list[str] = []
        self.complete: set[str] = set()
        self.peak = 0
        self.broken: list[str] = []

    def transition(self, record: InstanceRecord) -> None:
        """One instance's new status, as it was written: count the running ones, and check
        that an instance starting for the first time left nobody older in line."""
        if record.workflow != self.workflow:
            return
        if record.status is not InstanceStatus.RUNNING:
            self.running.discard(record.id)
            if record.status is InstanceStatus.COMPLETE:
                self.complete.add(record.id)
            return
        self.running.add(record.id)
        self.peak = max(self.peak, len(self.running))
        if len(self.running) > self.limit:
            self.broken.append(f"{sorted(self.running)} running at once")
        if record.id in self.started:
            return
        self.started.append(record.id)
        mine = line_key(record)
        line = self.env.store.slots.waiting(self.workflow, 0, 100)
        if any(key < mine for key in line):
            self.broken.append(f"{record.id} started before {[k for k in line if k < mine]}")

    # --- taking work ----------------------------------------------------------------------

    def take(self) -> tuple[InstanceRef, Callable[[], None]] | None:
        """One work message: the instance, and how to delete the message once done."""
        if self.env.backend == "memory":
            ref = self.env.queue.receive()
            return None if ref is None else (ref, lambda: None)
        messages = self.env.aws.receive(max_messages=1)
        if not messages:
            return None
        message = messages[0]
        sqs, url = self.env.aws.sqs, self.env.aws.settings.work_queue_url
        return parse_work_message(message["Body"]), lambda: sqs.delete_message(
            QueueUrl=url, ReceiptHandle=message["ReceiptHandle"]
        )

    def invoke(self) -> bool:
        """One runner invocation; False when no message was visible. A runner that dies
        leaves its message undeleted: it comes back only after the queue's visibility
        timeout (never, in a test), as the lease does only once it expired."""
        got = self.take()
        if got is None:
            return False
        ref, done = got
        _invocation.stepped = False
        try:
            asyncio.run(self.runner.advance(ref, _remaining, owner=uuid.uuid4().hex))
        except Crash:
            return True
        done()
        return True

    def run_threads(self, threads: int, until: Callable[[], bool], seconds: float = 300) -> None:
        """``threads`` runners taking work until ``until()``. When no work is left and
        ``until()`` is not reached, the clock moves past the queue's grace and the recovery
        sweep runs, as every 5 minutes on AWS: a work message that a runner dropped because
        another held the lease (a duplicate, a yield's message taken too early) is found
        again by its instance's due time."""
        errors: list[BaseException] = []
        deadline = time.monotonic() + seconds
        idle: set[int] = set()

        def work(me: int) -> None:
            try:
                while not until() and time.monotonic() < deadline:
                    if self.invoke():
                        idle.clear()
                        continue
                    idle.add(me)
                    if len(idle) == threads and me == 0:  # everyone idle: one sweeps
                        self.env.clock.advance(QUEUE_GRACE + SWEEP_MARGIN + 1)
                        self.env.sweep()
                        idle.clear()
                    time.sleep(0.005)
            except BaseException as exc:  # reported by the test, not lost in a thread
                errors.append(exc)

        workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert not errors, errors

    def drain(self) -> None:
        """One runner taking work until no message is visible."""
        while self.invoke():
            pass

    def completed(self, count: int) -> Callable[[], bool]:
        return lambda: len(self.complete) >= count


@pytest.fixture(params=["memory", "aws"])
def env_of(request: pytest.FixtureRequest) -> Iterator[Callable[..., WorkflowTestEnv]]:
    made: list[WorkflowTestEnv] = []

    def build(workflows: dict[str, type[WorkflowEntrypoint]]) -> WorkflowTestEnv:
        env = WorkflowTestEnv(workflows, backend=request.param)
        if env.aws is not None:
            env.aws.queue_only()  # the pool's runners take work messages off the queue
        made.append(env)
        return env

    yield build
    for env in made:
        env.close()


def _create(env: WorkflowTestEnv, workflow: str, ids: list[str]) -> None:
    for n, instance_id in enumerate(ids):
        env.service.create(workflow, instance_id, {"n": n})
        env.clock.advance(0.001)  # each one created a millisecond after the one before


def test_fifty_instances_under_four_runners_never_run_more_than_five_and_start_in_order(
    env_of: Callable[..., WorkflowTestEnv],
) -> None:
    env = env_of({"limited": Limited})
    pool = Pool(env, "limited", LIMIT)
    ids = [f"n{n:02d}" for n in range(50)]
    _create(env, "limited", ids)

    pool.run_threads(4, until=pool.completed(50))

    assert pool.broken == []  # never more than 5 running, nobody started before an older one
    assert pool.complete == set(ids)
    assert [env.get("limited", i).status().output for i in ids] == list(range(50))
    assert pool.peak == LIMIT  # the limit was reached: more were runnable than it allows
    assert sorted(pool.started) == ids


def test_with_one_runner_instances_start_exactly_in_creation_order(
    env_of: Callable[..., WorkflowTestEnv],
) -> None:
    env = env_of({"limited": Limited})
    pool = Pool(env, "limited", LIMIT)
    ids = [f"n{n:02d}" for n in range(12)]
    _create(env, "limited", list(reversed(ids)))  # created last to first

    pool.run_threads(1, until=pool.completed(12))

    assert pool.broken == []
    assert pool.started == list(reversed(ids))


def test_a_waiting_instance_shows_its_place_in_line(
    env_of: Callable[..., WorkflowTestEnv],
) -> None:
    env = env_of({"solo": Solo})
    _create(env, "solo", ["first", "second", "third"])

    first = env.get("solo", "first").status()
    third = env.get("solo", "third").status()

    assert (first.status, third.status) == ("queued", "queued")
    assert (
        first.status_reason
        == "waiting for a slot: position 1 in line (at most 1 of solo run at once)"
    )
    assert third.status_reason is not None and "position 3 in line" in third.status_reason


def test_a_runner_killed_holding_a_slot_frees_it_once_its_lease_expired(
    env_of: Callable[..., WorkflowTestEnv],
) -> None:
    env = env_of({"solo": Solo})
    pool = Pool(env, "solo", 1)
    _crash_once.add("dies")
    _create(env, "solo", ["dies", "next"])
    # the first runner takes the slot and dies mid-step; the second instance waits for it
    pool.drain()
    assert env.store.get(InstanceRef("solo", "dies")).slot == 0
    assert env.get("solo", "next").status().status == "queued"

    env.clock.advance("10 minutes")  # within the lease (16 minutes): the slot is still held
    env.sweep()
    pool.drain()
    assert env.store.get(InstanceRef("solo", "next")).slot is None
    assert env.get("solo", "dies").status().status == "running"

    env.clock.advance("10 minutes")  # past the lease: the sweep reclaims the slot
    assert env.sweep() >= 1
    dead = env.store.get(InstanceRef("solo", "dies"))
    assert (dead.status, dead.lease_owner) == ("queued", None)  # queued again, first in line
    pool.drain()

    assert pool.broken == []
    assert pool.complete == {"dies", "next"}
    assert pool.started == ["dies", "next"]
    assert env.get("solo", "next").status().output == "done"


class SoloV1(WorkflowEntrypoint):
    """Version 1 of a workflow that runs one instance at a time: two steps."""

    version = "1"
    concurrency = 1

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("first", _one_step)
        await step.do("second", _one_step)
        return "v1"


class SoloV2(WorkflowEntrypoint):
    version = "2"
    concurrency = 1

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("only", _one_step)
        return "v2"


def _parked(env: WorkflowTestEnv, instance_id: str) -> InstanceRecord:
    record = env.store.get(InstanceRef("orders", instance_id))
    shown = env.get("orders", instance_id).status().status_reason
    assert shown is not None and shown.startswith("version 1 of orders is not deployed"), shown
    assert "in line" not in shown  # it waits for its version, not for a slot
    return record


def _deploy_v1_again(env: WorkflowTestEnv, pool: Pool) -> None:
    env.workflows["orders@1"] = SoloV1
    env.clock.advance(PARK_RETRY_SECONDS + SWEEP_MARGIN + 1)
    assert env.sweep() >= 1  # the parked instance is posted again
    pool.drain()


def test_an_instance_parked_while_running_gives_its_slot_to_the_next(
    env_of: Callable[..., WorkflowTestEnv],
) -> None:
    # GIVEN a limit of 1, and an instance of version 1 running (one step done, it holds the
    # slot) when a deploy removes version 1
    env = env_of({"orders": SoloV1})
    pool = Pool(env, "orders", 1)
    _create(env, "orders", ["old"])
    assert pool.invoke()  # one step, then out of time: running, slot held, work posted again
    assert env.store.get(InstanceRef("orders", "old")).slot == 0
    env.workflows["orders"] = SoloV2
    # WHEN a new instance (version 2) is created and the runners run
    _create(env, "orders", ["new"])
    pool.drain()
    # THEN the old one is parked holding no slot, queued, and the new one ran to its end
    parked = _parked(env, "old")
    assert (parked.status, parked.slot, parked.lease_owner) == ("queued", None, None)
    assert env.get("orders", "new").status().output == "v2"
    # AND once version 1 is deployed again, the old one takes a slot again and finishes
    _deploy_v1_again(env, pool)
    assert env.get("orders", "old").status().output == "v1"
    assert env.get("orders", "old").status().status_reason is None
    assert pool.broken == []  # never more than one running


def test_an_instance_parked_before_it_ran_never_takes_a_slot(
    env_of: Callable[..., WorkflowTestEnv],
) -> None:
    # GIVEN a limit of 1 and an instance of version 1 queued when a deploy removes version 1
    env = env_of({"orders": SoloV1})
    pool = Pool(env, "orders", 1)
    _create(env, "orders", ["old"])
    env.workflows["orders"] = SoloV2
    _create(env, "orders", ["new"])
    # WHEN the runners run
    pool.drain()
    # THEN the old one is parked without ever running (nor taking a slot, nor keeping its
    # place in line) and the new one ran
    parked = _parked(env, "old")
    assert (parked.status, parked.slot) == ("queued", None)
    assert pool.started == ["new"]
    assert env.store.slots.waiting("orders", 0, 10) == []
    assert env.get("orders", "new").status().output == "v2"
    # AND once version 1 is deployed again it queues for a slot, runs, and finishes
    _deploy_v1_again(env, pool)
    assert env.get("orders", "old").status().output == "v1"
    assert pool.broken == []


def test_a_concurrency_that_is_not_a_whole_number_from_1_to_10000_is_refused() -> None:
    for bad in (0, 10_001, 2.5, "5", True):
        with pytest.raises(InvalidWorkflowError, match="concurrency must be a whole number"):
            type("Bad", (WorkflowEntrypoint,), {"concurrency": bad})


# --- what a slot costs, in AWS calls ---------------------------------------------------------


def _calls_of_one_invocation(env: WorkflowTestEnv, pool: Pool) -> Counter[str]:
    calls = count_calls(env)
    assert pool.invoke()
    return Counter({op: n for op, n in calls.items() if n})


def test_a_slot_acquire_and_release_cost_a_fixed_number_of_calls(aws_env: Any) -> None:
    env = aws_env({"solo": Solo, "free": Unlimited})
    env.aws.queue_only()  # the pool's runners take work messages off the queue
    for workflow in ("free", "solo"):
        _create(env, workflow, ["a", "b"])
    plain = Pool(env, "free", 100)
    plain_calls = _calls_of_one_invocation(env, plain)  # "free" a: no limit, no slot
    _calls_of_one_invocation(env, plain)
    solo = Pool(env, "solo", 1)

    # a takes the free slot (its lease refused without one: get, queue, read the slots and
    # the line, grant), runs, and hands the slot to b (read the line, hand over, post b). A
    # limited instance is leased before it is loaded, then looks at its lease again before its
    # step (a renewal); the plain instance's lease, taken right before its step, is that look
    # (lambda_workflows.engine.instances.lazy_lease): a refused lease and the renewal more
    acquire_and_hand_over = _calls_of_one_invocation(env, solo)
    acquire_and_hand_over.subtract(plain_calls)
    assert +acquire_and_hand_over == Counter(
        {
            "dynamodb.UpdateItem": 2,
            "dynamodb.GetItem": 1,
            "dynamodb.TransactWriteItems": 3,
            "dynamodb.BatchGetItem": 1,
            "dynamodb.Query": 2,
            "sqs.SendMessageBatch": 1,
        }
    )
    # b holds the slot already: its lease is taken at once (and renewed before its step, as
    # above); with nobody in line, its release frees the slot and reads the line again (the
    # look that loses no wake-up)
    release = _calls_of_one_invocation(env, solo)
    release.subtract(plain_calls)
    assert +release == Counter(
        {"dynamodb.UpdateItem": 1, "dynamodb.Query": 2, "dynamodb.TransactWriteItems": 1}
    )
    assert env.get("solo", "b").status().output == "done"


def _handing_over(params: dict[str, Any]) -> bool:
    """The transaction that gives a slot from its holder to the next in line."""
    slot = params.get("TransactItems", [{}])[0].get("Update", {})
    return ":giver" in slot.get("ExpressionAttributeValues", {})


def test_an_aws_failure_while_taking_or_handing_over_a_slot_is_retried_never_a_step_failure(
    aws_env: Any,
) -> None:
    env = aws_env({"solo": Solo})
    # the order of the queue's path: b's own first message comes after the hand-over (invoked
    # directly, b's work runs before a's retry, and the post lost with the timed-out hand-over
    # is the sweep's to make, once the holder's check is due)
    env.aws.queue_only()
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.BatchGetItem", "throttle")  # reading the slots, to take one
    faults.arm("dynamodb.TransactWriteItems", "timeout", match=_handing_over)  # done, unknown
    _create(env, "solo", ["a", "b"])

    env.run_until_idle()

    assert (faults.fired("dynamodb.BatchGetItem"), faults.fired("dynamodb.TransactWriteItems")) == (
        1,
        1,
    )
    for instance_id in ("a", "b"):
        status = env.get("solo", instance_id).status()
        assert (status.status, status.output) == ("complete", "done")
        assert [(s.name, s.attempts) for s in status.steps] == [("only", 1)]
    assert env.store.slots.holders("solo", [0]) == []  # the slot is free again
    assert env.store.slots.waiting("solo", 0, 10) == []
