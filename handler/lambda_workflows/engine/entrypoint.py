"""What a workflow author subclasses and receives: WorkflowEntrypoint, WorkflowEvent, Env."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from .concurrency import check_concurrency
from .durations import Duration
from .errors import EventMutationError, InvalidWorkflowError
from .frozen import _RULE, freeze
from .logs import logger_name
from .retention import parse_retention
from .versions import DEFAULT_VERSION, VERSION_PATTERN

if TYPE_CHECKING:
    from .step import WorkflowStep

DEFAULT_MAX_STEPS = 10_000
MAX_MAX_STEPS = 25_000


class WorkflowEvent:
    """The event an instance was created with: ``payload``, ``timestamp``, ``instance_id``.

    Deep-immutable: assigning an attribute or changing the payload raises
    :class:`~lambda_workflows.EventMutationError` (rules of Workflows: don't mutate your incoming
    events).
    """

    __slots__ = ("instance_id", "payload", "timestamp")

    payload: Any
    timestamp: datetime
    instance_id: str

    def __init__(self, payload: Any, timestamp: datetime, instance_id: str) -> None:
        object.__setattr__(self, "payload", freeze(payload))
        object.__setattr__(self, "timestamp", timestamp)
        object.__setattr__(self, "instance_id", instance_id)

    def __setattr__(self, name: str, value: Any) -> None:
        raise EventMutationError(_RULE)

    def __delattr__(self, name: str) -> None:
        raise EventMutationError(_RULE)

    def __repr__(self) -> str:
        return (
            f"WorkflowEvent(instance_id={self.instance_id!r}, timestamp={self.timestamp!r}, "
            f"payload={self.payload!r})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WorkflowEvent) and (
            (self.payload, self.timestamp, self.instance_id)
            == (other.payload, other.timestamp, other.instance_id)
        )

    __hash__ = None  # type: ignore[assignment]


class Env:
    """``self.env`` in a workflow: configuration values and clients of other workflows.

    ``self.env.SOME_SETTING`` reads a configuration value; ``self.env.workflow("name")``
    returns a client of another registered workflow (create instances of it *inside* a
    ``step.do`` so a replay does not create them twice).
    """

    def __init__(
        self,
        values: Mapping[str, Any] | None = None,
        workflow_client: Callable[[str], Any] | None = None,
    ) -> None:
        self._values = dict(values or {})
        self._workflow_client = workflow_client

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(
                f"env has no value {name!r}; known values: {sorted(self._values) or 'none'} "
                "(pass them as env values to the runtime or test env)"
            ) from None

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def get(self, name: str, default: Any = None) -> Any:
        """A configuration value, or ``default``."""
        return self._values.get(name, default)

    def workflow(self, name: str) -> Any:
        """A client for the workflow registered as ``name``."""
        if self._workflow_client is None:
            raise AttributeError("this runtime offers no workflow clients in env")
        return self._workflow_client(name)


class WorkflowEntrypoint:
    """Base class of a workflow. Subclass it and implement ``async def run(event, step)``.

    ``run()`` is replayed from the top every time the instance resumes; only step results
    survive between replays, so keep every side effect and every non-deterministic value
    inside ``step.do`` callbacks.

    Class attributes:
        max_steps: how many steps one instance may record (default 10,000; at most 25,000).
        retention: how long a finished instance is kept, by outcome:
            ``{"success": "7 days", "error": "30 days"}`` (durations; either key optional,
            from 1 second to 3650 days). ``success`` applies once it is complete, ``error``
            once it is errored or terminated; a key left out (or no ``retention``) takes the
            runtime's retention (``RetentionDays`` in the template). A bad value raises
            :class:`~lambda_workflows.engine.errors.InvalidWorkflowError` when the class is defined.
        version: which version of the workflow this class is (a string, default ``"1"``;
            letters, digits, ``.``, ``_`` and ``-``, up to 64 characters). An instance is
            always replayed by the class of the version it was created with; bump it for a
            change that reorders, renames or removes steps and keep the old class registered
            as ``name@version`` until no instance runs on it (see the README's "Versions and
            safe deploys").
        concurrency: at most this many instances of the workflow are ``running`` at once (a
            whole number from 1 to 10,000; default None, no limit). The others stay
            ``queued`` (``status_reason`` says "waiting for a slot" and their place in line)
            and start oldest first as running ones finish, sleep, wait or pause.
        schedules: recurring schedules that each start an instance, in EventBridge
            Scheduler's syntax: ``["cron(0 9 ? * MON-FRI *)", "rate(1 hour)"]``, an entry being a
            string (UTC) or ``{"expression": ..., "timezone": "Europe/Paris"}``. Each firing starts
            the instance ``<name>-<UTC time>`` with params ``{"scheduled_time": ...}``, once however
            often it is delivered (see :mod:`lambda_workflows.engine.instances.schedules`). A bad
            expression raises :class:`~lambda_workflows.engine.instances.schedules.InvalidSchedule`
            when the workflow is registered.
    """

    max_steps: ClassVar[int] = DEFAULT_MAX_STEPS
    concurrency: ClassVar[int | None] = None
    retention: ClassVar[Mapping[str, Duration] | None] = None
    version: ClassVar[str] = DEFAULT_VERSION
    schedules: ClassVar[Sequence[str | Mapping[str, str]]] = ()

    env: Env
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger]
    """Replay-aware: run()-level lines are not repeated when run() is replayed (set by the
    engine for each pass; see ``lambda_workflows.engine.logs``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "retention" in cls.__dict__:  # checked where it is written, not when it first ends
            parse_retention(cls.retention, 0.0, f"class {cls.__module__}.{cls.__qualname__}")
        if "version" in cls.__dict__:
            _check_version(cls)
        if "concurrency" in cls.__dict__:
            check_concurrency(cls)

    def __init__(self, env: Env | None = None) -> None:
        self.env = env if env is not None else Env()
        self.logger = logging.getLogger(logger_name(type(self)))

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        """The workflow's body. Override it."""
        raise NotImplementedError(f"{type(self).__name__} must implement async def run()")


def _check_version(cls: type[WorkflowEntrypoint]) -> None:
    version = cls.__dict__["version"]
    if not isinstance(version, str) or not VERSION_PATTERN.match(version):
        raise InvalidWorkflowError(
            f"workflow class {cls.__module__}.{cls.__qualname__}: version must be a string of "
            "1 to 64 letters, digits, '.', '_' or '-' (not starting with '.' or '-'), like "
            f"'2' or '2024-06', got {version!r}"
        )
