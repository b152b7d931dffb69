"""How long a finished instance is kept, by how it finished: a workflow's ``retention``.

A workflow class may declare ``retention = {"success": "7 days", "error": "30 days"}``
(durations; either key optional). When an instance finishes, its TTL (``expires_at``) is the
finish time plus the retention of its outcome: ``complete`` keeps it for ``success``,
``errored`` and ``terminated`` for ``error``. A key left out takes the runtime's retention
(``RetentionDays`` in the template). The declaration is checked when the class is defined and
again when a runner or the instance service is built with it, so a bad one fails before any
instance runs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import timedelta
from typing import Any

from .durations import format_duration, parse_duration
from .errors import InvalidStepError, InvalidWorkflowError
from .immutable import immutable
from .model import InstanceStatus

__all__ = ["MAX_RETENTION_SECONDS", "OUTCOMES", "Retention", "parse_retention", "retention_of"]

OUTCOMES = ("success", "error")
MAX_RETENTION_SECONDS = 3650 * 86_400.0  # the template's RetentionDays allows up to 3650


@immutable
class Retention:
    """Seconds a finished instance is kept: after ``success`` (complete) or ``error``
    (errored, terminated)."""

    success: float
    error: float

    def after(self, status: InstanceStatus) -> float:
        """The retention of an instance that finished with ``status``."""
        return self.success if status is InstanceStatus.COMPLETE else self.error


def parse_retention(raw: Any, default: float, workflow: str) -> Retention:
    """A workflow's ``retention`` declaration, with ``default`` seconds for a key left out.

    Args:
        raw: the class attribute: None, or a dict with ``success`` and/or ``error`` durations.
        default: the runtime's retention, in seconds.
        workflow: how to name the workflow in an error.

    Raises:
        InvalidWorkflowError: not a dict, an unknown key, or a value that is not a duration
            from 1 second to 3650 days.
    """
    if raw is None:
        return Retention(default, default)
    if not isinstance(raw, Mapping):
        raise InvalidWorkflowError(
            f"workflow {workflow}: retention must be a dict like {{'success': '7 days', "
            f"'error': '30 days'}}, not {type(raw).__name__}"
        )
    unknown = sorted(str(key) for key in raw if key not in OUTCOMES)
    if unknown:
        raise InvalidWorkflowError(
            f"workflow {workflow}: unknown key(s) {', '.join(map(repr, unknown))} in retention; "
            "allowed: success (kept after complete), error (kept after errored or terminated)"
        )
    success, error = (
        _seconds(raw[outcome], workflow, outcome) if outcome in raw else default
        for outcome in OUTCOMES
    )
    return Retention(success, error)


def _seconds(value: Any, workflow: str, outcome: str) -> float:
    what = f"workflow {workflow}: retention[{outcome!r}]"
    if not isinstance(value, str | int | float | timedelta):
        raise InvalidWorkflowError(
            f"{what} must be a duration like '7 days', a timedelta or a number of seconds, "
            f"not {type(value).__name__}"
        )
    try:
        seconds = parse_duration(value, what=what)
    except InvalidStepError as exc:
        raise InvalidWorkflowError(str(exc)) from None
    if not 1.0 <= seconds <= MAX_RETENTION_SECONDS:
        raise InvalidWorkflowError(
            f"{what} must be from 1 second to 3650 days, got {format_duration(seconds)}"
        )
    return seconds


def retention_of(workflows: Collection[str], name: str, default: float) -> Retention:
    """The retention of the workflow registered as ``name``.

    ``lambda_workflows`` is the registry (name → class); a plain collection of names, or a name it
    does not hold, gives ``default`` for both outcomes.
    """
    cls = workflows.get(name) if isinstance(workflows, Mapping) else None
    return parse_retention(getattr(cls, "retention", None), default, repr(name))
