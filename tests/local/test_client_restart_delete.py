"""restart(from_step=...), step_output() and delete() / delete_batch() behave the same in the
client's two modes: direct (the engine's instance service) and HTTP (`lambda-workflows dev`'s
API)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")

from lambda_workflows import InstanceNotFound, InvalidInput, StepNotFound
from lambda_workflows.engine.instances.recorded_steps import StepOutput
from lambda_workflows.local.runtime import LocalRuntime
from tests.functional.workflows_under_test import Lifecycle

from .devserver import serving
from .test_client_modes import MODES, Dev, Mode


@pytest.fixture(scope="module")
def dev() -> Iterator[Dev]:
    runtime = LocalRuntime({"lifecycle": Lifecycle}, out=lambda line: None)
    with serving(runtime, worker=False) as running:
        yield Dev(running.runtime, running.server)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest, dev: Dev) -> Mode:
    return Mode(request.param, dev)


def completed(mode: Mode, text: str) -> str:
    """An instance of the lifecycle workflow, run to completion; its id."""
    instance = mode.workflow().create(id=mode.id(text), params={"amount": 5})
    mode.run_until_idle()
    instance.send_event(type="approved", payload={"user": "ana"})
    mode.run_until_idle()
    assert instance.status().status == "complete"
    return instance.id


def test_restart_from_a_step_keeps_the_steps_before_it_in_both_modes(mode: Mode) -> None:
    instance = mode.workflow().get(completed(mode, "restart-1"))
    before = instance.status().steps

    instance.restart(from_step={"name": "approval", "type": "waitForEvent"})
    mode.run_until_idle()

    # the charge and the sleep were kept as recorded; the wait waits again
    status = instance.status()
    assert status.status == "waiting"
    assert [(s.name, s.start, str(s.status)) for s in status.steps] == [
        (before[0].name, before[0].start, "complete"),
        (before[1].name, before[1].start, "complete"),
        ("approval", status.steps[2].start, "waiting"),
    ]
    with pytest.raises(InvalidInput, match=r"no step 'nope'.*recorded steps: 'charge' \(do\)"):
        instance.restart(from_step={"name": "nope"})
    with pytest.raises(InvalidInput, match="count"):
        instance.restart(from_step={"name": "charge", "count": 0})
    assert instance.status().status == "waiting"


def test_step_output_is_the_same_in_both_modes(mode: Mode) -> None:
    instance = mode.workflow().get(completed(mode, "output-1"))

    charge = instance.step_output("charge")
    approval = instance.step_output("approval", count=1)

    assert isinstance(charge, StepOutput)
    assert charge.to_dict() == {
        "name": "charge",
        "count": 1,
        "type": "do",
        "status": "complete",
        "output": {"charged": 5},
    }
    assert (approval.type, approval["output"]) == ("waitForEvent", {"user": "ana"})
    with pytest.raises(StepNotFound, match="recorded steps: 'charge' \\(do\\), 'cool down'"):
        instance.step_output("charge", count=2)
    with pytest.raises(InvalidInput, match="whole number"):
        instance.step_output("charge", count=0)


def test_delete_and_delete_batch_are_the_same_in_both_modes(mode: Mode) -> None:
    orders = mode.workflow()
    one = orders.get(completed(mode, "delete-1"))
    for text in ("delete-2", "delete-3"):
        orders.create(id=mode.id(text))
    mode.run_until_idle()

    one.delete()
    with pytest.raises(InstanceNotFound):
        orders.get(one.id)
    with pytest.raises(InstanceNotFound, match=one.id):
        one.delete()

    missing = mode.id("never")
    result = orders.delete_batch([mode.id("delete-2"), missing, mode.id("delete-3")])

    assert result["deleted"] == [{"id": mode.id("delete-2")}, {"id": mode.id("delete-3")}]
    assert [(e["index"], e["id"], e["code"]) for e in result["errors"]] == [
        (1, missing, "not_found")
    ]
    with pytest.raises(InvalidInput, match="at most 100"):
        orders.delete_batch([f"x{n}" for n in range(101)])
