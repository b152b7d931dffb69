"""Runner logs are JSON lines that carry the workflow, instance id, step and attempt; EMF
metrics count steps, retries, suspensions and finished instances; importing the library never
changes the logging environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


class FlakyOnce(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def fetch(ctx: Any) -> str:
            if ctx.attempt == 1:
                raise ConnectionError("upstream down")
            return "ok"

        self.logger.info("fetching")
        return await step.do("fetch", {"retries": {"limit": 2, "delay": "1 minute"}}, fetch)


def json_lines(text: str) -> list[dict[str, Any]]:
    lines = []
    for line in text.splitlines():
        if line.startswith("{"):
            lines.append(json.loads(line))
    return lines


def test_runner_log_lines_carry_workflow_instance_step_and_attempt(
    capsys: pytest.CaptureFixture[str], aws_env: Any
) -> None:
    env = aws_env({"flaky": FlakyOnce})
    inst = env.create("flaky", id="f-1")
    env.run_until_idle()
    assert inst.status().status == "complete"
    records = json_lines(capsys.readouterr().out)
    failed = [r for r in records if "attempt 1 failed" in str(r.get("message"))]
    assert failed, records
    line = failed[0]
    assert line["workflow"] == "flaky"
    assert line["instance_id"] == "f-1"
    assert line["step"] == "fetch"
    assert line["attempt"] == 1
    workflow_lines = [r for r in records if r.get("message") == "fetching"]
    assert len(workflow_lines) == 1  # self.logger: not repeated when run() is replayed
    assert workflow_lines[0]["instance_id"] == "f-1"
    advanced = [r for r in records if r.get("message") == "advanced instance"]
    assert [r["status"] for r in advanced] == ["waiting", "complete"]
    assert all(r["workflow"] == "flaky" and r["instance_id"] == "f-1" for r in advanced)
    metrics = [r for r in records if "_aws" in r]
    names = {
        m["Name"] for r in metrics for d in r["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]
    }
    assert {"StepsRun", "StepRetries", "Suspensions", "InstancesComplete"} <= names


IMPORT_EVERYTHING = """
import importlib, os, pkgutil
before = dict(os.environ)
import lambda_workflows
for package in (lambda_workflows,):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
print(sorted(k for k in {*before, *os.environ} if before.get(k) != os.environ.get(k)))
"""


def test_importing_any_module_of_the_library_leaves_the_environment_alone() -> None:
    # An import that set POWERTOOLS_LOG_LEVEL=WARNING (the demo's, for its screen) silenced the
    # test above whenever the whole suite was collected: levels are read from the environment.
    # GIVEN an environment without Powertools settings
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERTOOLS_")}
    # WHEN every module of the library and the examples is imported
    imported = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    # THEN no environment variable changed
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == "[]"
