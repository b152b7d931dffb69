"""Rules of Workflows: "Instance IDs are unique".

An instance id must never be needed again.

✅ ``start_for_user``: a transaction id, or the user id plus a random suffix (recorded in a
database), so every request of the same user starts its own instance — and a redelivered
request with the same transaction id does not start a second one.
🔴 ``bad_start_for_user``: the user id as instance id; the user's second request fails with
``InstanceAlreadyExists`` and the first instance is left as it was.
"""

from __future__ import annotations

import pytest

from lambda_workflows import InstanceAlreadyExists
from lambda_workflows.examples._fakes import InMemoryKV, example_env
from lambda_workflows.examples.dont_mutate_event import DontMutateEventWorkflow
from lambda_workflows.examples.unique_instance_ids import (
    SignupRequest,
    bad_start_for_user,
    start_for_user,
)
from lambda_workflows.testing import WorkflowTestEnv

from ._support import instances_of


def _env() -> WorkflowTestEnv:
    return WorkflowTestEnv({"my-workflow": DontMutateEventWorkflow}, env=example_env())


def test_unique_ids_let_the_same_user_start_many_instances() -> None:
    # GIVEN the same user sends two requests
    env = _env()
    instances_db = InMemoryKV(initial={})
    request = SignupRequest("alice", {"user": "alice"})
    # WHEN the good handler starts an instance for each
    first = start_for_user(request, env.workflow("my-workflow"), instances_db)
    second = start_for_user(request, env.workflow("my-workflow"), instances_db)
    env.run_until_idle()
    # THEN two distinct instances exist, both recorded for the user, and both ran
    assert first["id"] != second["id"]
    assert all(answer["id"].startswith("alice-") for answer in (first, second))
    assert instances_of(env, "my-workflow") == sorted([first["id"], second["id"]])
    assert instances_db.get(first["id"]) == instances_db.get(second["id"]) == "alice"
    assert first["details"].status == "queued"
    for answer in (first, second):
        assert env.get("my-workflow", answer["id"]).status().status == "complete"


def test_a_redelivered_request_with_the_same_transaction_id_does_not_start_a_second_one() -> None:
    # GIVEN a request carrying a transaction id already started once
    env = _env()
    instances_db = InMemoryKV(initial={})
    request = SignupRequest("alice", {"user": "alice"})
    start_for_user(request, env.workflow("my-workflow"), instances_db, transaction_id="tx-42")
    # WHEN the same request comes again (a retry of the caller)
    with pytest.raises(InstanceAlreadyExists) as caught:
        start_for_user(request, env.workflow("my-workflow"), instances_db, transaction_id="tx-42")
    # THEN the duplicate is refused and one instance exists
    assert caught.value.instance_id == "tx-42"
    assert instances_of(env, "my-workflow") == ["tx-42"]


def test_bad_user_id_as_instance_id_fails_the_users_second_request() -> None:
    # GIVEN the user's first instance was started under the user id, and ran
    env = _env()
    workflow = env.workflow("my-workflow")
    first = bad_start_for_user(SignupRequest("alice", {"user": "alice"}), workflow)
    env.run_until_idle()
    # WHEN the same user starts another one (other params)
    with pytest.raises(InstanceAlreadyExists) as caught:
        bad_start_for_user(SignupRequest("alice", {"user": "bob"}), workflow)
    # THEN it is refused with a message naming the id and the rule; the first is untouched
    assert first["id"] == "alice"
    assert caught.value.instance_id == "alice"
    assert "'alice'" in str(caught.value) and "unique" in str(caught.value)
    assert instances_of(env, "my-workflow") == ["alice"]
    status = env.get("my-workflow", "alice").status()
    assert status.status == "complete"
    assert status.output == {"greeting": "hello Alice"}
