"""Test kit for your own workflows: the real engine on an in-memory store, with virtual time.

::

    from lambda_workflows.testing import WorkflowTestEnv, Crash

    env = WorkflowTestEnv({"orders": OrderWorkflow})
    inst = env.create("orders", id="o-1", params={"x": 1})
    env.run_until_idle()          # sleeps and retry delays pass in virtual time, instantly
    assert inst.status().status == "complete"

``run_until_idle()`` runs all runnable work; when nothing is runnable it jumps the virtual
clock to the next sleep or retry wake-up and goes on. It returns when every instance is
finished, paused, or waiting for an event. Event-wait timeouts fire only when the test moves
the clock past them (``env.clock.advance("1 day")``).

Raise :class:`Crash` anywhere in ``run()`` or a step callback to kill the invocation as a
Lambda timeout or crash would: nothing of that attempt is recorded, and its work message is
delivered again at once; it takes back the lease it held, and the instance replays from its
journal.

Mocking steps and events
------------------------

As Cloudflare's ``introspectWorkflowInstance(...).modify(...)`` does in Vitest, a test can
decide what a step or an event wait of one instance does, without changing the workflow::

    env.mock_step_result(inst, "charge", {"charged": True})   # the callback is not called
    env.mock_step_error(inst, "fetch", ConnectionError("down"), times=2)  # then the real one
    env.force_step_timeout(inst, "slow call")                 # every attempt times out
    env.mock_event(inst, "approved", {"user": "ana"})          # as if sent
    env.force_event_timeout(inst, "approval")                 # that wait times out at once

- ``mock_step_result(instance, step_name, value)``: each attempt of the step returns
  ``value`` without calling the callback; it is recorded (and replayed) as the step's result.
- ``mock_step_error(instance, step_name, error, times=None)``: each attempt raises ``error``
  without calling the callback — every attempt, or only the first ``times`` attempts, after
  which the real callback runs. Retries, backoff and ``NonRetryableError`` apply as usual, so
  an exhausted step fails ``run()`` with :class:`~lambda_workflows.StepFailedError`.
- ``force_step_timeout(instance, step_name, times=None)``: attempts fail at once with the
  engine's step-timeout error (a ``WorkflowTimeoutError``, as if the callback had run past the
  step's ``timeout``), every attempt or the first ``times``; the callback is not called.
- A ``step.run_workflow`` step takes these three mocks too: the mocked result (or error, or
  timeout) is the child's answer, recorded as the step's, and no child instance is started.
- ``mock_event(instance, type, payload)``: an event of ``type`` is sent to the instance as
  soon as it exists, so its ``wait_for_event(type=...)`` receives it (an early event waits in
  the buffer, as a real one does).
- ``force_event_timeout(instance, step_name)``: that ``wait_for_event`` raises the engine's
  ``WorkflowTimeoutError`` at once, even when an event of its type is waiting (an instance
  already waiting there times out at the next ``run_until_idle``, with no time passing).

``instance`` is a :class:`TestInstance` or an instance id. With an id, the workflow is the
env's only registered workflow; an env with several needs ``workflow="name"`` (an id alone is
ambiguous: ids are unique per workflow). A mock may be registered before the instance exists
(by id) or before it reaches the step; it applies to every call of a step of that name
(steps nested in a callback too), and registering another mock for the same step replaces
it. Mocks change only what has not been recorded yet: a recorded step replays as recorded.
They work the same on both backends and exist only in the test kit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import secrets
import uuid
import warnings
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from ._step_mocks import StepMocks
from .engine.advance import Runner, RunnerSettings
from .engine.approval_links import check_link, use_link
from .engine.batch_forms import BatchBody, batch_body
from .engine.clients import WorkflowInstance
from .engine.clock import to_datetime
from .engine.deletion import DeleteBatchResult
from .engine.durations import Duration, parse_duration
from .engine.entrypoint import Env, WorkflowEntrypoint
from .engine.errors import InstanceNotFound, SuspendReason
from .engine.limits import check_id
from .engine.links import LINK_KEY_BYTES, LINK_PATH, LinkSigner, shown_claims
from .engine.memory import MemoryQueue, MemoryScheduler, MemoryStore
from .engine.memory_schedules import MemoryRecurring, RecurringFirings
from .engine.model import InstanceRef, JournalEntry
from .engine.ports import InstancePage
from .engine.replayer import Divergence, ReplayDivergence, Replayer, ReplayResult, StepCall
from .engine.service import BatchResult, InstanceService
from .registry import check_schedules, check_versions

__all__ = [
    "Crash",
    "Divergence",
    "ReplayDivergence",
    "ReplayResult",
    "Replayer",
    "StepCall",
    "TestInstance",
    "TestWorkflow",
    "VirtualClock",
    "WakeUp",
    "WorkflowTestEnv",
]

T = TypeVar("T")
DEFAULT_START = datetime.fromisoformat("2025-01-01T00:00:00+00:00")


class Crash(BaseException):
    """Kills the current invocation, like a Lambda timeout or a crash.

    A ``BaseException``, so ``except Exception`` in workflow code does not catch it.
    """


class VirtualClock:
    """Time that moves only when the test (or ``run_until_idle``) moves it."""

    def __init__(self, start: datetime | float | None = None) -> None:
        if start is None:
            start = DEFAULT_START
        self._now = start.timestamp() if isinstance(start, datetime) else float(start)

    def time(self) -> float:
        """Seconds since the epoch, virtual."""
        return self._now

    def now(self) -> datetime:
        """The virtual time as an aware UTC datetime."""
        return to_datetime(self._now)

    def advance(self, duration: Duration) -> None:
        """Move time forward by ``duration`` (``"2 hours"``, a timedelta, or seconds)."""
        self._now += parse_duration(duration, what="clock advance")

    def set(self, when: datetime | float) -> None:
        """Move time to ``when`` (never backwards)."""
        target = when.timestamp() if isinstance(when, datetime) else float(when)
        self._now = max(self._now, target)

    async def sleep(self, seconds: float) -> None:
        """Jump forward instead of waiting."""
        self._now += max(0.0, seconds)
        await asyncio.sleep(0)


class TestInstance(WorkflowInstance):
    """A handle on one instance: the client's handle (status, step outputs, events, pause,
    resume, terminate, restart, delete), plus its journal."""

    __test__ = False  # not a pytest test class

    def __init__(self, env: WorkflowTestEnv, ref: InstanceRef) -> None:
        super().__init__(env.service, ref)
        self._env = env

    def journal(self) -> list[JournalEntry]:
        """The recorded journal entries (current generation), oldest first."""
        return sorted(self._env.store.load(self.ref).entries, key=lambda e: (e.at, e.key))

    # subscribe(): in a test env nothing runs unless the test runs it, so a subscriber that
    # found nothing new moves the env on (one message, a due wake-up, or the virtual clock to
    # the next wake-up: the time a real subscriber would wait), instead of waiting.
    _subscribe_wait = 0.0

    def _no_news(self) -> None:
        if not self._env.progress():
            status = self.status().status
            raise RuntimeError(
                f"subscribe(): instance {self.id!r} is {status} and nothing in the test env will "
                "move it on (no work, no wake-up): send the event it waits for or resume it "
                "from inside the loop, or stop iterating"
            )


class TestWorkflow:
    """``env.workflow(name)``: a client of one workflow inside the test env."""

    __test__ = False

    def __init__(self, env: WorkflowTestEnv, name: str) -> None:
        self._env = env
        self.name = name

    def create(self, id: str | None = None, params: Any = None) -> TestInstance:
        return self._env.create(self.name, id=id, params=params)

    def create_batch(
        self, items: BatchBody | None = None, *, count: int | None = None, params: Any = None
    ) -> BatchResult:
        """As the client's: a list of items, or ``count=N`` (generated ids) with ``params``."""
        return self._env.create_batch(self.name, batch_body(items, count, params))

    def delete_batch(self, ids: Sequence[str]) -> DeleteBatchResult:
        """Delete up to 100 instances; ``result["deleted"]`` and ``result["errors"]`` (each
        id no instance has is an error of code ``not_found``)."""
        return self._env.service.delete_batch(self.name, ids)

    def get(self, id: str) -> TestInstance:
        return self._env.get(self.name, id)

    def list(
        self, status: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> InstancePage:
        """A page of this workflow's instances, newest first, as the client's ``list``: pass
        ``page.cursor`` back for the next page (None on the last one)."""
        return self._env.service.list(self.name, status, cursor, limit)


@dataclass(frozen=True)
class WakeUp:
    """A pending wake-up: when, which instance, and why (sleep, retry, event timeout...)."""

    at: float
    ref: InstanceRef
    reason: SuspendReason


class _Backend(Protocol):
    """Where a test env's instances live and how their work reaches the runner.

    Each work message is run as one runner invocation. An invocation that dies (a
    :class:`Crash`) records nothing more; its message is delivered again, as the queue would
    once its visibility timeout ran out, and takes back the lease it held (the lease is taken
    in the message's name), so the instance resumes from its journal.
    """

    store: Any
    service: InstanceService
    runner: Runner
    invocations: int
    crashes: int
    recurring: RecurringFirings  # the workflows' schedules, fired on the virtual clock

    def deliver_one(self) -> bool:
        """Run one visible work message; False when none is visible."""
        ...

    def run_once(self, ref: InstanceRef) -> None:
        """Post a work message for ``ref`` and run it."""
        ...

    def post(self, ref: InstanceRef) -> None:
        """Post a work message for ``ref`` (a later :meth:`deliver_one` runs it)."""
        ...

    def fire_due(self) -> bool:
        """Turn due wake-ups into work messages; True when work became visible."""
        ...

    def pending_wake_ups(self) -> list[WakeUp]:
        """Wake-ups not yet due, earliest first."""
        ...

    def next_visible_at(self) -> float | None:
        """When the next delayed work message becomes visible (None: none is delayed)."""
        ...

    def close(self) -> None:
        """Release what the backend holds."""
        ...


class _MemoryBackend:
    """The in-memory store, queue and scheduler."""

    def __init__(
        self,
        workflows: Mapping[str, type[WorkflowEntrypoint]],
        clock: VirtualClock,
        settings: RunnerSettings | None,
        env: Callable[[], Env],
    ) -> None:
        self.store = MemoryStore()
        self.queue = MemoryQueue(clock)
        self.scheduler = MemoryScheduler()
        self.service = InstanceService(workflows, self.store, self.queue, self.scheduler, clock)
        self.runner = Runner(
            workflows, self.store, self.queue, self.scheduler, clock, settings, env=env
        )
        self.runner.links = LinkSigner(secrets.token_bytes(LINK_KEY_BYTES))  # as dev's: its own
        self.recurring: RecurringFirings = MemoryRecurring(workflows, self.service, clock)
        self.recurring.reconcile()  # schedules fire from the env's start
        self.clock = clock
        self.invocations = 0
        self.crashes = 0
        # (message id, instance, which delivery): what SQS would deliver again after a crash
        self._redelivered: list[tuple[str, InstanceRef, int]] = []

    def deliver_one(self) -> bool:
        if self._redelivered:
            self._invoke(*self._redelivered.pop(0))
            return True
        ref = self.queue.receive()
        if ref is None:
            return False
        self._invoke(uuid.uuid4().hex, ref)
        return True

    def run_once(self, ref: InstanceRef) -> None:
        self._invoke(uuid.uuid4().hex, ref)

    def post(self, ref: InstanceRef) -> None:
        self.queue.send(ref)

    def _invoke(self, message_id: str, ref: InstanceRef, delivery: int = 1) -> None:
        self.invocations += 1
        try:
            _run(self.runner.advance(ref, owner=message_id, delivery=delivery))
        except InstanceNotFound:
            pass  # deleted meanwhile, as RunnerFunction treats it: nothing left to advance
        except Crash:
            self.crashes += 1
            self._redelivered.append((message_id, ref, delivery + 1))

    def fire_due(self) -> bool:
        due = self.scheduler.pop_due(self.clock.time())
        for wake_up in due:
            self.queue.send(wake_up.ref)
        visible_at = self.queue.next_visible_at()
        return bool(due) or (visible_at is not None and visible_at <= self.clock.time())

    def pending_wake_ups(self) -> list[WakeUp]:
        return [WakeUp(w.at, w.ref, w.reason) for w in self.scheduler.pending()]

    def next_visible_at(self) -> float | None:
        return self.queue.next_visible_at()

    def close(self) -> None:
        pass


class _AwsBackend:
    """The real adapters and RunnerFunction handler on an embedded AWS (moto)."""

    def __init__(
        self,
        workflows: Mapping[str, type[WorkflowEntrypoint]],
        clock: VirtualClock,
        settings: RunnerSettings | None,
        values: Mapping[str, Any],
    ) -> None:
        from .local.embedded import TEST_RUNNER, EmbeddedAws

        self.aws = EmbeddedAws(
            workflows, clock, runner_settings=settings or TEST_RUNNER, env_values=values
        )
        self.store = self.aws.runtime.store
        self.service = self.aws.runtime.service
        self.runner = self.aws.runtime.runner
        from .local.recurring import RecurringEmulator

        self.recurring: RecurringFirings = RecurringEmulator(self.aws)
        self.recurring.reconcile()  # as the sweep does after a deploy
        self.invocations = 0
        self.crashes = 0

    def deliver_one(self) -> bool:
        messages = self.aws.receive(max_messages=1)
        if not messages:
            return False
        self.invocations += 1
        with warnings.catch_warnings():
            # RunnerFunction's Powertools metrics warn on an invocation that advanced nothing
            # (a duplicate message, a settled instance): normal here, and noise in a test.
            warnings.filterwarnings("ignore", "No application metrics to publish")
            died = self.aws.run_invocation(messages, dies=(Crash,))
        self.crashes += died is not None
        return True

    def run_once(self, ref: InstanceRef) -> None:
        self.aws.send(ref)
        self.deliver_one()

    def post(self, ref: InstanceRef) -> None:
        self.aws.send(ref)

    def fire_due(self) -> bool:
        due = self.aws.due_schedules()
        for schedule in due:
            self.invocations += schedule.invokes_lambda
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "No application metrics to publish")
                died = self.aws.fire(schedule)
            self.crashes += isinstance(died, Crash)
        return bool(due)

    def pending_wake_ups(self) -> list[WakeUp]:
        return [WakeUp(s.at, s.ref, SuspendReason(s.reason)) for s in self.aws.schedules()]

    def next_visible_at(self) -> float | None:
        return None  # every wake-up is a schedule here (moto delays messages in real time)

    def close(self) -> None:
        self.aws.close()


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
        self._backend: _Backend
        if backend == "aws":
            aws = _AwsBackend(self.workflows, self.clock, settings, values)
            self.aws = aws.aws
            self._backend = aws
        else:
            memory = _MemoryBackend(
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
        from .engine.schedules import firing_keys, schedules_of

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

    # --- mocking steps and events (see the module's docstring) ----------------------------

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


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to the end, also when called from inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _link_token(url: str) -> str:
    """The token of an approval link's URL (or the token itself)."""
    return url.rsplit(LINK_PATH, 1)[-1]
