"""The engine wired to AWS: stores, queue, wake-ups, service and runner.

:func:`build_runtime` wires one from explicit settings (the local runtime and the test kit
build theirs so, and hand it to the entrypoints' ``make_handler``); :func:`get_runtime` is the
one each Lambda process builds from its environment, lazily, on its first request (the
module-level ``handler`` of every entrypoint, and the Python client without a service).

The instance store, the work queue and the wake-ups are built with the runtime; the slot store
and the schedule store (ports of their own, on the same table) on first use, and handed to the
service, the runner and the sweep.

The instance API (``service``) and the runner are built on first use, each importing its half
of the engine then: a handler's cold start loads only what its requests use (the runner never
loads the instance API, the API, the trigger and the sweep never load replay).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from lambda_workflows.engine.clock import Clock, SystemClock
from lambda_workflows.engine.entrypoint import WorkflowEntrypoint
from lambda_workflows.engine.links import LinkSigner
from lambda_workflows.registry import load_workflows

from .dynamodb import DynamoStore
from .journal_writes import JOURNAL_WRITERS
from .runner_invoke import CLIENT_CONFIG, RunnerInvokes
from .scheduler import SchedulerWakeUps
from .settings import AwsSettings
from .sqs import SqsWorkQueue

if TYPE_CHECKING:
    from lambda_workflows.engine.instances.advance import Runner, RunnerSettings, StatusListener
    from lambda_workflows.engine.instances.clients import WorkflowClient
    from lambda_workflows.engine.instances.ports import ScheduleStore, SlotStore
    from lambda_workflows.engine.instances.service import InstanceService

    LAMBDA_RUNNER: RunnerSettings


def __getattr__(name: str) -> Any:
    # LAMBDA_RUNNER is a RunnerSettings, which lives with the runner: made on first use, so
    # that importing this module does not load the replay engine.
    if name == "LAMBDA_RUNNER":
        return lambda_runner()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def lambda_runner() -> RunnerSettings:
    """How the deployed RunnerFunction paces itself (``LAMBDA_RUNNER``)."""
    from lambda_workflows.engine.instances.advance import RunnerSettings

    return RunnerSettings(
        lease_seconds=960.0,  # the runner's 900 s timeout + a minute
        inline_wait=2.0,  # retry delays up to 2 s are cheaper to sleep than to reschedule
        margin_seconds=20.0,
        signal_interval=2.0,  # look for pause/terminate at most every 2 s: no read per step
    )


@dataclass(frozen=True)
class AwsRuntime:
    """Everything a Lambda handler needs: the adapters, and the instance API (``service``) and
    the runner, each built on first use."""

    workflows: Mapping[str, type[WorkflowEntrypoint]]
    settings: AwsSettings
    store: DynamoStore
    queue: SqsWorkQueue
    wakeups: SchedulerWakeUps
    clock: Clock
    runner_settings: RunnerSettings | None = None  # None: lambda_runner()
    env_values: Mapping[str, Any] = field(default_factory=dict)
    on_status: StatusListener | None = None
    # waits between the reads of a subscription's long poll (the dev server's lets other
    # requests in meanwhile; a test's moves no real time)
    poll_pause: Callable[[float], None] = time.sleep
    links: LinkSigner | None = None  # approval links (None: the stack has no link key)

    @functools.cached_property
    def slot_store(self) -> SlotStore:
        """The concurrency slots of limited workflows, on the instance table."""
        from .slots import DynamoSlots

        return DynamoSlots(self.store.client, self.settings.table_name)

    @functools.cached_property
    def schedule_store(self) -> ScheduleStore:
        """The recurring schedules' firing ledger, on the instance table (the sweep's)."""
        from .firings import DynamoFiringLedger

        return DynamoFiringLedger(self.store.client, self.settings.table_name)

    @functools.cached_property
    def service(self) -> InstanceService:
        """The instance API: create, get, list, control, send events."""
        from lambda_workflows.engine.instances.service import InstanceService

        return InstanceService(
            self.workflows,
            self.store,
            self.queue,
            self.wakeups,
            self.clock,
            retention_seconds=self.settings.retention_days * 86_400,
            poll_pause=self.poll_pause,
            slot_store=self.slot_store,
        )

    @functools.cached_property
    def runner(self) -> Runner:
        """The runner: advances an instance named by a work message."""
        from lambda_workflows.engine.entrypoint import Env
        from lambda_workflows.engine.instances.advance import Runner

        pacing = self.runner_settings or lambda_runner()
        values = dict(self.env_values)
        runner = Runner(
            self.workflows,
            self.store,
            self.queue,
            self.wakeups,
            self.clock,
            replace(pacing, retention_seconds=self.settings.retention_days * 86_400),
            env=lambda: Env(values, self._workflow_client),
            on_status=self.on_status,
            slot_store=self.slot_store,
        )
        runner.links = self.links
        return runner

    def learn_runner_arn(self, arn: str) -> None:
        """Target the runner ``arn`` from now on, with wake-ups and direct work, unless known
        already (the RunnerFunction learns its own ARN from its invocation context: its
        environment cannot name the function it belongs to)."""
        if self.wakeups.runner_arn is None:
            self.wakeups.runner_arn = arn
        if self.queue.direct is not None and self.queue.direct.runner_arn is None:
            self.queue.direct.runner_arn = arn

    def use_links(self, links: LinkSigner) -> None:
        """Mint and check approval links with ``links`` from now on (``lambda-workflows dev``
        sets its own address once it listens)."""
        object.__setattr__(self, "links", links)  # frozen: the one setting moved after start
        if "runner" in self.__dict__:
            self.runner.links = links

    def _workflow_client(self, name: str) -> WorkflowClient:
        """What ``self.env.workflow(name)`` gives a workflow (few do: imported then)."""
        from lambda_workflows.engine.instances.clients import WorkflowClient

        return WorkflowClient(name, self.service)


def build_runtime(
    settings: AwsSettings,
    workflows: Mapping[str, type[WorkflowEntrypoint]],
    *,
    session: Any | None = None,
    clock: Clock | None = None,
    runner_settings: RunnerSettings | None = None,
    sqs_max_delay: float = 900.0,
    env_values: Mapping[str, Any] | None = None,
    on_status: StatusListener | None = None,
    parallel_writes: bool = True,
) -> AwsRuntime:
    """Wire the engine to the stack's resources.

    Args:
        settings: where the resources are.
        workflows: the registry.
        session: a boto3 Session (default: a new one).
        clock: the time source (default: the system clock).
        runner_settings: how the runner paces itself (default: ``LAMBDA_RUNNER``).
        sqs_max_delay: wake-ups up to this many seconds away use SQS DelaySeconds.
        env_values: values readable as ``self.env.NAME`` in workflows.
        on_status: called with the instance record after each status change the runner makes.
        parallel_writes: steps finishing together record their results concurrently (see
            :mod:`lambda_workflows.aws.journal_writes`); False records one write at a time, in
            order.
    """
    session = session or boto3.session.Session()
    clock = clock or SystemClock()
    store = _store(session, settings, clock, parallel_writes)
    runner_arn = settings.runner_function_arn or None
    direct = RunnerInvokes(lambda: session.client("lambda", config=CLIENT_CONFIG), runner_arn)
    queue = SqsWorkQueue(session.client("sqs"), settings.work_queue_url, direct)
    wakeups = SchedulerWakeUps(
        session.client("scheduler"),
        settings.schedule_group,
        queue,
        settings.work_queue_arn,
        settings.scheduler_role_arn,
        clock,
        sqs_max_delay,
        runner_arn,
    )
    return AwsRuntime(
        workflows,
        settings,
        store,
        queue,
        wakeups,
        clock,
        runner_settings,
        dict(env_values or {}),
        on_status,
        links=LinkSigner.from_setting(settings.link_key, settings.link_url)
        if settings.link_key
        else None,
    )


def _store(session: Any, settings: AwsSettings, clock: Clock, parallel: bool) -> DynamoStore:
    # a connection per journal write in flight, and a few for the runner's other calls
    pool = Config(max_pool_connections=JOURNAL_WRITERS + 4)
    client = session.client("dynamodb", config=pool)
    return DynamoStore(
        client,
        settings.table_name,
        clock,
        parallel_writes=parallel,
        index_shards=settings.index_shards,
    )


@functools.cache
def get_runtime() -> AwsRuntime:
    """The runtime of this process, built from the environment on first use: the resources
    (:class:`AwsSettings`), the workflows (``WORKFLOWS``) and the ``self.env`` values
    (``WORKFLOW_ENV_<NAME>`` variables are readable as ``self.env.<NAME>``)."""
    values = {
        key.removeprefix("WORKFLOW_ENV_"): value
        for key, value in os.environ.items()
        if key.startswith("WORKFLOW_ENV_")
    }
    return build_runtime(AwsSettings.from_env(), load_workflows(), env_values=values)
