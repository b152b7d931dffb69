"""Which backend a test runs on is written in its own module.

A module whose tests must hold on every store says so at its top::

    pytestmark = pytest.mark.backends("memory", "aws")

and its tests build their environments with the ``make_env`` fixture rather than
``WorkflowTestEnv(...)``. Each test that asks for ``make_env`` (or ``backend``) then runs once
per backend named: ``memory`` is the in-memory store, ``aws`` the real DynamoDB, SQS and
EventBridge Scheduler adapters on moto, through the real RunnerFunction handler. Environments
built by ``make_env`` are closed after the test. Asking for ``make_env`` in a module without
the marker is a collection error, so a new file has to choose; a test that builds
``WorkflowTestEnv(...)`` itself runs on the in-memory store.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.testing import WorkflowTestEnv

from .backends import BACKENDS, EnvFactory


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "backends(*names): run each test that uses make_env on these backends"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("backends")
    where = metafunc.definition.nodeid
    if marker is None or not marker.args:
        raise pytest.UsageError(
            f"{where} uses make_env but its module names no backend; add "
            '`pytestmark = pytest.mark.backends("memory", "aws")` (or one of them)'
        )
    unknown = [name for name in marker.args if name not in BACKENDS]
    if unknown:
        raise pytest.UsageError(f"{where}: unknown backend(s) {unknown}; use {list(BACKENDS)}")
    metafunc.parametrize("backend", marker.args, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The backend this run of the test is on (from the module's ``backends`` marker)."""
    name: str = request.param
    return name


@pytest.fixture
def make_env(backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[EnvFactory]:
    """Build WorkflowTestEnvs on this run's backend; all are closed after the test."""
    if backend == "aws" and "AWS_DEFAULT_REGION" not in os.environ:
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    made: list[WorkflowTestEnv] = []

    def build(workflows: Mapping[str, type[WorkflowEntrypoint]], **kwargs: Any) -> WorkflowTestEnv:
        env = WorkflowTestEnv(workflows, backend=backend, **kwargs)
        made.append(env)
        return env

    yield build
    for env in made:
        env.close()
