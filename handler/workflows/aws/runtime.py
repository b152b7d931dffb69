"""The engine wired to AWS: store, queue, wake-ups, service and runner, built once per Lambda
container from the environment (lazily, not at import time), or explicitly for tests and the
local runtime.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import boto3

from workflows.engine.clock import Clock, SystemClock
from workflows.engine.entrypoint import Env, WorkflowEntrypoint
from workflows.engine.runner import Runner, RunnerSettings, StatusListener
from workflows.engine.service import InstanceService

from .dynamodb import DynamoStore
from .scheduler import SchedulerWakeUps
from .settings import AwsSettings
from .sqs import SqsWorkQueue

LAMBDA_RUNNER = RunnerSettings(
    lease_seconds=960.0,  # the runner's 900 s timeout + a minute
    inline_wait=2.0,  # retry delays up to 2 s are cheaper to sleep than to reschedule
    margin_seconds=20.0,
    signal_interval=2.0,  # look for pause/terminate at most every 2 s: no read per step
)


@dataclass(frozen=True)
class AwsRuntime:
    """Everything a Lambda handler needs."""

    workflows: Mapping[str, type[WorkflowEntrypoint]]
    settings: AwsSettings
    store: DynamoStore
    queue: SqsWorkQueue
    wakeups: SchedulerWakeUps
    clock: Clock
    service: InstanceService
    runner: Runner


def build_runtime(
    settings: AwsSettings,
    workflows: Mapping[str, type[WorkflowEntrypoint]],
    *,
    session: Any | None = None,
    clock: Clock | None = None,
    runner_settings: RunnerSettings = LAMBDA_RUNNER,
    sqs_max_delay: float = 900.0,
    env_values: Mapping[str, Any] | None = None,
    on_status: StatusListener | None = None,
) -> AwsRuntime:
    """Wire the engine to the stack's resources.

    Args:
        settings: where the resources are.
        workflows: the registry.
        session: a boto3 Session (default: a new one).
        clock: the time source (default: the system clock).
        runner_settings: how the runner paces itself.
        sqs_max_delay: wake-ups up to this many seconds away use SQS DelaySeconds.
        env_values: values readable as ``self.env.NAME`` in workflows.
        on_status: called with the instance record after each status change the runner makes.
    """
    from workflows.client import Workflow

    session = session or boto3.session.Session()
    clock = clock or SystemClock()
    store = DynamoStore(session.client("dynamodb"), settings.table_name, clock)
    queue = SqsWorkQueue(session.client("sqs"), settings.work_queue_url)
    wakeups = SchedulerWakeUps(
        session.client("scheduler"),
        settings.schedule_group,
        queue,
        settings.work_queue_arn,
        settings.scheduler_role_arn,
        clock,
        sqs_max_delay,
    )
    service = InstanceService(
        workflows, store, queue, wakeups, clock, retention_seconds=settings.retention_days * 86_400
    )
    values = dict(env_values or {})
    runner = Runner(
        workflows,
        store,
        queue,
        wakeups,
        clock,
        replace(runner_settings, retention_seconds=settings.retention_days * 86_400),
        env=lambda: Env(values, lambda name: Workflow(name, service=service)),
        on_status=on_status,
    )
    return AwsRuntime(workflows, settings, store, queue, wakeups, clock, service, runner)


_RUNTIME: AwsRuntime | None = None


def get_runtime() -> AwsRuntime:
    """The runtime for this process, built from the environment on first use."""
    global _RUNTIME
    if _RUNTIME is None:
        from workflows.registry import default_env_values, load_workflows

        settings = AwsSettings.from_env()
        values: dict[str, Any] = default_env_values()
        # WORKFLOW_ENV_<NAME> variables are readable as self.env.<NAME> in workflows
        for key, value in os.environ.items():
            if key.startswith("WORKFLOW_ENV_"):
                values[key.removeprefix("WORKFLOW_ENV_")] = value
        _RUNTIME = build_runtime(settings, load_workflows(), env_values=values)
    return _RUNTIME


def set_runtime(runtime: AwsRuntime | None) -> None:
    """Use ``runtime`` in this process (tests, the local runtime); None rebuilds from env."""
    global _RUNTIME
    _RUNTIME = runtime
