"""Rules of Workflows: "Batch multiple Workflow invocations".

Start many instances with one ``create_batch`` call.

✅ ``create_all``: one call, one store write for all four instances; idempotent, so a caller
that crashed and sends the batch again creates nothing new.
🔴 ``bad_create_all``: one call and one store write per instance (more likely to hit creation
rate limits), and not retry-safe: sending it again fails on the first existing id.
Store writes are counted with ``env.store.writes`` on the in-memory backend.
"""

from __future__ import annotations

import pytest

from lambda_workflows import InstanceAlreadyExists
from lambda_workflows.examples._fakes import example_env
from lambda_workflows.examples.batch_create import INSTANCES, bad_create_all, create_all
from lambda_workflows.examples.deterministic_side_effects import AnotherWorkflow
from lambda_workflows.testing import WorkflowTestEnv

from ._support import instances_of

IDS = sorted(item["id"] for item in INSTANCES)


def _env() -> WorkflowTestEnv:
    return WorkflowTestEnv({"my-workflow": AnotherWorkflow}, env=example_env())


def test_create_batch_makes_every_instance_in_one_write_and_they_all_run() -> None:
    # GIVEN an empty store
    env = _env()
    writes = env.store.writes
    # WHEN the good code creates the four instances
    result = create_all(env.workflow("my-workflow"))
    # THEN one store write created all four, and each one runs
    assert env.store.writes - writes == 1
    assert sorted(result.created) == IDS and result.errors == []
    env.run_until_idle()
    for item in INSTANCES:
        status = env.get("my-workflow", item["id"]).status()
        assert status.status == "complete"
        assert status.output == f"hello from {item['id']}"


def test_resending_the_batch_creates_nothing_and_runs_nothing_again() -> None:
    # GIVEN the batch was created and has run (the caller then crashed before it knew)
    env = _env()
    create_all(env.workflow("my-workflow"))
    env.run_until_idle()
    invocations, sent = env.invocations, env.queue.sent
    # WHEN the caller sends the same batch again
    result = create_all(env.workflow("my-workflow"))
    env.run_until_idle()
    # THEN every id is reported as existing, nothing is created, queued or run again
    assert result.created == []
    assert sorted(error["id"] for error in result.errors) == IDS
    assert {error["code"] for error in result.errors} == {"instance_exists"}
    assert instances_of(env, "my-workflow") == IDS
    assert env.queue.sent == sent and env.invocations == invocations


def test_bad_one_by_one_creation_costs_one_write_per_instance() -> None:
    # GIVEN an empty store
    env = _env()
    writes = env.store.writes
    # WHEN the bad code creates the same four instances one by one
    created = bad_create_all(env.workflow("my-workflow"))
    # THEN it took one store write per instance (four calls where the batch needs one)
    assert sorted(created) == IDS
    assert env.store.writes - writes == len(INSTANCES)
    batch_env = _env()
    batch_writes = batch_env.store.writes
    create_all(batch_env.workflow("my-workflow"))
    assert batch_env.store.writes - batch_writes < env.store.writes - writes


def test_bad_one_by_one_creation_is_not_safe_to_send_again() -> None:
    # GIVEN the instances were created one by one
    env = _env()
    bad_create_all(env.workflow("my-workflow"))
    # WHEN the caller retries the loop
    with pytest.raises(InstanceAlreadyExists) as caught:
        bad_create_all(env.workflow("my-workflow"))
    # THEN it fails on the first id (the batch, by contrast, reports and goes on)
    assert caught.value.instance_id == INSTANCES[0]["id"]
    assert instances_of(env, "my-workflow") == IDS
