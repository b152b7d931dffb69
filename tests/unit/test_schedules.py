"""Schedule expressions (EventBridge Scheduler's syntax): parsing, next firings, firing ids,
and their rejection at registration."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.engine.errors import ConfigurationError, InvalidInput, InvalidWorkflowError
from lambda_workflows.engine.instances.schedules import (
    InvalidSchedule,
    Schedule,
    firing,
    firing_id,
    firing_keys,
    parse_schedule,
    parse_schedules,
)
from lambda_workflows.registry import check_schedules
from lambda_workflows.testing import WorkflowTestEnv


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def utc(epochs: list[float]) -> list[str]:
    return [datetime.fromtimestamp(e, UTC).strftime("%Y-%m-%d %H:%M") for e in epochs]


def nexts(expression: str, after: str, count: int = 3, timezone: str = "UTC") -> list[str]:
    return utc(Schedule(expression, timezone).next_firings(at(after), count))


# --- cron -----------------------------------------------------------------------------------


def test_weekdays_at_nine_skip_the_weekend() -> None:
    # 2025-01-03 is a Friday
    assert nexts("cron(0 9 ? * MON-FRI *)", "2025-01-03T08:00:00", 3) == [
        "2025-01-03 09:00",
        "2025-01-06 09:00",
        "2025-01-07 09:00",
    ]


def test_a_firing_time_itself_is_not_next_after_itself() -> None:
    assert nexts("cron(0 9 * * ? *)", "2025-01-03T09:00:00", 1) == ["2025-01-04 09:00"]


def test_steps_lists_and_ranges() -> None:
    assert nexts("cron(0/20 8,17 * * ? *)", "2025-01-01T00:00:00", 4) == [
        "2025-01-01 08:00",
        "2025-01-01 08:20",
        "2025-01-01 08:40",
        "2025-01-01 17:00",
    ]
    assert nexts("cron(15 10-12/2 * * ? *)", "2025-01-01T00:00:00", 2) == [
        "2025-01-01 10:15",
        "2025-01-01 12:15",
    ]


def test_month_names_and_a_year() -> None:
    assert nexts("cron(0 0 1 JAN,JUL ? 2026-2027)", "2025-06-01T00:00:00", 5) == [
        "2026-01-01 00:00",
        "2026-07-01 00:00",
        "2027-01-01 00:00",
        "2027-07-01 00:00",
    ]


def test_L_is_the_last_day_of_the_month() -> None:
    assert nexts("cron(0 12 L * ? *)", "2024-01-15T00:00:00", 3) == [
        "2024-01-31 12:00",
        "2024-02-29 12:00",  # leap year
        "2024-03-31 12:00",
    ]


def test_W_is_the_nearest_weekday_within_the_month() -> None:
    # 2025-02-01 is a Saturday: the nearest weekday in February is Monday the 3rd (not
    # Friday 31 January); 2025-06-01 is a Sunday: Monday the 2nd; 2025-11-15 a Saturday: Friday
    assert nexts("cron(0 12 1W * ? *)", "2025-01-31T00:00:00", 1) == ["2025-02-03 12:00"]
    assert nexts("cron(0 12 1W * ? *)", "2025-05-31T00:00:00", 1) == ["2025-06-02 12:00"]
    assert nexts("cron(0 12 15W * ? *)", "2025-11-01T00:00:00", 1) == ["2025-11-14 12:00"]
    # LW: the last weekday (2025-05-31 is a Saturday)
    assert nexts("cron(0 12 LW * ? *)", "2025-05-01T00:00:00", 1) == ["2025-05-30 12:00"]


def test_hash_is_the_nth_weekday_of_the_month() -> None:
    # 3#2: the second Tuesday
    assert nexts("cron(0 12 ? * 3#2 *)", "2025-01-01T00:00:00", 3) == [
        "2025-01-14 12:00",
        "2025-02-11 12:00",
        "2025-03-11 12:00",
    ]
    # a fifth Monday exists in some months only
    assert nexts("cron(0 12 ? * MON#5 *)", "2025-01-01T00:00:00", 2) == [
        "2025-03-31 12:00",
        "2025-06-30 12:00",
    ]


def test_L_in_day_of_week() -> None:
    # 6L: the last Friday; L alone: Saturday, the last day of the week
    assert nexts("cron(0 12 ? * 6L *)", "2025-01-01T00:00:00", 2) == [
        "2025-01-31 12:00",
        "2025-02-28 12:00",
    ]
    assert nexts("cron(0 12 ? * L *)", "2025-01-01T00:00:00", 2) == [
        "2025-01-04 12:00",
        "2025-01-11 12:00",
    ]


def test_a_wrapping_range() -> None:
    # FRI-MON: Friday, Saturday, Sunday, Monday (2025-01-01 is a Wednesday)
    assert nexts("cron(0 0 ? * FRI-MON *)", "2025-01-01T00:00:00", 4) == [
        "2025-01-03 00:00",
        "2025-01-04 00:00",
        "2025-01-05 00:00",
        "2025-01-06 00:00",
    ]


def test_february_30th_never_fires_and_past_years_end_the_schedule() -> None:
    assert nexts("cron(0 0 30 2 ? *)", "2025-01-01T00:00:00") == []
    assert nexts("cron(0 0 1 1 ? 2030)", "2031-01-01T00:00:00") == []
    with pytest.raises(LookupError):
        Schedule("cron(0 0 1 1 ? 2030)").next_firing(at("2031-01-01T00:00:00"))


# --- time zones and daylight saving time ----------------------------------------------------


def test_cron_in_a_time_zone_follows_its_wall_clock() -> None:
    # 09:00 in Paris is 08:00 UTC in winter, 07:00 UTC in summer
    assert nexts("cron(0 9 * * ? *)", "2025-01-10T00:00:00", 1, "Europe/Paris") == [
        "2025-01-10 08:00"
    ]
    assert nexts("cron(0 9 * * ? *)", "2025-07-10T00:00:00", 1, "Europe/Paris") == [
        "2025-07-10 07:00"
    ]


def test_a_time_skipped_in_spring_does_not_fire() -> None:
    # Paris moves from 02:00 to 03:00 on 2025-03-30: 02:30 does not exist that day
    assert nexts("cron(30 2 * * ? *)", "2025-03-29T00:00:00", 3, "Europe/Paris") == [
        "2025-03-29 01:30",
        "2025-03-31 00:30",
        "2025-04-01 00:30",
    ]


def test_a_time_repeated_in_autumn_fires_once() -> None:
    # New York goes back from 02:00 EDT to 01:00 EST on 2025-11-02: 01:00 and 01:30 happen
    # twice; each fires the first time only (EDT, UTC-4)
    assert nexts("cron(0/30 1-2 * * ? *)", "2025-11-02T04:00:00", 4, "America/New_York") == [
        "2025-11-02 05:00",
        "2025-11-02 05:30",
        "2025-11-02 07:00",  # 02:00 EST
        "2025-11-02 07:30",
    ]


# --- rate -----------------------------------------------------------------------------------


def test_rate_firings_are_aligned_on_the_period() -> None:
    assert nexts("rate(1 hour)", "2025-01-01T00:00:00") == [
        "2025-01-01 01:00",
        "2025-01-01 02:00",
        "2025-01-01 03:00",
    ]
    assert nexts("rate(15 minutes)", "2025-01-01T10:07:00", 2) == [
        "2025-01-01 10:15",
        "2025-01-01 10:30",
    ]
    assert nexts("rate(1 day)", "2025-01-01T10:07:00", 1) == ["2025-01-02 00:00"]


def test_firings_between_two_times() -> None:
    schedule = Schedule("rate(1 hour)")
    found = list(schedule.firings(at("2025-01-01T00:00:00"), at("2025-01-01T03:00:00")))
    assert utc(found) == ["2025-01-01 01:00", "2025-01-01 02:00", "2025-01-01 03:00"]


# --- ids ------------------------------------------------------------------------------------


def test_the_firing_id_is_the_workflow_and_the_utc_time() -> None:
    assert firing_id("report", at("2025-01-01T09:00:00")) == "report-20250101T090000Z"
    assert firing("report", "2025-01-01T09:00:00Z") == (
        "report-20250101T090000Z",
        {"scheduled_time": "2025-01-01T09:00:00Z"},
    )
    with pytest.raises(InvalidInput, match="ISO 8601"):
        firing("report", "yesterday")


# --- rejected expressions -------------------------------------------------------------------

BAD = [
    ("cron(0 9 * * MON-FRI *)", "exactly one of day-of-month and day-of-week must be ?"),
    ("cron(0 9 ? * ? *)", "exactly one of day-of-month and day-of-week must be ?"),
    ("cron(0 9 ? * MON-FRI)", "5 fields, not 6"),
    ("cron(60 * * * ? *)", "minutes must be 0-59"),
    ("cron(0 24 * * ? *)", "hours must be 0-23"),
    ("cron(0 0 ? * 8 *)", "day-of-week must be 1-7 or SUN-SAT"),
    ("cron(0 0 ? FOO * *)", "month must be 1-12 or JAN-DEC"),
    ("cron(0 0 ? * 1/2 *)", "day-of-week takes no step"),
    ("cron(0 0 ? * 2#6 *)", "day-of-week must be"),
    ("cron(0 0 1 * ? 1969)", "year must be 1970-2199"),
    ("rate(1 hours)", "not a valid rate expression"),
    ("rate(5 minute)", "not a valid rate expression"),
    ("rate(0 minutes)", "not a valid rate expression"),
    ("rate(1 week)", "not a valid rate expression"),
    ("at(2025-01-01T00:00:00)", "fires once"),
    ("every hour", "not a schedule expression"),
]


@pytest.mark.parametrize(("expression", "reason"), BAD)
def test_a_bad_expression_is_rejected_with_the_aws_syntax(expression: str, reason: str) -> None:
    with pytest.raises(InvalidSchedule) as caught:
        parse_schedule(expression)
    message = str(caught.value)
    assert reason in message
    assert "cron(minutes hours day-of-month month day-of-week year)" in message
    assert "rate(value unit)" in message


@pytest.mark.parametrize(
    "entries",
    [
        "rate(1 hour)",  # not a list
        [{"expression": "rate(1 hour)", "zone": "UTC"}],  # unknown key
        [{"expression": "rate(1 hour)", "timezone": "Mars/Olympus"}],
        [3600],
        ["rate(1 hour)", "rate(1 hour)"],
    ],
)
def test_bad_entries_are_rejected(entries: Any) -> None:
    with pytest.raises(InvalidSchedule):
        parse_schedules(entries)


def test_entries_are_strings_or_dicts_with_a_timezone() -> None:
    assert parse_schedules(
        ["rate(1 hour)", {"expression": "cron(0 9 ? * MON-FRI *)", "timezone": "Europe/Paris"}]
    ) == (Schedule("rate(1 hour)"), Schedule("cron(0 9 ? * MON-FRI *)", "Europe/Paris"))


class BadSchedule(WorkflowEntrypoint):
    schedules = ("cron(0 9 * * MON-FRI *)",)

    async def run(self, event: Any, step: Any) -> None:
        return None


def test_registration_rejects_a_bad_schedule_naming_the_workflow() -> None:
    # GIVEN a class with a bad cron expression (defining it is fine)
    # WHEN it is registered: WORKFLOWS or the test kit
    with pytest.raises(InvalidSchedule, match=r"workflow reports .*cron\(minutes hours") as caught:
        check_schedules({"reports": BadSchedule})
    # THEN the error is a configuration error and an invalid workflow both
    assert isinstance(caught.value, ConfigurationError)
    assert isinstance(caught.value, InvalidWorkflowError)
    with pytest.raises(InvalidSchedule, match="exactly one of day-of-month"):
        WorkflowTestEnv({"reports": BadSchedule})


def test_registration_through_workflows_rejects_a_bad_schedule() -> None:
    from lambda_workflows.registry import load_workflows

    with pytest.raises(ConfigurationError, match=r"workflow reports .*rate\(value unit\)"):
        load_workflows(f"reports={__name__}:BadSchedule")


def test_a_cron_expression_is_written_as_scheduler_takes_it() -> None:
    assert parse_schedule("cron(0  9 ? * mon-fri *)") == Schedule("cron(0 9 ? * MON-FRI *)")


# --- the trigger message a firing sends -----------------------------------------------------


def test_the_trigger_turns_a_firing_into_its_instance() -> None:
    from lambda_workflows.entrypoints.trigger import Creation, from_message

    body = '{"workflow": "report", "scheduled_time": "2025-01-06T08:00:00Z"}'
    assert from_message(body, "message-1") == Creation(
        "report", "report-20250106T080000Z", {"scheduled_time": "2025-01-06T08:00:00Z"}
    )
    # the same firing in another message (a redelivery by Scheduler): the same instance
    assert from_message(body, "message-2").id == "report-20250106T080000Z"


def test_a_firing_of_a_workflows_other_schedule_carries_its_key_into_the_id() -> None:
    from lambda_workflows.entrypoints.trigger import from_message

    body = (
        '{"workflow": "report", "scheduled_time": "2025-01-06T08:00:00Z", "schedule": "0a1b2c3d"}'
    )
    assert from_message(body, "m").id == "report-20250106T080000Z-0a1b2c3d"


def test_each_schedule_but_the_first_has_a_key_of_its_expression_and_zone() -> None:
    first, other, zoned = parse_schedules(
        [
            "rate(1 hour)",
            "cron(0 * * * ? *)",
            {"expression": "cron(0 * * * ? *)", "timezone": "Asia/Tokyo"},
        ]
    )
    keys = [key for _, key in firing_keys([first, other, zoned])]
    assert keys[0] is None and keys[1] == other.key and keys[2] == zoned.key
    assert other.key != zoned.key and re.fullmatch(r"[0-9a-f]{8}", other.key)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"workflow": "report", "scheduled_time": "soon"}', "ISO 8601"),
        ('{"workflow": "report", "scheduled_time": "2025-01-06T08:00:00Z", "id": "x"}', "only"),
        (
            '{"workflow": "report", "scheduled_time": "2025-01-06T08:00:00Z", "schedule": "x"}',
            "8 hex",
        ),
        ('{"workflow": "report", "schedule": "0a1b2c3d"}', "ISO 8601"),
    ],
)
def test_a_malformed_firing_is_refused(body: str, reason: str) -> None:
    from lambda_workflows.entrypoints.trigger import from_message

    with pytest.raises(InvalidInput, match=reason):
        from_message(body, "message-1")
