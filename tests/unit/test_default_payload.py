"""An instance created without params (or with null params) gets ``event.payload == {}``, as a
Cloudflare instance created without params does: ``event.payload["x"]`` is a KeyError to catch
or ``.get("x")`` a default, never a TypeError on None. Other params are passed as given."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.testing import WorkflowTestEnv

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")


class ReadsOptions(WorkflowEntrypoint):
    """Reads an optional key of its params, as a workflow with defaults does."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        region = event.payload.get("region", "eu-west-1")
        try:
            tier = event.payload["tier"]
        except KeyError:
            tier = "free"
        return {"region": region, "tier": tier, "keys": sorted(event.payload)}


class EchoesPayload(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return {"payload": event.payload}


DEFAULTS = {"region": "eu-west-1", "tier": "free", "keys": []}


def output_of(env: WorkflowTestEnv, workflow: str, instance_id: str) -> Any:
    env.run_until_idle()
    status = env.get(workflow, instance_id).status()
    assert status.status == "complete", status.error
    return status.output


def test_create_without_params_gives_an_empty_object(make_env: EnvFactory) -> None:
    env = make_env({"r": ReadsOptions})

    env.create("r", id="bare")

    assert output_of(env, "r", "bare") == DEFAULTS


def test_create_with_params_none_gives_an_empty_object(make_env: EnvFactory) -> None:
    env = make_env({"r": ReadsOptions})

    env.create("r", id="none", params=None)

    assert output_of(env, "r", "none") == DEFAULTS


def test_batch_items_without_params_give_an_empty_object(make_env: EnvFactory) -> None:
    env = make_env({"r": ReadsOptions})

    env.create_batch("r", [{"id": "b-1"}, {"id": "b-2", "params": None}])

    assert output_of(env, "r", "b-1") == DEFAULTS
    assert output_of(env, "r", "b-2") == DEFAULTS


def test_a_restart_runs_again_with_the_same_empty_object(make_env: EnvFactory) -> None:
    env = make_env({"r": ReadsOptions})
    instance = env.create("r", id="again")
    env.run_until_idle()

    instance.restart()

    assert output_of(env, "r", "again") == DEFAULTS


def test_params_given_are_passed_as_they_are(make_env: EnvFactory) -> None:
    env = make_env({"r": ReadsOptions})

    env.create("r", id="given", params={"tier": "pro"})

    assert output_of(env, "r", "given") == {
        "region": "eu-west-1",
        "tier": "pro",
        "keys": ["tier"],
    }


@pytest.mark.parametrize("params", [{}, [], 0, "", False], ids=repr)
def test_falsy_params_are_kept_not_replaced(make_env: EnvFactory, params: Any) -> None:
    env = make_env({"e": EchoesPayload})

    env.create("e", id="falsy", params=params)

    assert output_of(env, "e", "falsy") == {"payload": params}
