"""AWS cron expressions (EventBridge Scheduler's syntax): parsing and the next matching time.

``cron(minutes hours day-of-month month day-of-week year)``, six fields:

========== ============= ==========================
field      values        wildcards
========== ============= ==========================
minutes    0-59          ``, - * /``
hours      0-23          ``, - * /``
day of mo. 1-31          ``, - * ? / L W``
month      1-12, JAN-DEC ``, - * /``
day of wk. 1-7, SUN-SAT  ``, - * ? L #``
year       1970-2199     ``, - * /``
========== ============= ==========================

One of day-of-month and day-of-week is ``?`` (the other one decides the day). ``L`` is the last
day of the month (day-of-month) or Saturday, the last day of the week (day-of-week);
``5L`` the month's last Thursday; ``3W`` the weekday nearest the 3rd within the month (``LW``:
the last weekday); ``3#2`` the second Tuesday. A range may wrap (``FRI-MON``, ``22-2``).

Pure: it works on naive wall-clock datetimes; :mod:`.schedules` adds the time zone.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from datetime import date, datetime, timedelta

from lambda_workflows.engine.immutable import immutable

CRON_SYNTAX = (
    "cron(minutes hours day-of-month month day-of-week year), e.g. cron(0 9 ? * MON-FRI *); "
    "one of day-of-month and day-of-week must be ?"
)
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
FIRST_YEAR, LAST_YEAR = 1970, 2199


class CronSyntaxError(ValueError):
    """A cron expression that EventBridge Scheduler would refuse; the message says why."""


@immutable
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    steps: bool = True


_MINUTES = _Field("minutes", 0, 59)
_HOURS = _Field("hours", 0, 23)
_DAY_OF_MONTH = _Field("day-of-month", 1, 31)
_MONTH = _Field("month", 1, 12, MONTHS)
_DAY_OF_WEEK = _Field("day-of-week", 1, 7, WEEKDAYS, steps=False)
_YEAR = _Field("year", FIRST_YEAR, LAST_YEAR)

_NTH = re.compile(r"^([A-Z0-9]+)#([1-5])$")
_LAST_WEEKDAY_OF = re.compile(r"^([A-Z0-9]+)L$")
_NEAREST_WEEKDAY = re.compile(r"^(\d{1,2})W$")


@immutable
class CronExpression:
    """A parsed cron expression; :meth:`matches_from` yields the wall-clock times it fires."""

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    months: frozenset[int]
    years: tuple[int, ...]
    day_of_month: tuple[str, ...] | None  # items, or None when it is "?"
    day_of_week: tuple[str, ...] | None

    def days(self, year: int, month: int) -> list[int]:
        """The days of ``month`` this expression fires on, in order."""
        last = calendar.monthrange(year, month)[1]
        found: set[int] = set()
        if self.day_of_month is not None:
            for item in self.day_of_month:
                found |= _month_days(item, year, month, last)
        else:
            for item in self.day_of_week or ():
                found |= _week_days(item, year, month, last)
        return sorted(found)

    def matches_from(self, start: datetime) -> Iterator[datetime]:
        """Every wall-clock minute at or after naive ``start`` that matches, in order."""
        floor = start.replace(second=0, microsecond=0)
        if floor < start:
            floor += timedelta(minutes=1)
        for year in self.years:
            if year < floor.year:
                continue
            for month in sorted(self.months):
                if (year, month) < (floor.year, floor.month):
                    continue
                for day in self.days(year, month):
                    if date(year, month, day) < floor.date():
                        continue
                    for hour in self.hours:
                        for minute in self.minutes:
                            moment = datetime(year, month, day, hour, minute)
                            if moment >= floor:
                                yield moment


def parse_cron(body: str) -> CronExpression:
    """Parse the inside of ``cron(...)``.

    Raises:
        CronSyntaxError: saying which field is wrong and why.
    """
    fields = body.split()
    if len(fields) != 6:
        raise CronSyntaxError(f"it has {len(fields)} fields, not 6")
    minute, hour, dom, month, dow, year = (f.upper() for f in fields)
    if (dom == "?") == (dow == "?"):
        raise CronSyntaxError(
            "exactly one of day-of-month and day-of-week must be ? (the other one picks the "
            f"days), got day-of-month {dom!r} and day-of-week {dow!r}"
        )
    return CronExpression(
        minutes=tuple(sorted(_values(minute, _MINUTES))),
        hours=tuple(sorted(_values(hour, _HOURS))),
        months=frozenset(_values(month, _MONTH)),
        years=tuple(sorted(_values(year, _YEAR))),
        day_of_month=None if dom == "?" else _day_of_month_items(dom),
        day_of_week=None if dow == "?" else _day_of_week_items(dow),
    )


def _values(text: str, field: _Field) -> set[int]:
    """The numbers a plain field (``, - * /``) stands for."""
    found: set[int] = set()
    for item in text.split(","):
        found |= _item_values(item, field)
    return found


def _item_values(item: str, field: _Field) -> set[int]:
    span, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not field.steps:
            raise CronSyntaxError(f"{field.name} takes no step (/), got {item!r}")
        if not step_text.isdigit() or int(step_text) < 1:
            raise CronSyntaxError(f"{field.name}: the step in {item!r} must be a positive number")
        step = int(step_text)
    if span == "*":
        first, last = field.low, field.high
    else:
        low_text, dash, high_text = span.partition("-")
        first = _number(low_text, field, item)
        last = _number(high_text, field, item) if dash else (field.high if slash else first)
    return _walk(first, last, step, field)


def _walk(first: int, last: int, step: int, field: _Field) -> set[int]:
    """first, first+step, ... up to last; a range whose end is below its start wraps."""
    width = field.high - field.low + 1
    count = (last - first) % width
    return {field.low + (first - field.low + k) % width for k in range(0, count + 1, step)}


def _number(text: str, field: _Field, item: str) -> int:
    if text in field.names:
        return field.names.index(text) + field.low
    if not text.isdigit() or not field.low <= int(text) <= field.high:
        names = f" or {field.names[0]}-{field.names[-1]}" if field.names else ""
        raise CronSyntaxError(
            f"{field.name} must be {field.low}-{field.high}{names}, got {text!r} in {item!r}"
        )
    return int(text)


def _day_of_month_items(text: str) -> tuple[str, ...]:
    items = tuple(text.split(","))
    for item in items:
        match = _NEAREST_WEEKDAY.match(item)
        if item in ("L", "LW"):
            continue
        if match:
            _number(match.group(1), _DAY_OF_MONTH, item)
            continue
        _item_values(item, _DAY_OF_MONTH)  # raises when malformed
    return items


def _day_of_week_items(text: str) -> tuple[str, ...]:
    items = tuple(text.split(","))
    for item in items:
        special = _NTH.match(item) or _LAST_WEEKDAY_OF.match(item)
        if item == "L":
            continue
        if special:
            _number(special.group(1), _DAY_OF_WEEK, item)
            continue
        _item_values(item, _DAY_OF_WEEK)
    return items


def _month_days(item: str, year: int, month: int, last: int) -> set[int]:
    if item == "L":
        return {last}
    if item == "LW":
        return {_nearest_weekday(last, year, month, last)}
    match = _NEAREST_WEEKDAY.match(item)
    if match:
        day = int(match.group(1))
        return {_nearest_weekday(day, year, month, last)} if day <= last else set()
    return {d for d in _item_values(item, _DAY_OF_MONTH) if d <= last}


def _nearest_weekday(day: int, year: int, month: int, last: int) -> int:
    """The Monday-to-Friday day nearest ``day``, never leaving the month."""
    weekday = date(year, month, day).weekday()  # Monday 0 ... Sunday 6
    if weekday == 5:  # Saturday: Friday before, unless that is last month
        return day - 1 if day > 1 else day + 2
    if weekday == 6:  # Sunday: Monday after, unless that is next month
        return day + 1 if day < last else day - 2
    return day


def _aws_weekday(year: int, month: int, day: int) -> int:
    """1 (Sunday) ... 7 (Saturday), as cron counts."""
    return (date(year, month, day).weekday() + 1) % 7 + 1


def _week_days(item: str, year: int, month: int, last: int) -> set[int]:
    days = range(1, last + 1)
    if item == "L":
        return {d for d in days if _aws_weekday(year, month, d) == 7}
    nth = _NTH.match(item)
    if nth:
        weekday, which = _number(nth.group(1), _DAY_OF_WEEK, item), int(nth.group(2))
        matching = [d for d in days if _aws_weekday(year, month, d) == weekday]
        return {matching[which - 1]} if which <= len(matching) else set()
    last_of = _LAST_WEEKDAY_OF.match(item)
    if last_of:
        weekday = _number(last_of.group(1), _DAY_OF_WEEK, item)
        return {max(d for d in days if _aws_weekday(year, month, d) == weekday)}
    weekdays = _item_values(item, _DAY_OF_WEEK)
    return {d for d in days if _aws_weekday(year, month, d) in weekdays}
