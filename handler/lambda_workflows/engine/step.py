"""``step`` — what ``run()`` receives: ``do``, ``sleep``, ``sleep_until``, ``wait_for_event``,
``run_workflow``.

This module validates the call (name, config, durations) at once, synchronously, so a bad call fails
where it is written; :mod:`lambda_workflows.engine.replay.operations` does the work, in the replay
pass that :class:`lambda_workflows.engine.replay.core.Replay` drives. The step reaches that pass
only through :class:`StepDriver`, so this module (which the operations import) imports nothing of
the replay.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar, overload

from . import codec
from .config import StepConfig, parse_config, parse_rollback_config
from .durations import (
    MAX_SLEEP_SECONDS,
    Duration,
    format_duration,
    parse_duration,
)
from .errors import InvalidInput, InvalidStepError, WorkflowError
from .immutable import immutable
from .limits import (
    check_event_type,
    check_id,
    check_step_name,
    check_workflow_name,
)
from .model import ReceivedEvent

T = TypeVar("T")

MIN_WAIT_TIMEOUT = 1.0
DEFAULT_WAIT_TIMEOUT = "24 hours"
DEFAULT_CHILD_TIMEOUT = "365 days"


@immutable
class StepIdentity:
    """``ctx.step``: the step's ``name`` and its 1-based occurrence ``count``."""

    name: str
    count: int


@immutable
class StepContext:
    """What a ``step.do`` callback may take as its one argument."""

    step: StepIdentity
    attempt: int
    config: dict[str, Any]


StepConfigLike = Mapping[str, Any] | StepConfig | None


@immutable
class StepRollback:
    """A step's rollback as ``step.do`` got it: ``undo(ctx, output, error)`` (sync or async)
    and its validated ``rollback_config`` (retries and timeout)."""

    undo: Callable[..., Any]
    config: StepConfig


class LinkedWait:
    """``step.wait_for_event(..., link=True)``: the wait, and its approval link's ``url``.

    Await it as the wait itself (it is awaited once, as every step is).
    """

    __slots__ = ("_waiting", "url")

    def __init__(self, url: str, waiting: Coroutine[Any, Any, ReceivedEvent]) -> None:
        self.url = url
        """``{api}/links/{token}``: GET shows a confirmation page, POST sends the event."""
        self._waiting = waiting

    def __await__(self) -> Generator[Any, None, ReceivedEvent]:
        return self._waiting.__await__()

    def __repr__(self) -> str:
        return "LinkedWait(url=<approval link>)"  # never the token: reprs reach logs


