"""The core's behaviour tests run twice: on the in-memory store and on the AWS adapters
(DynamoDB, SQS, EventBridge Scheduler on moto, through the real RunnerFunction handler).

The modules listed in BEHAVIOUR_MODULES get a ``backend`` parameter; with ``aws``, every
``WorkflowTestEnv`` the test builds defaults to ``backend="aws"`` and is closed afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from workflows.testing import WorkflowTestEnv

BEHAVIOUR_MODULES = {
    "test_replay",
    "test_retries",
    "test_sleep_and_events",
    "test_control",
    "test_rules",
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.module.__name__.rsplit(".", 1)[-1] in BEHAVIOUR_MODULES:
        metafunc.parametrize("backend", ["memory", "aws"], indirect=True)


@pytest.fixture(autouse=True)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Which store the test's WorkflowTestEnvs use."""
    name = getattr(request, "param", "memory")
    if name == "memory":
        yield name
        return
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    made: list[WorkflowTestEnv] = []
    original = WorkflowTestEnv.__init__

    def init(self: WorkflowTestEnv, workflows: Any, **kwargs: Any) -> None:
        kwargs.setdefault("backend", "aws")
        original(self, workflows, **kwargs)
        made.append(self)

    monkeypatch.setattr(WorkflowTestEnv, "__init__", init)
    yield name
    for env in made:
        env.close()
