"""The ``make_env`` fixture builds on the backend the module names (see ``conftest.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")


class Hello(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("hello", lambda: "hello")


def test_make_env_builds_on_the_backend_this_run_is_on(make_env: EnvFactory, backend: str) -> None:
    # GIVEN a module marked for both backends WHEN a test builds an env
    env = make_env({"h": Hello})
    inst = env.create("h", id="h")
    env.run_until_idle()
    # THEN the env is on this run's backend, and runs workflows there
    assert env.backend == backend
    assert inst.status().output == "hello"