class StepDriver(Protocol):
    """What a :class:`WorkflowStep` asks of the replay pass that drives it (the pass's
    :class:`~lambda_workflows.engine.replay.core.Replay`)."""

    def track(self, name: str, body: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
        """Wrap a step's body so that a step never awaited, or still running, is reported."""
        ...

    def do(
        self,
        name: str,
        config: StepConfig,
        callback: Callable[..., Any],
        rollback: StepRollback | None = None,
    ) -> Coroutine[Any, Any, Any]:
        """The body of ``step.do``."""
        ...

    def sleep(
        self, name: str, seconds: float | None, until: float | None
    ) -> Coroutine[Any, Any, None]:
        """The body of ``step.sleep`` / ``step.sleep_until``."""
        ...

    def wait_for_event(
        self, name: str, event_type: str, timeout: float
    ) -> Coroutine[Any, Any, ReceivedEvent]:
        """The body of ``step.wait_for_event``."""
        ...

    def run_workflow(
        self, name: str, workflow: str, params: str, id: str | None, timeout: float
    ) -> Coroutine[Any, Any, Any]:
        """The body of ``step.run_workflow``."""
        ...

    def link_url(self, name: str, event_type: str, timeout: float) -> str:
        """The approval link of the wait ``name``."""
        ...


class WorkflowStep:
    """The step API handed to ``run()``. Every method must be awaited (or gathered)."""

    __slots__ = ("_replay",)

    def __init__(self, replay: StepDriver) -> None:
        self._replay = replay

    @overload
    def do(
        self,
        name: str,
        callback: Callable[..., Awaitable[T]],
        /,
        *,
        rollback: Callable[..., Any] | None = None,
        rollback_config: StepConfigLike = None,
    ) -> Coroutine[Any, Any, T]: ...

    @overload
    def do(
        self,
        name: str,
        callback: Callable[..., T],
        /,
        *,
        rollback: Callable[..., Any] | None = None,
        rollback_config: StepConfigLike = None,
    ) -> Coroutine[Any, Any, T]: ...

    @overload
    def do(
        self,
        name: str,
        config: StepConfigLike,
        callback: Callable[..., Awaitable[T]],
        /,
        *,
        rollback: Callable[..., Any] | None = None,
        rollback_config: StepConfigLike = None,
    ) -> Coroutine[Any, Any, T]: ...

    @overload
    def do(
        self,
        name: str,
        config: StepConfigLike,
        callback: Callable[..., T],
        /,
        *,
        rollback: Callable[..., Any] | None = None,
        rollback_config: StepConfigLike = None,
    ) -> Coroutine[Any, Any, T]: ...

    def do(
        self,
        name: str,
        *args: Any,
        rollback: Callable[..., Any] | None = None,
        rollback_config: StepConfigLike = None,
    ) -> Coroutine[Any, Any, Any]:
        """Run ``callback`` as a durable step and return its (decoded) result.

        Call as ``step.do(name, callback)`` or ``step.do(name, config, callback)``. Once the
        step has recorded a result, replays return that result without calling ``callback``.

        ``rollback=undo`` makes the step undoable (a saga): if the instance fails later (an
        uncaught error from ``run()``), or is terminated with ``rollback=True``, the rollbacks
        of the steps it started run in reverse order, each once, as durable steps of their
        own: ``undo(ctx, output, error)`` gets this step's context, its recorded output (None
        if it failed) and the instance's failure (an
        :class:`~lambda_workflows.engine.errors.InstanceFailedError`). ``rollback_config`` takes
        ``retries`` and ``timeout``, with a step's defaults.

        Raises:
            StepFailedError: the step failed for good (retries exhausted, NonRetryableError).
            InvalidStepError: bad name, config, rollback or rollback_config.
        """
        check_step_name(name)
        if len(args) == 1:
            config, callback = None, args[0]
        elif len(args) == 2:
            config, callback = args
        else:
            raise InvalidStepError(
                f"step.do({name!r}, ...) takes a callback, or a config and a callback; got "
                f"{len(args)} extra argument(s)"
            )
        if not callable(callback):
            raise InvalidStepError(
                f"step.do({name!r}, ...): the last argument must be a callable, not "
                f"{type(callback).__name__}"
            )
        parsed = parse_config(config)
        undo = _step_rollback(name, rollback, rollback_config)
        return self._replay.track(name, self._replay.do(name, parsed, callback, undo))

    def sleep(self, name: str, duration: Duration) -> Coroutine[Any, Any, None]:
        """Sleep durably for ``duration`` (``"3 hours"``, a timedelta, or seconds; ≤ 365 days).

        The instance holds no compute while it sleeps: the invocation ends and a wake-up is
        scheduled.
        """
        check_step_name(name)
        seconds = parse_duration(duration, what=f"duration of step.sleep({name!r})")
        _check_sleep_length(name, seconds)
        return self._replay.track(name, self._replay.sleep(name, seconds, None))

    def sleep_until(self, name: str, when: datetime | float | int) -> Coroutine[Any, Any, None]:
        """Sleep durably until ``when`` (an aware datetime or epoch seconds; ≤ 365 days ahead)."""
        check_step_name(name)
        if isinstance(when, datetime):
            if when.tzinfo is None:
                raise InvalidStepError(
                    f"step.sleep_until({name!r}, ...) needs an aware datetime (with tzinfo, "
                    "e.g. datetime.now(UTC)); a naive datetime is ambiguous"
                )
            at = when.timestamp()
        elif isinstance(when, int | float) and not isinstance(when, bool):
            at = float(when)
        else:
            raise InvalidStepError(
                f"step.sleep_until({name!r}, ...) takes an aware datetime or epoch seconds, "
                f"not {type(when).__name__}"
            )
        return self._replay.track(name, self._replay.sleep(name, None, at))

    @overload
    def wait_for_event(
        self,
        name: str,
        *,
        type: str,
        timeout: Duration = ...,
        link: Literal[False] = False,
    ) -> Coroutine[Any, Any, ReceivedEvent]: ...

    @overload
    def wait_for_event(
        self, name: str, *, type: str, timeout: Duration = ..., link: Literal[True]
    ) -> LinkedWait: ...

    def wait_for_event(
        self,
        name: str,
        *,
        type: str,
        timeout: Duration = DEFAULT_WAIT_TIMEOUT,
        link: bool = False,
    ) -> Coroutine[Any, Any, ReceivedEvent] | LinkedWait:
        """Wait for an event of ``type``; return ``{payload, timestamp, type}``.

        Events sent before the wait starts are buffered per type and delivered in order.

        With ``link=True`` the wait also gets an approval link: it returns a
        :class:`LinkedWait` at once, whose ``url`` (the same on every replay) opens a page that
        sends this one event, once, while the wait is pending; put the URL in an e-mail or chat
        message from a step, then ``await`` the wait::

            approval = step.wait_for_event("approval", type="approved", timeout="1 day",
                                           link=True)
            await step.do("ask", lambda: send_mail(to, f"Approve: {approval.url}"))
            event = await approval

        Raises:
            WorkflowTimeoutError: no event arrived within ``timeout`` (1 second to 365 days).
        """
        check_step_name(name)
        check_event_type(type)
        seconds = parse_duration(timeout, what=f"timeout of step.wait_for_event({name!r})")
        if not MIN_WAIT_TIMEOUT <= seconds <= MAX_SLEEP_SECONDS:
            raise InvalidStepError(
                f"step.wait_for_event({name!r}) timeout must be between 1 second and 365 days, "
                f"got {format_duration(seconds)}"
            )
        waiting = self._replay.track(name, self._replay.wait_for_event(name, type, seconds))
        if not link:
            return waiting
        return LinkedWait(self._replay.link_url(name, type, seconds), waiting)

    def run_workflow(
        self,
        name: str,
        *,
        workflow: str,
        params: Any = None,
        id: str | None = None,
        timeout: Duration = DEFAULT_CHILD_TIMEOUT,
    ) -> Coroutine[Any, Any, Any]:
        """Run an instance of the registered ``workflow`` as a child, and return its output.

        The child is created once (its id is derived from this instance's id and the step
        when ``id`` is None), the parent holds no compute while it runs, and the child's end
        wakes the parent. The child's status names its parent (``parent``), and this step's
        timeline row links the child (``child``). Terminating the parent terminates its
        children that are still running. ``params`` becomes the child's ``event.payload``.

        Raises:
            StepFailedError: the child errored (with its error's name and message), was
                terminated (``Terminated``), could not be created (its workflow is not
                registered, its id belongs to another instance), or did not finish within
                ``timeout`` (1 second to 365 days; 365 days by default).
            InvalidStepError: bad name, workflow name, id, params or timeout.
        """
        check_step_name(name)
        what = f"step.run_workflow({name!r})"
        try:
            check_workflow_name(workflow)
            if id is not None:
                check_id(id)
            encoded = codec.encode({} if params is None else params, what=f"params of {what}")
        except (InvalidInput, WorkflowError) as exc:
            raise InvalidStepError(f"{what}: {exc}") from None
        seconds = parse_duration(timeout, what=f"timeout of {what}")
        if not MIN_WAIT_TIMEOUT <= seconds <= MAX_SLEEP_SECONDS:
            raise InvalidStepError(
                f"{what} timeout must be between 1 second and 365 days, got "
                f"{format_duration(seconds)}"
            )
        body = self._replay.run_workflow(name, workflow, encoded, id, seconds)
        return self._replay.track(name, body)


def _step_rollback(
    name: str, undo: Callable[..., Any] | None, config: StepConfigLike
) -> StepRollback | None:
    """The step's validated rollback, or None when it has none."""
    if undo is None:
        if config is not None:
            raise InvalidStepError(
                f"step.do({name!r}, ...) got a rollback_config but no rollback; pass "
                "rollback=undo (a function (ctx, output, error)) or leave rollback_config out"
            )
        return None
    if not callable(undo):
        raise InvalidStepError(
            f"step.do({name!r}, ...): rollback must be a function (ctx, output, error), not "
            f"{type(undo).__name__}"
        )
    if not takes_three(undo):
        raise InvalidStepError(
            f"step.do({name!r}, ...): the rollback must take three arguments (ctx, output, "
            "error): the step's context, its recorded output (None if it failed) and the "
            "error that failed the instance"
        )
    if isinstance(config, StepConfig):
        return StepRollback(undo, config)
    return StepRollback(undo, parse_rollback_config(config, name))


def takes_three(undo: Callable[..., Any]) -> bool:
    """True when ``undo(ctx, output, error)`` can be called (or its signature is unknown)."""
    try:
        inspect.signature(undo).bind(None, None, None)
    except TypeError:
        return False
    except ValueError:  # no signature to read (some builtins): let the call tell
        return True
    return True


def _check_sleep_length(name: str, seconds: float) -> None:
    if seconds > MAX_SLEEP_SECONDS:
        raise InvalidStepError(
            f"step.sleep({name!r}) of {format_duration(seconds)} is longer than the 365-day "
            "limit; chain several sleeps if you really need longer"
        )
