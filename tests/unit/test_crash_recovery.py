"""The test kit's crash: an invocation killed by ``Crash`` leaves its lease to its own work
message, which is delivered again and resumes the instance from its journal at once, on every
backend; and its instance handle is the client's."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.client import WorkflowInstance
from lambda_workflows.engine.model import EntryKind, InstanceRef
from lambda_workflows.testing import Crash, TestInstance

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")


class DiesOnce(WorkflowEntrypoint):
    """Its second step kills the invocation the first time it runs."""

    died = False

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        first = await step.do("first", lambda: 1)

        def second() -> int:
            if not DiesOnce.died:
                DiesOnce.died = True
                raise Crash("the invocation dies")
            return 2

        return first + await step.do("second", second)


def test_a_dead_invocation_keeps_its_lease_and_its_message_takes_it_back(
    make_env: EnvFactory,
) -> None:
    DiesOnce.died = False
    env = make_env({"dies": DiesOnce})
    inst = env.create("dies", id="d-1")
    ref = InstanceRef("dies", "d-1")
    # WHEN the first invocation dies inside the second step
    env.run_until_idle()
    # THEN its message came back at once and took back the lease it held: no lease expiry was
    # waited for, the first step did not run again, and the instance completed
    assert env.crashes == 1 and env.invocations == 2
    assert env.clock.time() == env.store.get(ref).created_at
    assert inst.status().output == 3
    assert [e.name for e in inst.journal() if e.kind is EntryKind.STEP] == ["first", "second"]


def test_until_it_comes_back_the_lease_stays_with_the_dead_invocation(
    make_env: EnvFactory,
) -> None:
    DiesOnce.died = False
    env = make_env({"dies": DiesOnce})
    env.create("dies", id="d-2")
    ref = InstanceRef("dies", "d-2")
    env.run_until_idle()
    DiesOnce.died = False
    env.service.restart(ref)
    # WHEN one invocation runs and dies
    env.run_once("dies", "d-2")
    # THEN the lease is still held (by the dead invocation's message), not dropped
    assert env.crashes == 2
    held = env.store.get(ref)
    assert held.lease_owner is not None and held.leased(env.clock.time())
    env.run_until_idle()
    assert env.store.get(ref).status == "complete"


def test_the_test_kits_instance_handle_is_the_clients(make_env: EnvFactory) -> None:
    env = make_env({"dies": DiesOnce})
    inst = env.create("dies", id="h-1")
    assert isinstance(inst, WorkflowInstance) and isinstance(inst, TestInstance)
    assert isinstance(env.get("dies", "h-1"), TestInstance)
    assert repr(inst) == "TestInstance(dies/h-1)"
