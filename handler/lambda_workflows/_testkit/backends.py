"""The test env's backends, behind one protocol (:class:`Backend`): the in-memory store,
queue and scheduler, or the real adapters and RunnerFunction handler on an embedded AWS (moto).

Each work message runs as one runner invocation; :class:`Crash` kills one, as a Lambda
timeout or a crash would.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import secrets
import uuid
import warnings
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from lambda_workflows._testkit.clock import VirtualClock
from lambda_workflows.engine.entrypoint import Env, WorkflowEntrypoint
from lambda_workflows.engine.errors import InstanceNotFound, SuspendReason
from lambda_workflows.engine.instances.advance import Runner, RunnerSettings
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.engine.links import LINK_KEY_BYTES, LinkSigner
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.memory.queue import MemoryQueue, MemoryScheduler
from lambda_workflows.memory.schedules import MemoryRecurring, RecurringFirings
from lambda_workflows.memory.store import MemoryStore

T = TypeVar("T")


class Crash(BaseException):
    """Kills the current invocation, like a Lambda timeout or a crash.

    A ``BaseException``, so ``except Exception`` in workflow code does not catch it.
    """


@dataclass(frozen=True)
class WakeUp:
    """A pending wake-up: when, which instance, and why (sleep, retry, event timeout...)."""

    at: float
    ref: InstanceRef
    reason: SuspendReason


class Backend(Protocol):
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


class MemoryBackend:
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
        slots = self.store.slots  # the concurrency slots, beside the instances
        self.service = InstanceService(
            workflows, self.store, self.queue, self.scheduler, clock, slot_store=slots
        )
        self.runner = Runner(
            workflows,
            self.store,
            self.queue,
            self.scheduler,
            clock,
            settings,
            env=env,
            slot_store=slots,
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


class AwsBackend:
    """The real adapters and RunnerFunction handler on an embedded AWS (moto)."""

    def __init__(
        self,
        workflows: Mapping[str, type[WorkflowEntrypoint]],
        clock: VirtualClock,
        settings: RunnerSettings | None,
        values: Mapping[str, Any],
    ) -> None:
        from lambda_workflows.local.embedded import TEST_RUNNER, EmbeddedAws

        self.aws = EmbeddedAws(
            workflows, clock, runner_settings=settings or TEST_RUNNER, env_values=values
        )
        self.store = self.aws.runtime.store
        self.service = self.aws.runtime.service
        self.runner = self.aws.runtime.runner
        from lambda_workflows.local.recurring import RecurringEmulator

        self.recurring: RecurringFirings = RecurringEmulator(self.aws)
        self.recurring.reconcile()  # as the sweep does after a deploy
        self.invocations = 0
        self.crashes = 0

    def deliver_one(self) -> bool:
        direct = self.aws.take_invoke()  # work due now, invoked directly
        if direct is not None:
            return self._invoke_direct(direct)
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

    def _invoke_direct(self, payload: dict[str, Any]) -> bool:
        self.invocations += 1
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "No application metrics to publish")
            died = self.aws.invoke_wake_up(payload)
        self.crashes += isinstance(died, Crash)
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


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to the end, also when called from inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
