"""``describe``: a registered workflow's class, the first paragraph of its docstring, and how
many of its instances have each status (counted from one walk of the workflow's listing, bounded:
see lambda_workflows.engine.instances.census)."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import UnknownWorkflow, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.instances import census
from lambda_workflows.engine.model import InstanceStatus

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

EVERY_STATUS_BUT_UNKNOWN = {s.value for s in InstanceStatus} - {"unknown"}


class Approvals(WorkflowEntrypoint):
    """Waits for an approval,
    then finishes.

    Everything after the first paragraph is left out of the description.
    """

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        if event.payload.get("fail"):
            raise ValueError("asked to fail")
        if event.payload.get("wait"):
            await step.wait_for_event("approval", type="approved", timeout="1 day")
        return "done"


class Undocumented(Approvals):
    pass


def test_describe_names_the_class_and_the_first_paragraph_of_its_docstring(
    make_env: EnvFactory,
) -> None:
    env = make_env({"approvals": Approvals, "plain": Undocumented})

    described = env.service.describe("approvals")

    assert described.name == "approvals"
    assert described.class_name == "Approvals"
    assert described.module == __name__
    assert described.description == "Waits for an approval, then finishes."
    # a class without a docstring of its own has none (its base's is not borrowed)
    assert env.service.describe("plain").description is None


def test_describe_counts_instances_by_status_with_every_status_present(
    make_env: EnvFactory,
) -> None:
    # GIVEN instances in four statuses
    env = make_env({"approvals": Approvals, "other": Approvals})
    env.create_batch(
        "approvals",
        [{"id": "ok-1"}, {"id": "ok-2"}, {"id": "bad", "params": {"fail": True}}]
        + [{"id": f"wait-{i}", "params": {"wait": True}} for i in range(3)],
    )
    env.create("other", id="not-counted")
    env.run_until_idle()
    env.get("approvals", "wait-0").pause()
    env.create("approvals", id="fresh")

    # WHEN the workflow is described
    counts = env.service.describe("approvals").instances

    # THEN every status but unknown is counted, zeros included, and only this workflow's
    assert set(counts) == EVERY_STATUS_BUT_UNKNOWN
    assert {k: v for k, v in counts.items() if v} == {
        "complete": 2,
        "errored": 1,
        "waiting": 2,
        "paused": 1,
        "queued": 1,
    }


def test_describe_counts_every_instance_of_one_status_and_none_of_another_workflow(
    make_env: EnvFactory,
) -> None:
    env = make_env({"approvals": Approvals, "other": Approvals})
    env.create_batch("approvals", [{"id": f"q-{i}"} for i in range(5)])

    counts = env.service.describe("approvals").instances

    assert counts["queued"] == 5
    assert counts["complete"] == 0
    assert env.service.describe("other").instances["queued"] == 0


def test_describe_of_an_unknown_workflow_names_the_registered_ones(make_env: EnvFactory) -> None:
    env = make_env({"approvals": Approvals})

    with pytest.raises(UnknownWorkflow, match="registered: approvals"):
        env.service.describe("invoices")


@pytest.fixture
def census_of_4(monkeypatch: pytest.MonkeyPatch) -> int:
    """A census that reads at most 4 instances a walk (5,000 in production)."""
    monkeypatch.setattr(census, "CENSUS_LIMIT", 4)
    return 4


def test_a_census_past_its_limit_keeps_in_flight_counts_exact_and_says_which_are_lower_bounds(
    make_env: EnvFactory, census_of_4: int
) -> None:
    # GIVEN three instances waiting, then more finished ones than a census reads (newer)
    env = make_env({"approvals": Approvals})
    env.create_batch("approvals", [{"id": f"wait-{i}", "params": {"wait": True}} for i in range(3)])
    env.run_until_idle()
    env.clock.advance(1)
    env.create_batch("approvals", [{"id": f"ok-{i}"} for i in range(6)])
    env.run_until_idle()

    # WHEN the workflow is described
    described = env.service.describe("approvals")

    # THEN the walk of the whole workflow stopped after the 4 newest, all complete: the
    # finished counts are what it saw, named as lower bounds, in the statuses' order
    assert {k: v for k, v in described.instances.items() if v} == {"waiting": 3, "complete": 4}
    assert described.instances_at_least == ["errored", "terminated", "complete"]
    # and the older instances in flight were counted status by status, exactly
    assert sum(v["in_flight"] for v in described.versions) == 3
    assert described.to_dict()["instances_at_least"] == ["errored", "terminated", "complete"]


def test_more_instances_in_flight_than_a_census_reads_make_that_status_a_lower_bound(
    make_env: EnvFactory, census_of_4: int
) -> None:
    env = make_env({"approvals": Approvals})
    env.create_batch("approvals", [{"id": f"q-{i}"} for i in range(6)])

    described = env.service.describe("approvals")

    assert described.instances["queued"] == census_of_4
    assert described.instances_at_least == ["queued", "errored", "terminated", "complete"]
    assert sum(v["in_flight"] for v in described.versions) == census_of_4


def test_a_census_within_its_limit_is_exact_and_says_nothing_more(
    make_env: EnvFactory, census_of_4: int
) -> None:
    # GIVEN exactly as many instances as a census reads
    env = make_env({"approvals": Approvals})
    env.create_batch("approvals", [{"id": f"q-{i}"} for i in range(census_of_4)])

    described = env.service.describe("approvals")

    assert described.instances["queued"] == census_of_4
    assert described.instances_at_least == []
    assert "instances_at_least" not in described.to_dict()
