"""Lost firings of recurring schedules, started by the sweep (engine.firing_recovery) on the
in-memory store: one instance per firing time, no backfill before a schedule was first seen,
never a deleted or expired instance again, within the look-back, a bounded number per run.

A firing the test kit's clock made due but that ``run_until_idle`` has not delivered yet is,
to the recovery, a lost one: these tests move the clock and run the recovery before (or
instead of) delivering."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.engine.instances.firing_recovery import (
    FIRING_GRACE,
    FiringRecovery,
    FiringWatermarks,
    declared_series,
)
from lambda_workflows.engine.instances.schedules import schedules_of
from lambda_workflows.memory.schedules import MemoryFiringLedger
from lambda_workflows.testing import WorkflowTestEnv

START = datetime(2025, 1, 1, tzinfo=UTC)
DAY = 86_400.0


class Hourly(WorkflowEntrypoint):
    schedules = ("rate(1 hour)",)

    async def run(self, event: Any, step: Any) -> Any:
        return await step.do("report", lambda: {"for": event.payload["scheduled_time"]})


class HalfHourly(Hourly):
    schedules = ("rate(30 minutes)",)


class EveryMinute(Hourly):
    schedules = ("rate(1 minute)",)


class KeptAnHour(Hourly):
    retention: ClassVar[dict[str, str]] = {"success": "1 hour"}


class TwiceHourly(Hourly):
    schedules = ("rate(1 hour)", "cron(0 * * * ? *)")


class WeekdaysInParis(Hourly):
    schedules = ({"expression": "cron(0 9 ? * MON-FRI *)", "timezone": "Europe/Paris"},)


class Plain(WorkflowEntrypoint):
    async def run(self, event: Any, step: Any) -> None:
        return None


class Sweep:
    """The firing recovery of one sweep run after another, on an env's memory store."""

    def __init__(self, env: WorkflowTestEnv, retention: float = 30 * DAY) -> None:
        self.env = env
        self.ledger = MemoryFiringLedger(env.store)
        self.recovery = FiringRecovery(env.workflows, self.ledger, env.service, retention)

    def __call__(self, limit: int = 500) -> list[str]:
        return self.recovery.recover(self.env.clock.time(), limit).started


@pytest.fixture
def env() -> Iterator[WorkflowTestEnv]:
    with WorkflowTestEnv({"hourly": Hourly, "plain": Plain}, start=START) as made:
        yield made


def ids(env: WorkflowTestEnv, workflow: str = "hourly") -> list[str]:
    page = env.store.list_instances(workflow, None, None, 1000)
    return sorted(record.id for record in page.records)


def test_a_lost_firing_is_started_once_by_the_next_run_past_its_grace(
    env: WorkflowTestEnv,
) -> None:
    sweep = Sweep(env)
    # GIVEN the schedule seen by a first run at 00:00 (it starts nothing: no backfill)
    assert sweep() == []
    # WHEN the 01:00 firing is never delivered
    env.clock.advance("1 hour")
    # THEN a run within the grace leaves it to its delivery
    assert sweep() == []
    # AND the first run past the grace starts it, with the trigger's id and params
    env.clock.advance(FIRING_GRACE)
    assert sweep() == ["hourly-20250101T010000Z"]
    env.run_until_idle()  # delivers 01:00 late as well: its id is taken
    assert ids(env) == ["hourly-20250101T010000Z"]
    status = env.get("hourly", "hourly-20250101T010000Z").status()
    assert (status.status, status.output) == ("complete", {"for": "2025-01-01T01:00:00Z"})
    # AND no later run starts it again
    env.clock.advance("5 minutes")
    assert sweep() == []
    assert ids(env) == ["hourly-20250101T010000Z"]


def test_a_delivered_firing_is_not_started_again(env: WorkflowTestEnv) -> None:
    sweep = Sweep(env)
    sweep()
    env.clock.advance("2 hours")
    env.run_until_idle()  # both firings delivered
    env.clock.advance("5 minutes")
    assert sweep() == []
    assert sweep.ledger.read().through == {"hourly|" + key(Hourly) + "|-": at("02:00")}


def key(cls: type[WorkflowEntrypoint], index: int = 0) -> str:
    return schedules_of(cls)[index].key


def at(clock: str, day: int = 1) -> float:
    hour, minute = map(int, clock.split(":"))
    return datetime(2025, 1, day, hour, minute, tzinfo=UTC).timestamp()


def test_firings_before_the_schedule_was_first_seen_are_not_started(
    env: WorkflowTestEnv,
) -> None:
    sweep = Sweep(env)
    # GIVEN a ledger that has seen only workflows without schedules
    env.workflows.pop("hourly")
    sweep()
    env.clock.advance("3 hours")
    # WHEN the schedule is deployed at 03:00 and the sweep runs after each firing
    env.workflows["hourly"] = Hourly
    assert sweep() == []  # seen: 03:00 is its start
    env.clock.advance("65 minutes")
    # THEN only the firing after it is started
    assert sweep() == ["hourly-20250101T040000Z"]


