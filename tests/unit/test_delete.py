"""delete() and delete_batch(): the instance, its journal, events and wake-ups go; a running or
waiting instance is terminated first; nothing a busy runner or a late wake-up does brings it
back; deleting what is not there reports not_found and changes nothing else."""

from __future__ import annotations

import base64
import os
from collections import Counter
from typing import Any

import pytest

from lambda_workflows import (
    InstanceNotFound,
    InvalidInput,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
)
from lambda_workflows.engine.errors import SuspendReason
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.testing import WorkflowTestEnv

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

ran: Counter[str] = Counter()
ENVS: dict[str, WorkflowTestEnv] = {}


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()


class SleepsThenWorks(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("before", lambda: ran.update(["before"]))
        await step.sleep("nap", "1 hour")
        await step.do("after", lambda: ran.update(["after"]))
        return "done"


class WaitsForEvent(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        got = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return got.payload


def stored_items(env: WorkflowTestEnv, ref: InstanceRef) -> list[str]:
    """The sort keys of every item of the instance's partition (aws), or its stored state
    (memory): what is left of it in the store."""
    if env.backend == "memory":
        return ["instance"] if ref in env.store._instances else []
    store = env.aws.runtime.store
    answer = store.client.query(
        TableName=store.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"I#{ref.workflow}#{ref.id}"}},
        ConsistentRead=True,
    )
    return [item["sk"]["S"] for item in answer["Items"] if "deleted_at" not in item]


def test_deleting_a_waiting_instance_removes_it_and_its_wake_up_never_fires(
    make_env: EnvFactory,
) -> None:
    # GIVEN an instance asleep for an hour, with a wake-up scheduled
    env = make_env({"s": SleepsThenWorks})
    big = base64.b64encode(os.urandom(400_000)).decode()  # params stored in chunks too
    inst = env.create("s", id="s", params={"big": big})
    env.run_once("s", "s")
    assert inst.status().status == "waiting"
    assert env.pending_wake_ups()

    # WHEN it is deleted
    inst.delete()

    # THEN it is gone, with its journal, chunks and wake-up
    with pytest.raises(InstanceNotFound):
        inst.status()
    with pytest.raises(InstanceNotFound):
        env.get("s", "s")
    assert stored_items(env, inst.ref) == []
    assert env.pending_wake_ups() == []
    assert env.workflow("s").list().records == []
    assert env.service.describe("s").instances["terminated"] == 0

    # AND a wake-up already on its way (a schedule that fired anyway, a message in flight)
    # finds nothing and recreates nothing
    now = env.clock.time()
    env.runner.scheduler.schedule(inst.ref, now + 3600, SuspendReason.SLEEP)
    env.clock.advance("2 hours")
    env.run_until_idle()
    env.run_once("s", "s")
    with pytest.raises(InstanceNotFound):
        inst.status()
    assert stored_items(env, inst.ref) == []
    assert ran == Counter(before=1)  # "after" never ran


def test_deleting_a_waiting_instance_removes_its_buffered_events(make_env: EnvFactory) -> None:
    env = make_env({"w": WaitsForEvent})
    inst = env.create("w", id="w")
    env.run_until_idle()
    inst.send_event(type="other", payload={"x": 1}, key="k-1")
    inst.delete()
    assert stored_items(env, inst.ref) == []
    with pytest.raises(InstanceNotFound):
        inst.send_event(type="approved", payload={})


