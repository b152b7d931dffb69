"""The slot store and the schedule store are ports of their own: each runtime builds them and
hands them to the service and the runner; the engine never looks for them on the instance
store."""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.firings import DynamoFiringLedger
from lambda_workflows.aws.slots import DynamoSlots
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.memory.queue import MemoryQueue, MemoryScheduler
from lambda_workflows.memory.store import MemoryStore
from lambda_workflows.testing import VirtualClock, WorkflowTestEnv


class Limited(WorkflowEntrypoint):
    concurrency = 1

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("only", lambda: "done")


def test_the_aws_runtime_builds_its_slot_and_schedule_stores_and_hands_them_over(
    aws_env: Any,
) -> None:
    # GIVEN the AWS runtime of a test env
    runtime = aws_env({"limited": Limited}).aws.runtime
    # THEN its stores are on the instance table, and the service and runner use that one
    assert isinstance(runtime.slot_store, DynamoSlots)
    assert isinstance(runtime.schedule_store, DynamoFiringLedger)
    assert runtime.slot_store.table == runtime.schedule_store.table == runtime.store.table
    assert runtime.service.slots.slot_items is runtime.slot_store
    assert runtime.runner.slots.slot_items is runtime.slot_store


def test_the_memory_backend_hands_its_stores_slots_to_the_service_and_the_runner() -> None:
    env = WorkflowTestEnv({"limited": Limited})
    assert env.service.slots.slot_items is env.store.slots
    assert env.runner.slots.slot_items is env.store.slots
    # AND the limit holds: the second instance waits for the first one's slot
    env.service.create("limited", "a")
    env.service.create("limited", "b")
    reason = env.service.status(InstanceRef("limited", "b")).status_reason
    assert reason is not None and "position 2 in line" in reason


def test_a_service_given_no_slot_store_enforces_no_limit_and_reads_no_slots() -> None:
    # GIVEN a store that keeps slots, but a service built without a slot store
    clock = VirtualClock()
    store = MemoryStore()
    service = InstanceService(
        {"limited": Limited}, store, MemoryQueue(clock), MemoryScheduler(), clock
    )
    # WHEN an instance is created
    service.create("limited", "a")
    # THEN no gate was built, and nothing went through the store's slots
    assert service.slots is None
    assert "slots" not in store.__dict__  # the store's slots were never even built
