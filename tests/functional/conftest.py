"""Functional tests: the real adapters and handlers on moto (in-process)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

import pytest

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.testing import WorkflowTestEnv

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "lambda-workflows")


@pytest.fixture
def aws_env() -> Iterator[object]:
    """Build WorkflowTestEnvs on the aws backend; all are closed after the test."""
    made: list[WorkflowTestEnv] = []

    def build(
        workflows: Mapping[str, type[WorkflowEntrypoint]], **kwargs: object
    ) -> WorkflowTestEnv:
        env = WorkflowTestEnv(workflows, backend="aws", **kwargs)  # type: ignore[arg-type]
        made.append(env)
        return env

    yield build
    for env in made:
        env.close()
