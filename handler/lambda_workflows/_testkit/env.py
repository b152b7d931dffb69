"""The test env: the real engine with a virtual clock, on an in-memory store or on moto.

See :mod:`lambda_workflows.testing` for how a test drives it and mocks steps and events.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from lambda_workflows._testkit.backends import AwsBackend, Backend, MemoryBackend, WakeUp
from lambda_workflows._testkit.clock import VirtualClock
from lambda_workflows._testkit.handles import TestInstance, TestWorkflow
from lambda_workflows._testkit.step_mocks import StepMocks
from lambda_workflows.engine.entrypoint import Env, WorkflowEntrypoint
from lambda_workflows.engine.errors import InstanceNotFound, SuspendReason
from lambda_workflows.engine.instances.advance import Runner, RunnerSettings
from lambda_workflows.engine.instances.approval_links import check_link, use_link
from lambda_workflows.engine.instances.batch_forms import BatchBody, batch_body
from lambda_workflows.engine.instances.clients import WorkflowInstance
from lambda_workflows.engine.instances.service import BatchResult, InstanceService
from lambda_workflows.engine.limits import check_id
from lambda_workflows.engine.links import LINK_PATH, LinkSigner, shown_claims
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.registry import check_schedules, check_versions


class WorkflowTestEnv:
    """The real engine with a virtual clock, on an in-memory store or on moto.

    Args:
        workflows: workflow name → ``WorkflowEntrypoint`` subclass.
        env: values readable as ``self.env.NAME`` in workflows.
        start: where the virtual clock starts (default 2025-01-01T00:00:00Z).
        settings: runner settings (lease length, in-process waits...).
        backend: ``"memory"`` (default: fast, no AWS) or ``"aws"``: the real DynamoDB, SQS and
            EventBridge Scheduler adapters and the real RunnerFunction handler on moto
            (needs the dev extra); schedules are fired by the env, as moto never fires them.
            Call :meth:`close` (or use the env as a context manager) when done.
    """

    __test__ = False

    def __init__(
        self,
        workflows: Mapping[str, type[WorkflowEntrypoint]],
        *,
        env: Mapping[str, Any] | None = None,
        start: datetime | float | None = None,
        settings: RunnerSettings | None = None,
        backend: str = "memory",
    ) -> None:
        if backend not in ("memory", "aws"):
            raise ValueError(f"unknown backend {backend!r}; use 'memory' or 'aws'")
        self.backend = backend
        # name → newest class, name@version → an older one still deployed; a test may change
        # it between runs (deploy a version beside another, remove one)
        self.workflows = check_schedules(check_versions(dict(workflows)))
        self.clock = VirtualClock(start)
        values = dict(env or {})
        self.aws: Any = None
        self._backend: Backend
        if backend == "aws":
            aws = AwsBackend(self.workflows, self.clock, settings, values)
            self.aws = aws.aws
            self._backend = aws
        else:
            memory = MemoryBackend(
                self.workflows, self.clock, settings, lambda: Env(values, self.workflow)
            )
            self.queue = memory.queue
            self.scheduler = memory.scheduler
            self._backend = memory
        self.store: Any = self._backend.store
        self.service: InstanceService = self._backend.service
        self.runner: Runner = self._backend.runner
        self._mocks = StepMocks()
        self.runner.interceptor = self._mocks

    @property
    def invocations(self) -> int:
        """Runner invocations so far (one per work message delivered)."""
        return self._backend.invocations

    @property
    def crashes(self) -> int:
        """Invocations a :class:`Crash` killed so far."""
        return self._backend.crashes

    def close(self) -> None:
        """Release the embedded AWS (aws backend); harmless otherwise."""
        self._backend.close()
        self.aws = None

    def __enter__(self) -> WorkflowTestEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the client side ------------------------------------------------------------------

    def create(self, workflow: str, id: str | None = None, params: Any = None) -> TestInstance:
        """Create an instance (same rules as the real create: a taken id is an error)."""
        record = self.service.create(workflow, id, params)
        self._send_mocked_events()
        return TestInstance(self, record.ref)

    def create_batch(
        self,
        workflow: str,
        items: BatchBody | None = None,
        *,
        count: int | None = None,
        params: Any = None,
    ) -> BatchResult:
        """Create up to 100 instances: a list of ``{id?, params?}`` items, or ``count=N``
        instances with generated ids, all with ``params`` (or the object forms
        ``{"count", "params"?}`` and ``{"instances"}`` as ``items``); existing ids are skipped
        and reported."""
        result = self.service.create_batch(workflow, batch_body(items, count, params))
        self._send_mocked_events()
        return result

    def open_link(self, url: str) -> dict[str, Any]:
        """What ``GET`` on an approval link (``wait_for_event(..., link=True)``'s ``url``)
        checks, without its page: ``{workflow, instance, wait, type}``. Writes nothing.

        Raises:
            LinkRefused: the link is invalid, used, expired or stale (``code``, ``status``).
        """
        claims = check_link(self.service, self._link_signer(), _link_token(url))
        return dict(shown_claims(claims))

    def use_link(self, url: str, payload: Any = None) -> dict[str, Any]:
        """What ``POST`` on an approval link does: send its event, once, with ``payload``.

        Raises:
            LinkRefused: as :meth:`open_link`, and ``link_used`` for a second use.
        """
        claims, _ = use_link(self.service, self._link_signer(), _link_token(url), payload)
        return dict(shown_claims(claims))

    def _link_signer(self) -> LinkSigner:
        if self.runner.links is None:  # every backend of the kit has one
            raise RuntimeError("this test env mints no approval links")
        return self.runner.links

    def get(self, workflow: str, id: str) -> TestInstance:
        """A handle on an existing instance."""
        record = self.service.get(InstanceRef(workflow, id))
        return TestInstance(self, record.ref)

    def workflow(self, name: str) -> TestWorkflow:
        """A client of one workflow (what ``self.env.workflow(name)`` returns in a workflow)."""
        self.service.check_workflow(name)
        return TestWorkflow(self, name)

    # --- driving --------------------------------------------------------------------------

    def pending_wake_ups(self) -> list[WakeUp]:
        """Scheduled wake-ups not yet fired, earliest first."""
        return self._backend.pending_wake_ups()

    def run_until_idle(self, max_invocations: int = 100_000) -> None:
        """Run everything runnable, skipping virtual time over sleeps and retry delays.

        Returns when every instance is finished, paused, or waiting for an event.

        The workflows' ``schedules`` fire first: each firing due since the last call starts
        its instance ``<name>-<UTC time>`` (on the aws backend, through the recurring
        schedules the sweep would deploy and the real TriggerFunction handler). Move the clock
        to make firings due (``env.clock.advance("3 hours")``); the time skipped here over
        sleeps fires none, or a schedule whose instances sleep would feed itself for ever.
        """
        self._backend.recurring.reconcile()  # the registry may have changed: a deploy
        self._backend.recurring.fire(self.clock.time())
        for _ in range(max_invocations):
            if not self.progress(skip_event_timeouts=False):
                return
        raise RuntimeError(
            f"run_until_idle gave up after {max_invocations:,} invocations; does a workflow "
            "loop forever (e.g. a sleep inside an unbounded loop)?"
        )

    def progress(self, *, skip_event_timeouts: bool = True) -> bool:
        """Move the env one step on: run one work message, or turn due wake-ups into work, or
        move the clock to the next wake-up (an event wait's timeout too, unless
        ``skip_event_timeouts`` is False). False when nothing is pending: there is no work and
        no wake-up."""
        self._send_mocked_events()  # to instances created meanwhile (by a workflow)
        if self._backend.deliver_one() or self._backend.fire_due():
            return True
        upcoming = [
            w.at
            for w in self.pending_wake_ups()
            if skip_event_timeouts or w.reason is not SuspendReason.EVENT
        ]
        if (visible_at := self._backend.next_visible_at()) is not None:
            upcoming.append(visible_at)
        if not upcoming:
            return False
        self.clock.set(min(upcoming))
        self._backend.recurring.skip(self.clock.time())
        return True

    def fire_schedule(
        self, workflow: str, at: datetime | float, schedule: str | None = None
    ) -> None:
        """Deliver one firing of ``workflow``'s schedule at ``at`` (an aware datetime or epoch
        seconds), as EventBridge Scheduler does, e.g. a second time: it starts the instance
        ``<workflow>-<UTC time>`` (``-<key>`` after it for a schedule but the first) unless
        that exists already. ``run_until_idle`` runs it.

        Args:
            schedule: which of the workflow's schedules, by its expression; its first when None.

        Raises:
            ValueError: the workflow declares no schedule of that expression.
        """
        when = at.timestamp() if isinstance(at, datetime) else float(at)
        self._backend.recurring.deliver(workflow, when, self._schedule_key(workflow, schedule))

    def _schedule_key(self, workflow: str, expression: str | None) -> str | None:
        if expression is None:
            return None
        from lambda_workflows.engine.instances.schedules import firing_keys, schedules_of

        declared = firing_keys(schedules_of(self.workflows[workflow]))
        for schedule, key in declared:
            if schedule.expression == expression:
                return key
        shown = [schedule.expression for schedule, _ in declared]
        raise ValueError(f"workflow {workflow!r} declares no schedule {expression!r}: {shown}")

    def sweep(self) -> int:
        """Run the recovery sweep once, as SweepFunction does every 5 minutes: post each
        instance overdue by more than its margin (a parked one whose retry time passed, say);
        returns how many. Move the clock first to make them overdue."""
        return self.service.recover()

    def run_once(self, workflow: str, id: str) -> None:
        """Deliver one wake-up to one instance, as one runner invocation."""
        self._send_mocked_events()
        self._backend.run_once(InstanceRef(workflow, id))

    # --- mocking steps and events (see lambda_workflows.testing's docstring) --------------

    def mock_step_result(
        self,
        instance: TestInstance | str,
        step_name: str,
        value: Any,
        *,
        workflow: str | None = None,
    ) -> None:
        """Each attempt of ``step_name`` returns ``value`` (recorded as the step's result);
        the callback is not called.

        Raises:
            ValueError: ``instance`` is an id and the env registers several workflows: pass
                ``workflow``.
            WorkflowError: ``value`` cannot be a step result; a name or id is invalid.
        """
        self._mocks.result(self._ref(instance, workflow), step_name, value)

    def mock_step_error(
        self,
        instance: TestInstance | str,
        step_name: str,
        error: BaseException,
        times: int | None = None,
        *,
        workflow: str | None = None,
    ) -> None:
        """Each attempt of ``step_name``, or only its first ``times``, raises ``error`` instead
        of calling the callback (then the callback runs); retries and backoff apply as usual."""
        self._mocks.error(self._ref(instance, workflow), step_name, error, times)

    def force_step_timeout(
        self,
        instance: TestInstance | str,
        step_name: str,
        times: int | None = None,
        *,
        workflow: str | None = None,
    ) -> None:
        """Each attempt of ``step_name``, or only its first ``times``, fails at once with the
        engine's step-timeout error, as if the callback had run past the step's timeout."""
        self._mocks.step_timeout(self._ref(instance, workflow), step_name, times)

    def mock_event(
        self,
        instance: TestInstance | str,
        type: str,
        payload: Any = None,
        *,
        workflow: str | None = None,
    ) -> None:
        """Send an event of ``type`` to the instance, now or as soon as it is created, so its
        ``wait_for_event(type=...)`` receives it as if it had been sent."""
        self._mocks.event(self._ref(instance, workflow), type, payload)
        self._send_mocked_events()

    def force_event_timeout(
        self, instance: TestInstance | str, step_name: str, *, workflow: str | None = None
    ) -> None:
        """The ``wait_for_event`` named ``step_name`` raises the engine's timeout error as soon
        as it is reached (an event of its type that is waiting is left unconsumed), or at the
        next ``run_until_idle`` when the instance is already waiting there."""
        ref = self._ref(instance, workflow)
        self._mocks.event_timeout(ref, step_name)
        try:
            self.service.get(ref)
        except InstanceNotFound:
            return
        self._backend.post(ref)  # an instance already waiting replays, and times out now

    def _ref(self, instance: TestInstance | str, workflow: str | None) -> InstanceRef:
        """The instance a mock is for: a handle's, or an id of ``workflow`` (default: the
        env's only workflow)."""
        if isinstance(instance, WorkflowInstance):
            if workflow not in (None, instance.ref.workflow):
                raise ValueError(f"{instance!r} is not an instance of workflow {workflow!r}")
            return instance.ref
        if workflow is None:
            if len(self.workflows) != 1:
                raise ValueError(
                    f"which workflow is instance {instance!r} of? This env registers "
                    f'{sorted(self.workflows) or "none"}: pass workflow="name"'
                )
            (workflow,) = self.workflows
        self.service.check_workflow(workflow)
        return InstanceRef(workflow, check_id(instance))

    def _send_mocked_events(self) -> None:
        """Send the mocked events whose instance exists now."""
        self._mocks.send_events(self.service.send_event)


def _link_token(url: str) -> str:
    """The token of an approval link's URL (or the token itself)."""
    return url.rsplit(LINK_PATH, 1)[-1]