class DeletedWhileRunning(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def first() -> int:
            ran["first"] += 1
            if ran["first"] == 1:
                # deleted while this runner holds the lease, mid-step
                ENVS["env"].get("busy", event.instance_id).delete()
            return ran["first"]

        def second() -> int:
            ran["second"] += 1
            return ran["second"]

        return [await step.do("first", first), await step.do("second", second)]


def test_deleting_a_running_instance_stops_its_runner_and_nothing_it_writes_comes_back(
    make_env: EnvFactory,
) -> None:
    # GIVEN an instance deleted while a runner is inside its first step
    env = ENVS["env"] = make_env({"busy": DeletedWhileRunning})
    inst = env.create("busy", id="b")
    env.run_until_idle()  # the runner finishes the step, then finds the instance gone

    # THEN the runner stopped there (no further step), and did not recreate the instance
    assert ran == Counter(first=1)
    with pytest.raises(InstanceNotFound):
        inst.status()
    assert env.workflow("busy").list().records == []

    # AND an instance created again with the same id starts afresh: the result the busy
    # runner recorded after the delete is never read
    again = env.create("busy", id="b")
    env.run_until_idle()
    assert again.status().status == "complete"
    assert again.status().output == [2, 1]
    assert ran == Counter(first=2, second=1)


def test_delete_batch_reports_each_position(make_env: EnvFactory) -> None:
    env = make_env({"w": WaitsForEvent})
    for id in ("a", "b", "keep"):
        env.create("w", id=id)
    env.run_until_idle()

    result = env.workflow("w").delete_batch(["a", "missing", "b", "a", "not valid!"])

    # an id given twice is deleted once and answered at each of its positions
    assert result["deleted"] == [{"id": "a"}, {"id": "b"}, {"id": "a"}]
    errors = result["errors"]
    assert [(e["index"], e["id"], e["code"]) for e in errors] == [
        (1, "missing", "not_found"),
        (4, "not valid!", "invalid_input"),
    ]
    assert "missing" in errors[0]["message"]
    assert [r.id for r in env.workflow("w").list().records] == ["keep"]
    assert env.get("w", "keep").status().status == "waiting"


def test_delete_batch_refuses_a_malformed_batch_whole(make_env: EnvFactory) -> None:
    env = make_env({"w": WaitsForEvent})
    env.create("w", id="a")
    for ids, says in [
        ([f"i{n}" for n in range(101)], "at most 100"),
        (["a", 7], "must be an instance id"),
        ("a", "list of instance ids"),
    ]:
        with pytest.raises(InvalidInput, match=says):
            env.workflow("w").delete_batch(ids)  # type: ignore[arg-type]
    assert env.get("w", "a").status().status == "queued"


def test_deleting_twice_reports_not_found_and_changes_nothing_else(make_env: EnvFactory) -> None:
    env = make_env({"s": SleepsThenWorks})
    gone = env.create("s", id="gone")
    other = env.create("s", id="other")
    env.run_once("s", "gone")
    env.run_once("s", "other")  # both asleep, a wake-up each
    gone.delete()
    before = env.store.get(other.ref)

    with pytest.raises(InstanceNotFound, match="gone"):
        gone.delete()
    result = env.workflow("s").delete_batch(["gone"])

    assert result["deleted"] == []
    assert [e["code"] for e in result["errors"]] == ["not_found"]
    assert env.store.get(other.ref) == before
    assert len(env.pending_wake_ups()) == 1  # the other instance's


def test_a_finished_instance_is_deleted_and_its_id_can_be_used_again(
    make_env: EnvFactory,
) -> None:
    env = make_env({"w": WaitsForEvent})
    inst = env.create("w", id="w")
    env.run_until_idle()
    inst.send_event(type="approved", payload={"by": "ana"})
    env.run_until_idle()
    assert inst.status().output == {"by": "ana"}

    inst.delete()
    again = env.create("w", id="w")
    env.run_until_idle()

    status = again.status()
    assert status.status == "waiting"  # a fresh journal: the old event is not delivered
    assert [s.name for s in status.steps] == ["approval"]
    again.send_event(type="approved", payload={"by": "bo"})
    env.run_until_idle()
    assert again.status().output == {"by": "bo"}


def test_a_restarted_then_deleted_instance_leaves_nothing(make_env: EnvFactory) -> None:
    env = make_env({"s": SleepsThenWorks})
    inst = env.create("s", id="s")
    env.run_until_idle()
    env.clock.advance("2 hours")
    env.run_until_idle()
    inst.restart(from_step={"name": "nap"})  # claims and copies in a new generation
    env.run_once("s", "s")
    inst.delete()
    assert stored_items(env, inst.ref) == []
    created = env.workflow("s").create_batch([{"id": "s"}, {"id": "t"}])
    assert created["created"] == ["s", "t"]
