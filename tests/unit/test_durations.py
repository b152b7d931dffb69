"""Durations: words, timedeltas, and plain numbers of seconds."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lambda_workflows import InvalidStepError
from lambda_workflows.engine.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1 second", 1),
        ("5 seconds", 5),
        ("2 minutes", 120),
        ("3 hours", 10_800),
        ("1 day", 86_400),
        ("2 weeks", 1_209_600),
        ("1 month", 30 * 86_400),
        ("1 year", 365.25 * 86_400),
        ("250 milliseconds", 0.25),
        ("1.5 hours", 5400),
        (" 10 Seconds ", 10),
        (90, 90),
        (0.5, 0.5),
        (timedelta(minutes=3), 180),
    ],
)
def test_parse_duration(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad", ["soon", "3 fortnights", "-1 seconds", -5, float("nan"), True, None]
)
def test_bad_durations_say_how_to_write_one(bad: object) -> None:
    with pytest.raises(InvalidStepError):
        parse_duration(bad)  # type: ignore[arg-type]


def test_format_duration() -> None:
    assert format_duration(10_800) == "3 hours"
    assert format_duration(60) == "1 minute"
    assert format_duration(1.5) == "1.5 seconds"
