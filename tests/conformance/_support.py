"""Fault injection for the conformance tests, without editing the examples.

Two ways to kill an invocation (``Crash``, a Lambda dying) or fail an attempt at a chosen point:

* :func:`inject` wraps one method of a fake service from ``lambda_workflows.examples._fakes`` (the
values the
  examples read as ``self.env.X``): the call does its work (``commit=True``, e.g. the payment
  processor commits the charge) and *then* raises, or raises before doing anything.
* :func:`crash_after` builds a test-local subclass of an example workflow whose ``run()`` gets
  a step proxy: the invocation crashes right after the named step returned (i.e. after it was
  recorded, or replayed), the way a Lambda may die between two steps.

Both keep their state on objects shared by every replay (the engine builds a new workflow
object for each pass), and both are thread-safe (sync callbacks run in worker threads).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent
from lambda_workflows.testing import Crash, WorkflowTestEnv

T = TypeVar("T")


class Injection:
    """What :func:`inject` did: how often the method was called, and how often it failed."""

    def __init__(self, times: int) -> None:
        self.lock = threading.Lock()
        self.left = times
        self.calls = 0
        self.fired = 0
        self.args: list[tuple[Any, ...]] = []


def inject(
    service: Any,
    method: str,
    error: Callable[[], BaseException] | None = None,
    *,
    times: int = 1,
    commit: bool = True,
    only: Callable[..., bool] | None = None,
) -> Injection:
    """Make ``service.method`` raise ``error()`` on its first ``times`` matching calls.

    Args:
        service: a fake from ``example_env()`` (patched on the instance, not the class).
        method: the method to wrap.
        error: builds the exception to raise (``Crash``, ``ConnectionError``...); None only
            counts the calls (a spy).
        times: how many matching calls fail.
        commit: True: the call does its work and then raises (the service committed but the
            caller never learned it); False: it raises before doing anything.
        only: a predicate on the call's arguments selecting which calls may fail.
    """
    original = getattr(service, method)
    state = Injection(times)

    # wraps(): keep the original signature, which the engine inspects to decide whether a
    # callback such as ``functools.partial(kv.get, key)`` takes a ``ctx`` argument.
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with state.lock:
            state.calls += 1
            state.args.append(args)
            fire = error is not None and state.left > 0 and (only is None or only(*args))
            if fire:
                state.left -= 1
                state.fired += 1
        if fire and not commit:
            assert error is not None
            raise error()
        result = original(*args, **kwargs)
        if fire:
            assert error is not None
            raise error()
        return result

    setattr(service, method, wrapper)
    return state


class CrashPlan:
    """Step names after which the invocation dies (once each), and the crashes so far."""

    def __init__(self, names: Iterable[str]) -> None:
        self._lock = threading.Lock()
        self.pending = set(names)
        self.crashed: list[str] = []

    def after(self, name: str) -> None:
        with self._lock:
            if name not in self.pending:
                return
            self.pending.discard(name)
            self.crashed.append(name)
        raise Crash(f"injected crash right after step {name!r}")


class CrashingStep:
    """A stand-in for ``step`` that crashes the invocation right after chosen steps return.

    Every call goes to the real ``step`` at once (so names are checked and unawaited steps
    are still tracked by the engine); the crash happens when the awaited step has returned.
    """

    def __init__(self, step: Any, plan: CrashPlan) -> None:
        self._step = step
        self._plan = plan

    async def _then(self, name: str, inner: Awaitable[T]) -> T:
        result = await inner
        self._plan.after(name)
        return result

    def do(self, name: str, *args: Any) -> Awaitable[Any]:
        return self._then(name, self._step.do(name, *args))

    def sleep(self, name: str, duration: Any) -> Awaitable[None]:
        return self._then(name, self._step.sleep(name, duration))

    def sleep_until(self, name: str, when: Any) -> Awaitable[None]:
        return self._then(name, self._step.sleep_until(name, when))

    def wait_for_event(self, name: str, **kwargs: Any) -> Awaitable[Any]:
        return self._then(name, self._step.wait_for_event(name, **kwargs))


def crash_after(cls: type[WorkflowEntrypoint], *step_names: str) -> type[Any]:
    """A test-local subclass of ``cls`` whose invocation dies right after each named step.

    The subclass's ``crash_plan`` (a :class:`CrashPlan`) says which crashes happened.
    """
    plan = CrashPlan(step_names)

    class CrashingWorkflow(cls):  # type: ignore[valid-type,misc]
        crash_plan = plan

        async def run(self, event: WorkflowEvent, step: Any) -> Any:
            return await super().run(event, CrashingStep(step, plan))

    CrashingWorkflow.__name__ = CrashingWorkflow.__qualname__ = f"{cls.__name__}CrashingAfter"
    return CrashingWorkflow


class FakeRandom:
    """Stands in for the ``random`` module of an example: hands out ``values`` in order
    (then keeps repeating the last one) and counts the draws."""

    def __init__(self, *values: float) -> None:
        self._lock = threading.Lock()
        self.values = list(values)
        self.draws = 0

    def random(self) -> float:
        with self._lock:
            value = self.values[min(self.draws, len(self.values) - 1)]
            self.draws += 1
            return value

    def randrange(self, low: int, high: int) -> int:
        """Like ``random.randrange``: the next value scaled into ``[low, high)``."""
        if high <= low:
            raise ValueError(f"empty range in randrange({low}, {high})")
        return low + int(self.random() * (high - low))


class TickingTime:
    """Stands in for the ``time`` module: ``time()`` moves forward one second per call, like a
    wall clock read at different moments (controllable, unlike the real one)."""

    def __init__(self, start: float = 1_735_689_600.0) -> None:
        self._lock = threading.Lock()
        self.now = start
        self.reads = 0

    def time(self) -> float:
        with self._lock:
            self.reads += 1
            self.now += 1.0
            return self.now


def instances_of(env: WorkflowTestEnv, workflow: str) -> list[str]:
    """Ids of every instance of ``workflow`` in the env's store."""
    page = env.service.list(workflow, limit=1000)
    assert page.cursor is None
    return sorted(record.id for record in page.records)


def step_rows(env_instance: Any) -> list[tuple[str, int, str, str, int]]:
    """The timeline as (name, count, type, status, attempts), root steps and nested ones."""
    return [(s.name, s.count, s.type, s.status, s.attempts) for s in env_instance.status().steps]


def run_one(
    workflow: type[WorkflowEntrypoint],
    fakes: dict[str, Any],
    name: str,
    instance_id: str,
    params: Any = None,
    *,
    max_invocations: int = 100_000,
) -> tuple[WorkflowTestEnv, Any]:
    """Register ``workflow`` as ``name`` on the fakes, create one instance, run until idle."""
    env = WorkflowTestEnv({name: workflow}, env=fakes)
    inst = env.create(name, id=instance_id, params=params)
    env.run_until_idle(max_invocations=max_invocations)
    return env, inst
