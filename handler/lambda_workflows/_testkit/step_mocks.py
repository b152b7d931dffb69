"""The test kit's mocks: what a test registered for a step or an event wait of one instance.

:class:`StepMocks` is the runner's step interceptor in a ``WorkflowTestEnv`` (the engine's
``StepInterceptor``): before a new ``step.do`` attempt the runner asks it for a stand-in, and
before a ``step.wait_for_event`` waits, whether to time the wait out now. Mocked events are not
the engine's business at all: they are sent through the instance service, as a test would send
them, once their instance exists. See :mod:`lambda_workflows.testing` for the API that fills it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lambda_workflows.engine import codec
from lambda_workflows.engine.durations import format_duration
from lambda_workflows.engine.errors import InstanceNotFound, WorkflowTimeoutError
from lambda_workflows.engine.limits import check_event_type, check_step_name
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.engine.step import StepContext

__all__ = ["StepMocks"]

StandIn = Callable[[StepContext], Any]  # what an attempt does instead of the callback
EventSender = Callable[[InstanceRef, str, Any], object]


@dataclass
class _StepMock:
    """A stand-in for every attempt of one step, or for its first ``left`` attempts."""

    act: StandIn
    left: int | None = None


class StepMocks:
    """The mocks registered in one test env, keyed by instance and step name."""

    def __init__(self) -> None:
        self._steps: dict[tuple[InstanceRef, str], _StepMock] = {}
        self._event_timeouts: set[tuple[InstanceRef, str]] = set()
        self._events: list[tuple[InstanceRef, str, Any]] = []  # not sent yet: no instance

    # --- registering ----------------------------------------------------------------------

    def result(self, ref: InstanceRef, step_name: str, value: Any) -> None:
        """Every attempt of the step returns ``value``."""
        codec.encode(value, what=f"mocked result of step {step_name!r}")  # fails here, not later
        self._steps[ref, check_step_name(step_name)] = _StepMock(lambda ctx: value)

    def error(
        self, ref: InstanceRef, step_name: str, error: BaseException, times: int | None
    ) -> None:
        """Every attempt of the step (or its first ``times``) raises ``error``."""
        if not isinstance(error, BaseException):
            raise TypeError(f"error must be an exception instance, not {error!r}")
        mock = _StepMock(_raises(error), _check_times(times))
        self._steps[ref, check_step_name(step_name)] = mock

    def step_timeout(self, ref: InstanceRef, step_name: str, times: int | None) -> None:
        """Every attempt of the step (or its first ``times``) times out at once."""
        mock = _StepMock(_times_out, _check_times(times))
        self._steps[ref, check_step_name(step_name)] = mock

    def event_timeout(self, ref: InstanceRef, step_name: str) -> None:
        """The wait named ``step_name`` times out as soon as it is reached."""
        self._event_timeouts.add((ref, check_step_name(step_name)))

    def event(self, ref: InstanceRef, event_type: str, payload: Any) -> None:
        """An event to send to ``ref`` once it exists (see :meth:`send_events`)."""
        check_event_type(event_type)
        codec.encode(payload, what="event payload")
        self._events.append((ref, event_type, payload))

    def send_events(self, send: EventSender) -> None:
        """Send the mocked events whose instance exists now, in the order they were mocked;
        the others wait for their instance."""
        waiting, self._events = self._events, []
        for ref, event_type, payload in waiting:
            try:
                send(ref, event_type, payload)
            except InstanceNotFound:
                self._events.append((ref, event_type, payload))

    # --- what the runner asks (the engine's StepInterceptor) -------------------------------

    def stand_in(self, ref: InstanceRef, ctx: StepContext) -> Callable[..., Any] | None:
        """The mock's stand-in for this attempt, or None to call the callback."""
        mock = self._steps.get((ref, ctx.step.name))
        if mock is None or mock.left == 0:
            return None
        if mock.left is not None:
            mock.left -= 1

        async def attempt(*_: Any) -> Any:  # takes ctx when the callback does; no thread
            return mock.act(ctx)

        return attempt

    def event_timed_out(self, ref: InstanceRef, name: str, event_type: str) -> bool:
        """True when a test forced this wait's timeout."""
        return (ref, name) in self._event_timeouts


def _raises(error: BaseException) -> StandIn:
    def act(ctx: StepContext) -> Any:
        raise error.with_traceback(None)  # the same error each attempt, with a fresh traceback

    return act


def _times_out(ctx: StepContext) -> Any:
    """The engine's step-timeout error, worded as ``call_with_timeout`` words it."""
    timeout = format_duration(ctx.config["timeout"])
    raise WorkflowTimeoutError(
        f"step {ctx.step.name!r} attempt {ctx.attempt} timed out after {timeout}; raise the "
        "step's 'timeout' if it needs longer"
    )


def _check_times(times: int | None) -> int | None:
    if times is not None and (isinstance(times, bool) or not isinstance(times, int) or times < 1):
        raise ValueError(f"times must be a positive number of attempts or None, not {times!r}")
    return times