def test_a_deleted_firing_instance_is_not_created_again(env: WorkflowTestEnv) -> None:
    sweep = Sweep(env)
    sweep()
    env.clock.advance("1 hour")
    env.run_until_idle()
    # WHEN its instance is deleted before the sweep ever saw it
    env.service.delete(env.get("hourly", "hourly-20250101T010000Z").ref)
    env.clock.advance("5 minutes")
    # THEN the tombstone counts as started: nothing is created, and the watermark moves on
    assert sweep() == []
    assert ids(env) == []
    assert list(sweep.ledger.read().through.values()) == [at("01:00")]


def test_a_firing_older_than_the_workflows_retention_is_not_started() -> None:
    with WorkflowTestEnv({"kept": KeptAnHour}, start=START) as env:
        sweep = Sweep(env)
        sweep()
        # GIVEN firings at 01:00, 02:00 and 03:00 never delivered, and no run meanwhile
        env.clock.advance("185 minutes")
        # THEN only the one younger than its retention (an hour) is started: the instances of
        # the others may have finished and expired, and must not start again
        assert sweep() == ["kept-20250101T030000Z"]


def test_firings_older_than_the_look_back_are_not_started(env: WorkflowTestEnv) -> None:
    sweep = Sweep(env)
    sweep()
    # GIVEN no sweep for two days and no firing delivered
    env.clock.advance("2 days")
    # THEN the firings of the last 24 hours (past the grace) are started, the older ones not
    started = sweep()
    assert len(started) == 23
    assert (started[0], started[-1]) == ("hourly-20250102T010000Z", "hourly-20250102T230000Z")


def test_a_run_starts_at_most_its_limit_earliest_first_and_the_next_goes_on() -> None:
    with WorkflowTestEnv({"minutely": EveryMinute}, start=START) as env:
        sweep = Sweep(env)
        sweep()
        env.clock.advance("12 minutes")  # 01..12 due, 11 and 12 within the grace
        assert sweep(limit=4) == [f"minutely-20250101T00{m:02d}00Z" for m in (1, 2, 3, 4)]
        assert sweep(limit=4) == [f"minutely-20250101T00{m:02d}00Z" for m in (5, 6, 7, 8)]
        assert sweep() == ["minutely-20250101T000900Z", "minutely-20250101T001000Z"]
        assert sweep() == []


def test_a_changed_expression_starts_afresh_and_the_old_one_leaves_the_ledger(
    env: WorkflowTestEnv,
) -> None:
    sweep = Sweep(env)
    sweep()
    env.clock.advance("65 minutes")
    assert sweep() == ["hourly-20250101T010000Z"]
    # WHEN the workflow is deployed with rate(30 minutes) at 01:05
    env.workflows["hourly"] = HalfHourly
    assert sweep() == []
    assert list(sweep.ledger.read().through) == [f"hourly|{key(HalfHourly)}|-"]
    env.clock.advance("1 hour")
    # THEN its firings from the deploy on are started
    assert sweep() == ["hourly-20250101T013000Z", "hourly-20250101T020000Z"]


def test_a_schedule_removed_then_added_again_is_not_backfilled(env: WorkflowTestEnv) -> None:
    sweep = Sweep(env)
    sweep()
    env.workflows["hourly"] = Plain  # deployed without its schedule
    sweep()
    assert sweep.ledger.read().through == {}
    env.clock.advance("3 hours")
    env.workflows["hourly"] = Hourly  # and with it again, at 03:00
    assert sweep() == []
    env.clock.advance("5 minutes")
    assert sweep() == []


def test_each_schedule_of_a_workflow_has_its_own_firings() -> None:
    with WorkflowTestEnv({"twice": TwiceHourly}, start=START) as env:
        sweep = Sweep(env)
        sweep()
        env.clock.advance("65 minutes")
        assert sorted(sweep()) == [
            "twice-20250101T010000Z",
            f"twice-20250101T010000Z-{key(TwiceHourly, 1)}",
        ]
        assert [s.name for s in declared_series(env.workflows)] == [
            f"twice|{key(TwiceHourly)}|-",
            f"twice|{key(TwiceHourly, 1)}|{key(TwiceHourly, 1)}",
        ]


def test_a_cron_in_a_time_zone_is_recovered_at_its_utc_time_across_a_dst_change() -> None:
    # 9:00 in Paris is 08:00Z until Sunday 2025-03-30, then 07:00Z
    with WorkflowTestEnv(
        {"paris": WeekdaysInParis}, start=datetime(2025, 3, 28, tzinfo=UTC)
    ) as env:
        sweep = Sweep(env)
        sweep()
        env.clock.advance("1 day")  # to Saturday 00:00Z, no firing delivered
        assert sweep() == ["paris-20250328T080000Z"]
        env.clock.advance("3 days")  # to Tuesday 00:00Z: none on the weekend
        assert sweep() == ["paris-20250331T070000Z"]


def test_a_ledger_written_meanwhile_is_not_overwritten(env: WorkflowTestEnv) -> None:
    ledger = MemoryFiringLedger(env.store)
    read = ledger.read()
    assert ledger.write({"a": 1.0}, read)
    assert not ledger.write({"a": 0.0}, read)  # an older read: refused
    assert ledger.read() == FiringWatermarks({"a": 1.0}, 1)


def test_a_registry_without_schedules_writes_nothing(env: WorkflowTestEnv) -> None:
    env.workflows.pop("hourly")
    sweep = Sweep(env)
    assert sweep() == []
    assert sweep.ledger.read().version == 0
