"""An instance that holds a slot and also has a stale place in its own line (a create that was
retried later: its place in line is written before the create finds the id taken) hands the
slot over to the next one in line, never to itself: on DynamoDB a transaction naming one item
twice is refused outright, so handing the slot to itself failed the release as an AWS error,
and the runner gave its work back again and again. Found by the simulation (make chaos)."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import InstanceAlreadyExists
from lambda_workflows.testing import WorkflowTestEnv

from .test_costs import count_calls


class Napper(WorkflowEntrypoint):
    concurrency = 1

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("before", lambda: "ok")
        await step.sleep("nap", "1 hour")  # stops running: its slot is released here
        return await step.do("after", lambda: "done")


def test_a_slot_is_never_handed_to_its_own_holder_through_a_stale_place_in_line() -> None:
    env = WorkflowTestEnv({"napper": Napper}, backend="aws")
    calls = count_calls(env)
    try:
        # GIVEN an instance created twice (a client's retry a second later): the retry put a
        # second place of the instance in line before it found the id taken
        env.service.create("napper", "a", {})
        env.clock.advance(1.0)
        with pytest.raises(InstanceAlreadyExists):
            env.service.create("napper", "a", {})
        assert len(env.store.slots.waiting("napper", 0, 10)) == 2

        # WHEN it runs, takes the slot, and releases it at its sleep with its stale place
        # first in line
        env.run_until_idle()

        # THEN the release met no AWS error (the runner never gave its work back for later),
        # the instance finished, and the slot is free with nobody left in line
        assert calls["sqs.ChangeMessageVisibility"] == 0
        assert env.get("napper", "a").status().output == "done"
        assert env.store.slots.holders("napper", [0]) == []
        assert env.store.slots.waiting("napper", 0, 10) == []
    finally:
        env.close()
