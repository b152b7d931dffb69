"""Sensitive outputs: ``{"sensitive": "output"}`` hides a step's output outside ``run()``.

``run()``, later steps and the workflow's output get the real value, and it is journaled as
usual (a replay returns it); the status, the step timeline and anything that prints a journal
entry show ``"[REDACTED]"``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lambda_workflows import InvalidStepError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine import codec
from lambda_workflows.engine.config import parse_config

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

SECRET = "tok-3f9a-very-secret"
seen_configs: list[dict[str, Any]] = []


class IssueToken(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def issue(ctx: Any) -> dict[str, str]:
            seen_configs.append(ctx.config)
            return {"token": SECRET}

        token = await step.do("issue token", {"sensitive": "output"}, issue)
        await step.sleep("let it propagate", "1 minute")  # the rest runs on a replay
        used = await step.do("call with token", lambda: f"called with {token['token']}")
        return {"token": token["token"], "used": used}


def test_a_sensitive_output_is_redacted_in_status_but_real_in_run(make_env: EnvFactory) -> None:
    # GIVEN a step marked {"sensitive": "output"} whose value a later step uses after a sleep
    seen_configs.clear()
    env = make_env({"t": IssueToken})
    inst = env.create("t", id="t")
    # WHEN it runs to the end (the later step runs on a replay, from the journal)
    env.run_until_idle()
    status = inst.status()
    # THEN run(), the later step and the workflow's output had the real value
    assert status.status == "complete"
    assert status.output == {"token": SECRET, "used": f"called with {SECRET}"}
    assert status.steps[2].output == f"called with {SECRET}"
    # AND the timeline shows "[REDACTED]" for the sensitive step only
    assert [row.output for row in status.steps[:2]] == ["[REDACTED]", None]
    assert status.steps[0].status == "complete"
    assert status.to_dict()["steps"][0]["output"] == "[REDACTED]"
    # AND the callback saw the flag in ctx.config
    assert seen_configs[0]["sensitive"] == "output"


def test_a_sensitive_output_is_journaled_with_its_flag(make_env: EnvFactory) -> None:
    env = make_env({"t": IssueToken})
    inst = env.create("t", id="j")
    env.run_until_idle()
    entries = {entry.name: entry for entry in inst.journal()}
    issued = entries["issue token"]
    # the store kept the real value and the flag (the aws backend read both back from DynamoDB)
    assert issued.sensitive is True
    assert codec.decode(issued.result) == {"token": SECRET}
    assert entries["call with token"].sensitive is False
    # and printing the entry (a log line, a debugger) shows no secret
    assert SECRET not in repr(issued)
    assert "result='[REDACTED]'" in repr(issued)


def test_nothing_but_the_workflows_output_carries_the_secret(make_env: EnvFactory) -> None:
    env = make_env({"t": IssueToken})
    inst = env.create("t", id="o")
    env.run_until_idle()
    shown = inst.status().to_dict()
    output = shown.pop("output")
    assert SECRET in json.dumps(output)
    assert SECRET not in json.dumps(shown["steps"][0])


@pytest.mark.parametrize("value", [True, "input", "OUTPUT", ["output"], None])
def test_sensitive_takes_only_output(value: Any) -> None:
    with pytest.raises(InvalidStepError) as info:
        parse_config({"sensitive": value})
    message = str(info.value)
    assert "step config 'sensitive' must be 'output'" in message
    assert repr(value) in message


def test_sensitive_is_off_unless_asked() -> None:
    assert parse_config({}).sensitive is False
    assert "sensitive" not in parse_config({}).to_dict()
    assert parse_config({"sensitive": "output"}).sensitive is True
