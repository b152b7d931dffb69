"""The type of the ``make_env`` fixture (see ``tests/unit/conftest.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.engine.instances.advance import RunnerSettings
from lambda_workflows.testing import WorkflowTestEnv

BACKENDS = ("memory", "aws")


class EnvFactory(Protocol):
    """Builds a :class:`WorkflowTestEnv` on the backend the test runs on."""

    def __call__(
        self,
        workflows: Mapping[str, type[WorkflowEntrypoint]],
        *,
        env: Mapping[str, Any] | None = None,
        start: datetime | float | None = None,
        settings: RunnerSettings | None = None,
    ) -> WorkflowTestEnv: ...
