"""The steps of one replay pass as asyncio tasks, and the suspensions that stop it.

:class:`StepTasks` is the half of :class:`~lambda_workflows.engine.replay.core.Replay` that knows
about tasks rather than the journal: which steps were started and never awaited, which are still
running, which parked (see :mod:`.parking`); the driver that cancels ``run()`` once every step is
parked or done, and notices a ``run()`` that caught that cancellation (see :mod:`.caught`); which
suspension wins; and the settling of steps still running when ``run()`` stops. Nothing here reads
the journal, the clock or the store.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any, NoReturn, TypeVar

from lambda_workflows.engine.errors import Suspend, SuspendReason, WorkflowError

from .caught import (
    Suspension,
    awaiting_sites,
    calling_sites,
    caught_error,
)
from .operations.base import SCOPE
from .parking import Parking
from .replay_outcome import Outcome, Suspended, winning_suspension

T = TypeVar("T")

# How often the driver cancels a run() that goes on awaiting after each cancellation (a
# ``finally`` that awaits a step parks it again) before that is a caught suspension.
MAX_SWALLOWED_SUSPENSIONS = 100


class StepTasks:
    """The task bookkeeping of one pass (the base of
    :class:`~lambda_workflows.engine.replay.core.Replay`).

    Args:
        settle_timeout: how long steps still running when ``run()`` stops may take to finish.
    """

    def __init__(self, settle_timeout: float) -> None:
        self._settle_timeout = settle_timeout
        self._pending: dict[int, tuple[str, Coroutine[Any, Any, Any], Coroutine[Any, Any, Any]]]
        self._pending = {}
        self._running: dict[int, str] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._root_task: asyncio.Task[Any] | None = None
        self._parking = Parking()
        self._died: BaseException | None = None
        self._suspensions: list[Suspend] = []
        self._parked: Suspension | None = None  # the last step parked at run()'s level
        self._cancels = 0  # how often the driver cancelled run() (see _drive)
        self._cancelled: Suspension | None = None  # the suspension of the last cancellation
        self._suspended_tasks: set[asyncio.Task[Any]] | None = None
        self._fatal: WorkflowError | None = None

    # --- the driver -----------------------------------------------------------------------

    async def _drive(self, root: asyncio.Task[Outcome]) -> Outcome:
        """Wait for run(); once every step is parked or done, cancel it (see .parking).

        The cancellation must come back out of run(): a run() that returns, or raises anything
        else, caught it, and errors (see .caught)."""
        while await self._parking.stalled(root):
            self._cancels += 1
            if self._parked is not None:  # where run() waits: read only now, never per step
                parked = self._parked
                sites = awaiting_sites(root.get_coro())
                self._cancelled = Suspension(parked.step, parked.signal, sites)
            if self._cancels > MAX_SWALLOWED_SUSPENSIONS:
                self._caught()
            root.cancel()
        if root.cancelled():
            return self._suspended()
        error = root.exception()
        if error is not None:
            if isinstance(error, BaseExceptionGroup) and error.subgroup(
                (Suspend, asyncio.CancelledError)
            ):
                return self._suspended()  # a TaskGroup whose steps were cancelled
            raise error  # a crash in run() takes the invocation down, as a dead process would
        outcome = root.result()
        if self._cancels and not isinstance(outcome, Suspended):
            self._caught()  # run() returned, or raised something else: it caught it
        return outcome

    def _caught(self) -> None:
        """run() caught the cancellation the driver sent it: the instance errors."""
        if self._fatal is None and self._cancelled is not None:
            self._fatal = caught_error(self._cancelled)

    def suspension_caught(self, suspension: Suspension, step: str) -> NoReturn:
        """The callback of ``step`` caught a nested step's suspension and went on: the instance
        errors (no ``except`` in run() can hide it), and ``step`` parks, recording nothing."""
        if self._fatal is None:
            self._fatal = caught_error(suspension, f"the callback of step {step!r}")
        raise suspension.signal

    def _suspended(self) -> Suspended:
        return winning_suspension(self._suspensions)

    def _leftover_steps(self) -> list[str]:
        names = [name for name, _, _ in self._pending.values()]
        names += list(self._running.values())
        return names

    async def _settle(self) -> None:
        """End parked steps, let steps still running finish (bounded), cancel what is left."""
        for _, wrapper, body in list(self._pending.values()):
            wrapper.close()  # never started: nothing to wait for
            body.close()

        self._pending.clear()
        self._parking.release()
        tasks = [t for t in self._tasks if not t.done() and t is not self._root_task]
        if tasks:
            await asyncio.wait(tasks, timeout=self._settle_timeout)
            for task in tasks:
                if not task.done():
                    task.cancel()
            await asyncio.wait(tasks, timeout=1.0)
        died: BaseException | None = None
        for task in self._tasks:
            if task.done() and not task.cancelled():
                error = task.exception()  # marks it retrieved; Exceptions were handled in run()
                if error is not None and not isinstance(error, Exception | Suspend):
                    died = died or error
        if died is not None:
            # A step still running when run() stopped took the invocation down (a crash, a
            # Lambda timeout): nothing after it may be written, as if the process had died.
            raise died

    # --- steps as tasks (what operations see of it through operations.base.Pass) ---------

    def track(self, name: str, body: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
        """Wrap a step body so steps never awaited, or still running, can be reported."""
        token = object()
        coro = self._guarded(token, name, body)
        self._pending[id(token)] = (name, coro, body)
        return coro

    async def _guarded(self, token: object, name: str, body: Coroutine[Any, Any, T]) -> T:
        self._pending.pop(id(token), None)
        self._running[id(token)] = name
        task = asyncio.current_task()
        if task is not None and task is not self._root_task:
            self._tasks.add(task)
        self._parking.started()
        parked = False
        try:
            return await body
        except Suspend as signal:
            scope = SCOPE.get()
            if scope is not None:  # a step nested in a callback: the enclosing step parks
                scope.suspended = Suspension(name, signal, calling_sites(sys._getframe(1)))
                raise
            self._parked = Suspension(name, signal)
            parked = True
            await self._parking.park()  # until the pass ends: run() never sees the Suspend
        except BaseException as exc:
            if isinstance(exc, Exception | asyncio.CancelledError) or SCOPE.get() is not None:
                raise
            # The invocation died inside this step (a crash, a Lambda timeout): run() must not
            # get that as a value (gather(return_exceptions=True)) and go on. Steps already
            # running beside it finish; then the pass ends with the crash.
            self._died = self._died or exc
            parked = True
            await self._parking.park()
        finally:
            self._running.pop(id(token), None)
            if not parked:
                self._parking.finished()

    def suspend(self, reason: SuspendReason, wake_at: float | None = None) -> NoReturn:
        """Stop the pass here: raise :class:`Suspend` and remember it (see :meth:`run`)."""
        if self._suspended_tasks is None:
            # Steps already started (a gather's other children) may still run and finish;
            # anything started later may not (see _check_not_suspended).
            self._suspended_tasks = set(asyncio.all_tasks()) - {self._root_task}
        signal = Suspend(reason, wake_at)
        self._suspensions.append(signal)
        raise signal

    def _check_not_suspended(self) -> None:
        """A step called once the pass has suspended, from run() itself or a task it made
        afterwards, must not run before what suspended has happened: it suspends (parks) too.

        Called by run() itself once the driver has cancelled it, outside an ``except`` or
        ``finally`` that is unwinding that cancellation (a cleanup step is fine: it parks),
        it means run() caught the cancellation and went on: the instance errors.
        """
        if self._died is not None:  # the invocation is dead: nothing new starts
            self.suspend(SuspendReason.RELOAD)
        started = self._suspended_tasks
        if started is None:
            return
        task = asyncio.current_task()
        if task in started:
            return
        if self._cancels and task is self._root_task and not _unwinding():
            self._caught()  # run() was cancelled, and goes on outside any handler of that
        first = self._suspensions[0]
        self.suspend(first.reason, first.wake_at)

    def alone(self) -> bool:
        """True when the calling step is the only one of the pass running, and no other is
        scheduled (a gather's steps are all tracked before the first one starts)."""
        return self._parking.running <= 1 and not self._pending


def _unwinding() -> bool:
    """True inside an ``except`` or ``finally`` handling the engine's cancellation (or
    suspension), in the calling coroutine or any that awaits it."""
    return isinstance(sys.exc_info()[1], asyncio.CancelledError | Suspend)
