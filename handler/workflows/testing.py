"""Test kit for your own workflows: the real engine on an in-memory store, with virtual time.

::

    from workflows.testing import WorkflowTestEnv, Crash

    env = WorkflowTestEnv({"orders": OrderWorkflow})
    inst = env.create("orders", id="o-1", params={"x": 1})
    env.run_until_idle()          # sleeps and retry delays pass in virtual time, instantly
    assert inst.status().status == "complete"

``run_until_idle()`` runs all runnable work; when nothing is runnable it jumps the virtual
clock to the next sleep or retry wake-up and goes on. It returns when every instance is
finished, paused, or waiting for an event. Event-wait timeouts fire only when the test moves
the clock past them (``env.clock.advance("1 day")``).

Raise :class:`Crash` anywhere in ``run()`` or a step callback to kill the invocation as a
Lambda timeout or crash would: nothing of that attempt is recorded, and the work is delivered
again at once (the dead invocation's lease is treated as expired), replaying from the journal.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from .engine.clock import to_datetime
from .engine.durations import Duration, parse_duration
from .engine.entrypoint import Env, WorkflowEntrypoint
from .engine.errors import SuspendReason
from .engine.memory import MemoryQueue, MemoryScheduler, MemoryStore
from .engine.model import InstanceRef, InstanceStatusView, JournalEntry
from .engine.runner import Runner, RunnerSettings
from .engine.service import BatchResult, InstanceService

__all__ = [
    "Crash",
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


class TestInstance:
    """A handle on one instance, with the same methods as the real ``WorkflowInstance``."""

    __test__ = False  # not a pytest test class

    def __init__(self, env: WorkflowTestEnv, ref: InstanceRef) -> None:
        self._env = env
        self.ref = ref

    @property
    def id(self) -> str:
        return self.ref.id

    def status(self) -> InstanceStatusView:
        """``status``, ``output``, ``error`` and the step timeline."""
        return self._env.service.status(self.ref)

    def send_event(self, *, type: str, payload: Any = None, key: str | None = None) -> None:
        """Send an event; buffered until a matching ``wait_for_event``. ``key`` (optional)
        makes a retry safe: a second send with the same key stores nothing."""
        self._env.service.send_event(self.ref, type, payload, key=key)

    def pause(self) -> None:
        """Pause at the next step boundary."""
        self._env.service.pause(self.ref)

    def resume(self) -> None:
        """Resume; pending sleeps and retry delays move by the time spent paused."""
        self._env.service.resume(self.ref)

    def terminate(self) -> None:
        """Stop the instance for good."""
        self._env.service.terminate(self.ref)

    def restart(self) -> None:
        """Run again from the top."""
        self._env.service.restart(self.ref)

    def journal(self) -> list[JournalEntry]:
        """The recorded journal entries (current generation), oldest first."""
        return sorted(self._env.store.load(self.ref).entries, key=lambda e: (e.at, e.key))

    def __repr__(self) -> str:
        return f"TestInstance({self.ref})"


class TestWorkflow:
    """``env.workflow(name)``: a client of one workflow inside the test env."""

    __test__ = False

    def __init__(self, env: WorkflowTestEnv, name: str) -> None:
        self._env = env
        self.name = name

    def create(self, id: str | None = None, params: Any = None) -> TestInstance:
        return self._env.create(self.name, id=id, params=params)

    def create_batch(self, items: Sequence[Mapping[str, Any]]) -> BatchResult:
        return self._env.create_batch(self.name, items)

    def get(self, id: str) -> TestInstance:
        return self._env.get(self.name, id)


@dataclass(frozen=True)
class WakeUp:
    """A pending wake-up: when, which instance, and why (sleep, retry, event timeout...)."""

    at: float
    ref: InstanceRef
    reason: SuspendReason


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
        self.workflows = dict(workflows)
        self.clock = VirtualClock(start)
        self.invocations = 0
        self.crashes = 0
        values = dict(env or {})
        self.aws: Any = None
        if backend == "aws":
            from .local.aws import TEST_RUNNER, LocalAws

            self.aws = LocalAws(
                self.workflows,
                self.clock,
                runner_settings=settings or TEST_RUNNER,
                env_values=values,
            )
            self.store: Any = self.aws.runtime.store
            self.service: InstanceService = self.aws.runtime.service
            self.runner: Runner = self.aws.runtime.runner
            return
        self.store = MemoryStore()
        self.queue = MemoryQueue(self.clock)
        self.scheduler = MemoryScheduler()
        self.service = InstanceService(
            self.workflows, self.store, self.queue, self.scheduler, self.clock
        )
        self.runner = Runner(
            self.workflows,
            self.store,
            self.queue,
            self.scheduler,
            self.clock,
            settings,
            env=lambda: Env(values, self.workflow),
        )

    def close(self) -> None:
        """Release the embedded AWS (aws backend); harmless otherwise."""
        if self.aws is not None:
            self.aws.close()
            self.aws = None

    def __enter__(self) -> WorkflowTestEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the client side ------------------------------------------------------------------

    def create(self, workflow: str, id: str | None = None, params: Any = None) -> TestInstance:
        """Create an instance (same rules as the real create: a taken id is an error)."""
        record = self.service.create(workflow, id, params)
        return TestInstance(self, record.ref)

    def create_batch(self, workflow: str, items: Sequence[Mapping[str, Any]]) -> BatchResult:
        """Create up to 100 instances; existing ids are skipped and reported."""
        return self.service.create_batch(workflow, items)

    def get(self, workflow: str, id: str) -> TestInstance:
        """A handle on an existing instance."""
        ref = InstanceRef(workflow, id)
        self.store.get(ref)
        return TestInstance(self, ref)

    def workflow(self, name: str) -> TestWorkflow:
        """A client of one workflow (what ``self.env.workflow(name)`` returns in a workflow)."""
        self.service.check_workflow(name)
        return TestWorkflow(self, name)

    # --- driving --------------------------------------------------------------------------

    def pending_wake_ups(self) -> list[WakeUp]:
        """Scheduled wake-ups not yet fired, earliest first."""
        if self.aws is not None:
            return [WakeUp(s.at, s.ref, SuspendReason(s.reason)) for s in self.aws.schedules()]
        return [WakeUp(w.at, w.ref, w.reason) for w in self.scheduler.pending()]

    def run_until_idle(self, max_invocations: int = 100_000) -> None:
        """Run everything runnable, skipping virtual time over sleeps and retry delays.

        Returns when every instance is finished, paused, or waiting for an event.
        """
        for _ in range(max_invocations):
            if self._deliver_one():
                continue
            if self._fire_due():
                continue
            upcoming = [
                w.at for w in self.pending_wake_ups() if w.reason is not SuspendReason.EVENT
            ]
            if self.aws is None and (visible_at := self.queue.next_visible_at()) is not None:
                upcoming.append(visible_at)
            if not upcoming:
                return
            self.clock.set(min(upcoming))
        raise RuntimeError(
            f"run_until_idle gave up after {max_invocations:,} invocations; does a workflow "
            "loop forever (e.g. a sleep inside an unbounded loop)?"
        )

    def run_once(self, workflow: str, id: str) -> None:
        """Deliver one wake-up to one instance, as one runner invocation."""
        ref = InstanceRef(workflow, id)
        if self.aws is not None:
            self.aws.send(ref)
            self._deliver_one()
        else:
            self._invoke(ref)

    def _deliver_one(self) -> bool:
        if self.aws is not None:
            messages = self.aws.receive(max_messages=1)
            if not messages:
                return False
            self.invocations += 1
            try:
                self.aws.invoke_runner(messages)
            except Crash:
                from .aws.sqs import parse_work_message

                self.crashes += 1
                for message in messages:
                    self.store.break_lease(parse_work_message(message["Body"]))
                self.aws.redeliver(messages)
            return True
        ref = self.queue.receive()
        if ref is None:
            return False
        self._invoke(ref)
        return True

    def _fire_due(self) -> bool:
        if self.aws is not None:
            return bool(self.aws.fire_due_schedules())
        due = self.scheduler.pop_due(self.clock.time())
        for wake_up in due:
            self.queue.send(wake_up.ref)
        return bool(due) or bool(len(self.queue) and self._queue_visible())

    def _queue_visible(self) -> bool:
        visible_at = self.queue.next_visible_at()
        return visible_at is not None and visible_at <= self.clock.time()

    def _invoke(self, ref: InstanceRef) -> None:
        self.invocations += 1
        try:
            _run(self.runner.advance(ref))
        except Crash:
            self.crashes += 1
            self.store.break_lease(ref)
            self.queue.send(ref)


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to the end, also when called from inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
