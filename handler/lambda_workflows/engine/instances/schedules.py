"""Recurring schedules a workflow declares: ``schedules = ["cron(...)", "rate(...)"]``.

Each entry is EventBridge Scheduler's expression syntax, as a string (evaluated in UTC) or a dict
``{"expression": "cron(0 9 ? * MON-FRI *)", "timezone": "Europe/Paris"}`` (an IANA time zone; a cron
expression is evaluated on that zone's wall clock, daylight saving time included). Every firing
starts one instance of the workflow, with the id ``<name>-<UTC time>`` (:func:`firing_id`), so a
firing delivered twice starts one instance (and one lost on its way is started by the sweep:
:mod:`lambda_workflows.engine.instances.firing_recovery`).

``rate(value unit)`` fires every ``value`` minutes, hours or days, of fixed length (a day is 24
hours, as on EventBridge Scheduler). Rate firings are aligned on the period counted from
1970-01-01T00:00:00Z (``rate(1 hour)`` fires on the hour, ``rate(1 day)`` at midnight UTC,
``rate(15 minutes)`` at :00, :15, :30 and :45), the way Temporal aligns interval schedules:
the next firings can be computed from the expression alone, and are the same in
``lambda-workflows dev``, the test kit and on AWS (where each rate schedule gets the ``StartDate``
of its next aligned time).

Cron firings in a time zone follow EventBridge Scheduler's daylight saving rules: a wall-clock
time that does not exist (the hour skipped in spring) does not fire; one that happens twice
(the hour repeated in autumn) fires once, the first time.

Pure: no clock reads (every function takes the time), no AWS.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from lambda_workflows.engine.errors import ConfigurationError, InvalidInput, InvalidWorkflowError
from lambda_workflows.engine.immutable import immutable

from .cron import (
    CRON_SYNTAX,
    CronExpression,
    CronSyntaxError,
    parse_cron,
)

RATE_SYNTAX = (
    "rate(value unit), e.g. rate(1 hour) or rate(15 minutes); unit is minute, hour or day "
    "(plural when value is over 1)"
)
SYNTAX = f"write {CRON_SYNTAX}; or {RATE_SYNTAX}"
_RATE = re.compile(r"^rate\(\s*(\d+)\s+([a-z]+)\s*\)$")
_CRON = re.compile(r"^cron\((.*)\)$", re.DOTALL)
_KEY = re.compile(r"[0-9a-f]{8}")
_UNITS = {"minute": 60, "hour": 3600, "day": 86400}
MAX_FIRINGS = 100
"""Firings of one schedule delivered at once at most, the latest (by the local runtime and the
test kit, when their clock moves): moving a clock a year ahead does not start 500,000
instances of a ``rate(1 minute)``."""


class InvalidSchedule(InvalidWorkflowError, ConfigurationError):
    """A schedule EventBridge Scheduler would refuse; the message gives the syntax.

    Raised when the workflow is registered (``WORKFLOWS``, the test kit), before anything is
    deployed: an :class:`InvalidWorkflowError` and a :class:`ConfigurationError` both."""

    code = "invalid_schedule"


@immutable
class Schedule:
    """One recurring schedule: an expression and the time zone it is evaluated in."""

    expression: str
    timezone: str = "UTC"

    @property
    def key(self) -> str:
        """Eight hex digits naming this schedule among its workflow's: a digest of its
        expression and time zone (stable across deploys and reordering)."""
        identity = f"{self.expression}|{self.timezone}".encode()
        return hashlib.sha256(identity).hexdigest()[:8]

    @property
    def is_rate(self) -> bool:
        """True for ``rate(...)``."""
        return self.expression.startswith("rate(")

    def next_firing(self, after: float) -> float:
        """The first firing strictly after ``after`` (epoch seconds).

        Raises:
            LookupError: the schedule never fires again (a cron whose years are all past).
        """
        for at in self.firings(after):
            return at
        raise LookupError(f"{self.expression} never fires after {after}")

    def next_firings(self, after: float, count: int) -> list[float]:
        """Up to ``count`` firings strictly after ``after``, earliest first."""
        found: list[float] = []
        for at in self.firings(after):
            if len(found) == count:
                break
            found.append(at)
        return found

    def firings(self, after: float, until: float | None = None) -> Iterator[float]:
        """Every firing strictly after ``after`` (and at or before ``until``), in order."""
        source = self._rate_firings(after) if self.is_rate else self._cron_firings(after)
        for at in source:
            if until is not None and at > until:
                return
            yield at

    def _rate_firings(self, after: float) -> Iterator[float]:
        period = rate_seconds(self.expression)
        at = (int(after // period) + 1) * period
        while True:
            yield float(at)
            at += period

    def _cron_firings(self, after: float) -> Iterator[float]:
        from zoneinfo import ZoneInfo  # only cron needs it; at import it costs every handler

        cron = _cron_of(self.expression)
        zone = ZoneInfo(self.timezone)
        start = datetime.fromtimestamp(after, zone).replace(tzinfo=None) + timedelta(seconds=1)
        for wall in cron.matches_from(start):
            moment = wall.replace(tzinfo=zone)  # fold=0: a repeated time fires the first time
            if moment.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != wall:
                continue  # skipped by a daylight saving change: it does not fire
            at = moment.timestamp()
            if at > after:
                yield at


@immutable
class Firing:
    """One firing of a workflow's schedule: the instance it starts (``<workflow>-<UTC
    time>``), when, and which expression fired."""

    workflow: str
    id: str
    at: float
    expression: str


def describe_schedules(workflow: str, cls: Any, now: float, count: int = 3) -> list[dict[str, Any]]:
    """What ``GET /workflows/{name}`` shows of the schedules of ``workflow`` (class ``cls``):
    each one's ``expression``, ``timezone``, its next ``count`` firings after ``now`` (ISO
    8601, UTC) and the instance id each will start (``next_ids``)."""
    described = []
    for schedule, key in firing_keys(schedules_of(cls)):
        times = schedule.next_firings(now, count)
        described.append(
            {
                "expression": schedule.expression,
                "timezone": schedule.timezone,
                "next_firings": [scheduled_time(at) for at in times],
                "next_ids": [firing_id(workflow, at, key) for at in times],
            }
        )
    return described


def parse_schedule(entry: Any) -> Schedule:
    """One ``schedules`` entry: a string, or ``{"expression": ..., "timezone": ...}``.

    Raises:
        InvalidSchedule: saying what is wrong, with the syntax to write.
    """
    if isinstance(entry, str):
        expression, timezone = entry, "UTC"
    elif isinstance(entry, Mapping):
        unknown = sorted(set(map(str, entry)) - {"expression", "timezone"})
        if unknown or "expression" not in entry:
            raise InvalidSchedule(
                f"schedule {dict(entry)!r}: a dict takes the keys expression and timezone "
                '(e.g. {"expression": "cron(0 9 ? * MON-FRI *)", "timezone": "Europe/Paris"})'
            )
        expression, timezone = entry["expression"], entry.get("timezone", "UTC")
    else:
        raise InvalidSchedule(
            f"schedule {entry!r} must be a string such as 'rate(1 hour)' or a dict "
            '{"expression": ..., "timezone": ...}; ' + SYNTAX
        )
    if not isinstance(expression, str) or not isinstance(timezone, str):
        raise InvalidSchedule(f"schedule {entry!r}: expression and timezone must be strings")
    _check_timezone(timezone, expression)
    schedule = Schedule(_normal(expression), timezone)
    _check_expression(schedule.expression)
    return schedule


def _normal(expression: str) -> str:
    """A cron expression as EventBridge Scheduler surely takes it: fields one space apart,
    names upper case (``cron(0 9 ? * mon-fri *)`` → ``cron(0 9 ? * MON-FRI *)``)."""
    match = _CRON.match(expression.strip())
    if match is None:
        return expression.strip()
    return f"cron({' '.join(match.group(1).split()).upper()})"


def parse_schedules(entries: Any) -> tuple[Schedule, ...]:
    """A class's ``schedules`` (a list of entries; None or empty: none).

    Raises:
        InvalidSchedule: naming the entry at fault.
    """
    if entries is None:
        return ()
    if isinstance(entries, str | Mapping) or not isinstance(entries, Sequence):
        raise InvalidSchedule(
            f"schedules must be a list, e.g. ['rate(1 hour)'], not {type(entries).__name__}"
        )
    parsed: list[Schedule] = []
    for entry in entries:
        schedule = parse_schedule(entry)
        if schedule in parsed:
            raise InvalidSchedule(f"schedule {schedule.expression!r} is listed twice")
        parsed.append(schedule)
    return tuple(parsed)


def schedules_of(cls: Any) -> tuple[Schedule, ...]:
    """The schedules a workflow class declares (its ``schedules`` attribute)."""
    return parse_schedules(getattr(cls, "schedules", None))


def rate_seconds(expression: str) -> int:
    """The period of ``rate(value unit)`` in seconds.

    Raises:
        InvalidSchedule: not a valid rate expression.
    """
    match = _RATE.match(expression)
    if match is None:
        raise InvalidSchedule(f"schedule {expression!r} is not a valid rate expression; {SYNTAX}")
    value, unit = int(match.group(1)), match.group(2)
    singular = unit.removesuffix("s")
    if singular not in _UNITS or value < 1 or (unit == singular) != (value == 1):
        raise InvalidSchedule(f"schedule {expression!r} is not a valid rate expression; {SYNTAX}")
    return value * _UNITS[singular]


def firing_id(workflow: str, at: float, key: str | None = None) -> str:
    """The id of the instance a firing at ``at`` starts: ``<workflow>-<UTC time>``, the time as
    ``YYYYMMDDTHHMMSSZ`` (an instance id allows no ``:``), e.g. ``report-20250101T090000Z``;
    for a schedule that is not its workflow's first, ``-<key>`` follows (:func:`firing_keys`),
    so two schedules firing at the same time start two instances."""
    moment = datetime.fromtimestamp(at, UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{workflow}-{moment}" if key is None else f"{workflow}-{moment}-{key}"


def firing_keys(schedules: Sequence[Schedule]) -> list[tuple[Schedule, str | None]]:
    """Each schedule of a workflow with the key its firings' ids carry: none for the first (its
    ids are ``<workflow>-<UTC time>``, as when a workflow had one schedule), its
    :attr:`Schedule.key` for each other."""
    return [(schedule, None if i == 0 else schedule.key) for i, schedule in enumerate(schedules)]


def firing(workflow: str, scheduled: Any, key: Any = None) -> tuple[str, dict[str, str]]:
    """The instance id and params of the firing of ``workflow``'s schedule at ``scheduled``
    (EventBridge Scheduler's ``<aws.scheduler.scheduled-time>``, ``2025-01-01T09:00:00Z``):
    ``(firing_id(...), {"scheduled_time": "2025-01-01T09:00:00Z"})``; ``key`` names the
    schedule (None: the workflow's first).

    Raises:
        InvalidInput: ``scheduled`` is not an ISO 8601 time, or ``key`` is not a schedule's.
    """
    if key is not None and not (isinstance(key, str) and _KEY.fullmatch(key)):
        raise InvalidInput(f"a firing's schedule key is 8 hex digits, not {key!r}")
    try:
        moment = datetime.fromisoformat(str(scheduled).strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"scheduled_time {scheduled!r} is not an ISO 8601 time such as 2025-01-01T09:00:00Z"
        ) from None
    at = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    return firing_id(workflow, at, key), {"scheduled_time": scheduled_time(at)}


def scheduled_time(at: float) -> str:
    """``at`` as EventBridge Scheduler writes ``<aws.scheduler.scheduled-time>``."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_timezone(timezone: str, expression: Any) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # see _cron_firings

    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidSchedule(
            f"schedule {expression!r}: unknown time zone {timezone!r}; use an IANA name such "
            "as 'UTC', 'Europe/Paris' or 'America/New_York'"
        ) from None


def _check_expression(expression: str) -> None:
    if expression.startswith("rate("):
        rate_seconds(expression)
    elif expression.startswith("cron("):
        _cron_of(expression)
    elif expression.startswith("at("):
        raise InvalidSchedule(
            f"schedule {expression!r} fires once; a workflow's schedules recur: {SYNTAX}"
        )
    else:
        raise InvalidSchedule(f"schedule {expression!r} is not a schedule expression; {SYNTAX}")


def _cron_of(expression: str) -> CronExpression:
    match = _CRON.match(expression)
    try:
        if match is None:
            raise CronSyntaxError("it is not of the form cron(...)")
        return parse_cron(match.group(1))
    except CronSyntaxError as exc:
        raise InvalidSchedule(
            f"schedule {expression!r} is not a valid cron expression ({exc}); {SYNTAX}"
        ) from None
