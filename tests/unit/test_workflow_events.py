"""``Workflow Event`` EventBridge events delivered to instances, on both stores: once per
EventBridge event id, FIFO per type, and nothing written for an instance that does not exist."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import InstanceNotFound
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.entrypoints.trigger import WORKFLOW_EVENT, delivery_handler
from lambda_workflows.testing import WorkflowTestEnv

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")


class Approvals(WorkflowEntrypoint):
    """Two approvals in a row, then a step that counts how often it ran."""

    runs = 0

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        first = await step.wait_for_event("first", type="approved", timeout="1 day")
        second = await step.wait_for_event("second", type="approved", timeout="1 day")

        def count() -> int:
            Approvals.runs += 1
            return Approvals.runs

        await step.do("after approvals", count)
        return [first.payload, second.payload]


def event(event_id: str, instance_id: str, payload: Any, type: str = "approved") -> dict[str, Any]:
    """An EventBridge event as the WorkflowEvents rule delivers it."""
    return {
        "version": "0",
        "id": event_id,
        "detail-type": WORKFLOW_EVENT,
        "source": "workflows.trigger",
        "account": "123456789012",
        "time": "2025-03-12T14:25:02Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {
            "workflow": "approvals",
            "instance_id": instance_id,
            "type": type,
            "payload": payload,
        },
    }


def payloads(env: WorkflowTestEnv, instance_id: str) -> list[Any]:
    return [
        json.loads(e.payload) for e in env.store.load(InstanceRef("approvals", instance_id)).events
    ]


def test_an_event_delivered_twice_is_received_once(make_env: EnvFactory) -> None:
    # GIVEN an instance waiting for its first approval
    env = make_env({"approvals": Approvals})
    inst = env.create("approvals", id="a-1")
    env.run_until_idle()
    runs = Approvals.runs
    # WHEN the same EventBridge event is delivered twice, then a second one
    once = event("11111111-0000-4000-8000-000000000001", "a-1", "ana")
    assert delivery_handler(once, env.service) == delivery_handler(once, env.service)
    delivery_handler(event("11111111-0000-4000-8000-000000000002", "a-1", "bo"), env.service)
    env.run_until_idle()
    # THEN one event per EventBridge event was stored, and the instance ran through once
    assert payloads(env, "a-1") == ["ana", "bo"]
    status = inst.status()
    assert status.output == ["ana", "bo"]
    assert [s.name for s in status.steps].count("after approvals") == 1
    assert Approvals.runs == runs + 1


def test_events_of_one_type_are_received_in_delivery_order(make_env: EnvFactory) -> None:
    # GIVEN an instance waiting for its first approval
    env = make_env({"approvals": Approvals})
    inst = env.create("approvals", id="a-2")
    env.run_until_idle()
    # WHEN two approvals arrive (another type between) before the runner takes the first
    delivery_handler(event("22222222-0000-4000-8000-000000000001", "a-2", "first"), env.service)
    delivery_handler(
        event("22222222-0000-4000-8000-000000000002", "a-2", "x", type="rejected"), env.service
    )
    delivery_handler(event("22222222-0000-4000-8000-000000000003", "a-2", "second"), env.service)
    env.run_until_idle()
    # THEN the waits got them in the order they were stored
    assert inst.status().output == ["first", "second"]


def test_an_event_for_a_missing_instance_raises_and_writes_nothing(make_env: EnvFactory) -> None:
    env = make_env({"approvals": Approvals})
    env.create("approvals", id="a-3")

    with pytest.raises(InstanceNotFound, match="no instance 'nobody'"):
        delivery_handler(event("33333333-0000-4000-8000-000000000001", "nobody", 1), env.service)

    assert payloads(env, "a-3") == []
    with pytest.raises(InstanceNotFound):
        env.store.load(InstanceRef("approvals", "nobody"))


def test_an_event_id_that_is_not_a_valid_key_is_hashed_into_one(make_env: EnvFactory) -> None:
    # An event id EventBridge did not make (a test's, a replayed archive's) may hold any
    # character: the key derived from it is still valid, and still one per event id.
    env = make_env({"approvals": Approvals})
    inst = env.create("approvals", id="a-4")
    odd = event("archive/replay:1", "a-4", "first")
    delivery_handler(odd, env.service)
    delivery_handler(odd, env.service)
    delivery_handler(event("archive/replay:2", "a-4", "second"), env.service)
    env.run_until_idle()
    assert inst.status().output == ["first", "second"]
    assert payloads(env, "a-4") == ["first", "second"]
