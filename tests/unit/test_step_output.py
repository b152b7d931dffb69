"""instance.step_output(name, count=1): one step's whole recorded output."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest

from lambda_workflows import (
    InvalidInput,
    StepNotFound,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
)

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

LARGE = base64.b64encode(os.urandom(600_000)).decode()  # ~800 KB: chunked on DynamoDB


class Outputs(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for n in range(2):
            await step.do("page", lambda n=n: {"page": n})
        await step.do("large", lambda: {"blob": LARGE})
        await step.do("token", {"sensitive": "output"}, lambda: "s3cr3t")
        await step.sleep("nap", "1 minute")
        got = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return got.payload


def test_step_output_returns_each_steps_whole_recorded_output(make_env: EnvFactory) -> None:
    env = make_env({"o": Outputs})
    inst = env.create("o", id="o")
    env.run_until_idle()
    inst.send_event(type="approved", payload={"by": "ana"})
    env.run_until_idle()
    assert inst.status().status == "complete"

    assert inst.step_output("page").to_dict() == {
        "name": "page",
        "count": 1,
        "type": "do",
        "status": "complete",
        "output": {"page": 0},
    }
    assert inst.step_output("page", count=2)["output"] == {"page": 1}
    assert inst.step_output("large").output == {"blob": LARGE}  # all of it
    assert inst.step_output("token").output == "[REDACTED]"
    assert inst.step_output("nap").to_dict() == {
        "name": "nap",
        "count": 1,
        "type": "sleep",
        "status": "complete",
        "output": None,
    }
    approval = inst.step_output("approval")
    assert (approval.type, approval.output) == ("waitForEvent", {"by": "ana"})


class Fails(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def broken() -> None:
            raise ValueError("no")

        await step.do("ok", lambda: 1)
        await step.do("broken", {"retries": {"limit": 0}}, broken)


def test_a_failed_step_has_no_output(make_env: EnvFactory) -> None:
    env = make_env({"f": Fails})
    inst = env.create("f", id="f")
    env.run_until_idle()
    broken = inst.step_output("broken")
    assert (broken.status, broken.output) == ("errored", None)


def test_an_unknown_step_is_step_not_found_naming_the_recorded_steps(
    make_env: EnvFactory,
) -> None:
    env = make_env({"f": Fails})
    inst = env.create("f", id="f")
    with pytest.raises(StepNotFound, match="it has recorded no step yet"):
        inst.step_output("ok")
    env.run_until_idle()
    with pytest.raises(StepNotFound, match=r"'missing'.*recorded steps: 'ok' \(do\)"):
        inst.step_output("missing")
    with pytest.raises(StepNotFound, match=r"occurrence 2"):
        inst.step_output("ok", count=2)
    with pytest.raises(InvalidInput, match="whole number"):
        inst.step_output("ok", count=0)
