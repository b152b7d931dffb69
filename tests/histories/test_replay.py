"""The recorded histories replay clean against handler/lambda_workflows/examples; a changed class
diverges.

The histories were recorded by record.py (the engine running the examples in the test kit).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows import WorkflowEvent, WorkflowStep
from lambda_workflows.engine.instances.history import load
from lambda_workflows.examples.showcase import SubscriptionWorkflow
from lambda_workflows.testing import Replayer, StepCall

from .record import HERE, RECORDED, WORKFLOWS, record

HISTORIES = sorted(HERE.glob("*.json"))


def test_every_recorded_instance_has_a_history_here() -> None:
    assert [p.name for p in HISTORIES] == sorted(f"{w}--{i}.json" for w, i, _, _ in RECORDED)


def test_the_histories_are_what_the_engine_records_for_the_examples(tmp_path: Path) -> None:
    # Results may differ from run to run (a step may pick at random); the calls may not.
    def calls(path: Path) -> list[tuple[Any, ...]]:
        shown = json.loads(path.read_text())
        entries = [(e["key"], e["kind"], e["position"]) for e in shown["entries"]]
        return [shown["workflow"], shown["id"], shown["status"], *entries]

    for fresh in record(tmp_path):
        assert calls(fresh) == calls(HERE / fresh.name), fresh.name


def test_the_recorded_histories_replay_clean_against_the_examples() -> None:
    results = Replayer(WORKFLOWS).replay(HERE, raise_on_divergence=True)
    assert isinstance(results, list) and len(results) == len(HISTORIES)
    assert all(r.compatible for r in results), [r.message for r in results]


class ChargeAfterCoolDown(SubscriptionWorkflow):
    """The subscription with its first two steps swapped."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("cool down", "3 hours")
        await step.do(f"charge {event.payload['customer_id']}", lambda: None)


class RenamedApproval(SubscriptionWorkflow):
    """The subscription with its event wait renamed."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do(f"charge {event.payload['customer_id']}", lambda: None)
        await step.sleep("cool down", "3 hours")
        await step.wait_for_event("manager approval", type="approved", timeout="1 day")


@pytest.mark.parametrize("id", ["approved", "awaiting-approval"])
def test_reordered_steps_report_the_first_moved_call(id: str) -> None:
    history = load(HERE / f"subscription--{id}.json")
    divergence = Replayer({"subscription": ChargeAfterCoolDown}).replay(history).divergence
    assert divergence is not None and divergence.position == 1
    assert divergence.recorded == StepCall(f"charge {history.params['customer_id']}", "do")
    assert divergence.replayed == StepCall("cool down", "sleep")
    assert "reordered" in divergence.hint


def test_a_renamed_step_reports_its_position_and_both_names() -> None:
    results = Replayer({**WORKFLOWS, "subscription": RenamedApproval}).replay(HERE)
    assert isinstance(results, list)
    by_file = {Path(r.source or "").name: r for r in results if r.workflow == "subscription"}
    for name in ("subscription--approved.json", "subscription--awaiting-approval.json"):
        divergence = by_file[name].divergence
        assert divergence is not None and divergence.position == 3
        assert divergence.recorded == StepCall("approval", "wait_for_event")
        assert divergence.replayed == StepCall("manager approval", "wait_for_event")
        assert "renamed" in divergence.hint
