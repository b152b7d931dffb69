"""Versioned workflows: an instance is replayed by the class of the version it was created on,
new instances run the newest, and an instance whose version is not deployed is parked."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import ConfigurationError, InvalidWorkflowError
from lambda_workflows.engine.instances.recovery import SWEEP_MARGIN
from lambda_workflows.engine.versions import PARK_RETRY_SECONDS
from lambda_workflows.registry import load_workflows

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")


class OrdersV1(WorkflowEntrypoint):
    version = "1"

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        charged = await step.do("charge", lambda: "charged")
        await step.sleep("cool down", "1 hour")
        shipped = await step.do("ship", lambda: "shipped")
        return ["v1", charged, shipped]


class OrdersV2(WorkflowEntrypoint):
    """Ships before it charges: a change no v1 instance could replay."""

    version = "2"

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        shipped = await step.do("ship", lambda: "shipped")
        await step.sleep("cool down", "1 hour")
        charged = await step.do("charge", lambda: "charged")
        return ["v2", shipped, charged]


def _sleeping_v1(make_env: EnvFactory) -> Any:
    env = make_env({"orders": OrdersV1})
    old = env.create("orders", id="old")
    env.run_once("orders", "old")  # charge, then the sleep: it waits on v1
    assert old.status().status == "waiting"
    return env, old


def test_old_instance_finishes_on_its_version_new_one_runs_the_newest(
    make_env: EnvFactory,
) -> None:
    env, old = _sleeping_v1(make_env)
    env.workflows["orders"] = OrdersV2  # v2 deployed beside v1
    env.workflows["orders@1"] = OrdersV1
    new = env.create("orders", id="new")
    env.run_until_idle()
    assert old.status().status == "complete", old.status().error
    assert old.status().output == ["v1", "charged", "shipped"]
    assert old.status().workflow_version == "1"
    assert new.status().output == ["v2", "shipped", "charged"]
    assert new.status().workflow_version == "2"


def test_instance_of_a_removed_version_is_parked_then_continues(make_env: EnvFactory) -> None:
    env, old = _sleeping_v1(make_env)
    env.workflows["orders"] = OrdersV2  # v1 removed: nothing replays the old instance
    env.run_until_idle()
    parked = old.status()
    assert parked.status not in ("errored", "complete")
    assert parked.status_reason is not None
    assert parked.status_reason.startswith("version 1 of orders is not deployed")
    assert [s.name for s in parked.steps] == ["charge", "cool down"]  # nothing new ran

    env.workflows["orders@1"] = OrdersV1  # deployed again
    env.clock.advance(PARK_RETRY_SECONDS + SWEEP_MARGIN + 1)
    assert env.sweep() == 1
    env.run_until_idle()
    done = old.status()
    assert done.status == "complete", done.error
    assert done.output == ["v1", "charged", "shipped"]
    assert done.status_reason is None


def test_restart_runs_the_newest_version(make_env: EnvFactory) -> None:
    env, old = _sleeping_v1(make_env)
    env.workflows["orders"] = OrdersV2
    env.workflows["orders@1"] = OrdersV1
    old.restart()
    env.run_until_idle()
    assert old.status().output == ["v2", "shipped", "charged"]
    assert old.status().workflow_version == "2"


def test_a_bad_version_is_refused_when_the_class_is_defined() -> None:
    with pytest.raises(InvalidWorkflowError, match="version must be a string"):

        class Bad(WorkflowEntrypoint):
            version = 2  # type: ignore[assignment]


def test_workflows_entries_name_versions() -> None:
    registry = load_workflows(f"orders={__name__}:OrdersV2, orders@1={__name__}:OrdersV1")
    assert registry == {"orders": OrdersV2, "orders@1": OrdersV1}
    with pytest.raises(ConfigurationError, match=r"orders@3=.*declares version '1', not '3'"):
        load_workflows(f"orders={__name__}:OrdersV2,orders@3={__name__}:OrdersV1")
    with pytest.raises(ConfigurationError, match="no entry orders=module:Class"):
        load_workflows(f"orders@1={__name__}:OrdersV1")
    with pytest.raises(ConfigurationError, match="also its newest entry"):
        load_workflows(f"orders={__name__}:OrdersV2,orders@2={__name__}:OrdersV2")


def test_describe_counts_instances_in_flight_by_version(make_env: EnvFactory) -> None:
    env, _ = _sleeping_v1(make_env)
    env.workflows["orders"] = OrdersV2
    env.workflows["orders@1"] = OrdersV1
    env.create("orders", id="new")
    shown = env.service.describe("orders").to_dict()["versions"]
    assert shown == [
        {"version": "2", "class_name": "OrdersV2", "module": __name__, "in_flight": 1},
        {"version": "1", "class_name": "OrdersV1", "module": __name__, "in_flight": 1},
    ]
    env.run_until_idle()
    assert [v["in_flight"] for v in env.service.describe("orders").to_dict()["versions"]] == [0, 0]
