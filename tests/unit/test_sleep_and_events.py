"""Sleeps pass in virtual time; events are buffered FIFO per type; waits time out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lambda_workflows import (
    InvalidStepError,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
    WorkflowTimeoutError,
)

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")


class Sleeper(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", "3 hours")
        return "rested"


def test_a_three_hour_sleep_completes_in_virtual_time(make_env: EnvFactory) -> None:
    env = make_env({"s": Sleeper})
    start = env.clock.time()
    inst = env.create("s", id="s")
    env.run_until_idle()
    assert inst.status().status == "complete"
    assert env.clock.time() - start == 3 * 3600
    assert env.invocations == 2  # one to start and sleep, one after the wake-up


def test_a_sleeping_instance_is_waiting_with_a_scheduled_wake_up(make_env: EnvFactory) -> None:
    env = make_env({"s": Sleeper})
    inst = env.create("s", id="s")
    env.run_once("s", "s")
    assert inst.status().status == "waiting"
    [wake_up] = env.pending_wake_ups()
    assert wake_up.at == env.clock.time() + 3 * 3600
    assert wake_up.reason == "sleep"


class SleepUntil(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        when = datetime.fromisoformat(event.payload["when"])
        await step.sleep_until("until", when)
        return "done"


def test_sleep_until_wakes_at_the_given_time(make_env: EnvFactory) -> None:
    env = make_env({"u": SleepUntil})
    target = env.clock.now() + timedelta(days=2)
    inst = env.create("u", id="u", params={"when": target.isoformat()})
    env.run_until_idle()
    assert inst.status().output == "done"
    assert env.clock.now() == target


class Durations(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("number is seconds", 90)
        await step.sleep("timedelta", timedelta(minutes=1))
        await step.sleep("word", "1 week")
        return None


def test_sleep_durations_accept_numbers_in_seconds_timedeltas_and_words(
    make_env: EnvFactory,
) -> None:
    env = make_env({"d": Durations})
    start = env.clock.time()
    env.create("d", id="d")
    env.run_until_idle()
    assert env.clock.time() - start == 90 + 60 + 7 * 86_400


def test_sleep_longer_than_365_days_is_rejected(make_env: EnvFactory) -> None:
    class TooLong(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            await step.sleep("forever", "366 days")

    env = make_env({"t": TooLong})
    inst = env.create("t", id="t")
    env.run_until_idle()
    assert inst.status().error is not None
    assert inst.status().error.name == "InvalidStepError"
    assert "365-day" in inst.status().error.message


def test_sleep_until_needs_an_aware_datetime() -> None:
    from lambda_workflows.engine.step import WorkflowStep as Step

    step = Step(replay=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidStepError, match="aware datetime"):
        step.sleep_until("naive", datetime(2030, 1, 1))
    with pytest.raises(InvalidStepError, match="not a duration"):
        step.sleep("bad", "3 fortnights")
    assert datetime(2030, 1, 1, tzinfo=UTC)  # aware datetimes are the accepted form


class Approval(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        try:
            approval = await step.wait_for_event("approval", type="approved", timeout="1 day")
        except WorkflowTimeoutError:
            return {"approved": False}
        return {"approved": True, "by": approval.payload["user"], "type": approval["type"]}


def test_wait_for_event_returns_payload_timestamp_and_type(make_env: EnvFactory) -> None:
    env = make_env({"a": Approval})
    inst = env.create("a", id="a")
    env.run_until_idle()
    assert inst.status().status == "waiting"
    env.clock.advance("2 hours")
    inst.send_event(type="approved", payload={"user": "ana"})
    env.run_until_idle()
    assert inst.status().output == {"approved": True, "by": "ana", "type": "approved"}


def test_an_event_sent_before_the_wait_is_buffered_and_delivered(make_env: EnvFactory) -> None:
    class SleepThenWait(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            await step.sleep("first", "1 hour")
            ev = await step.wait_for_event("approval", type="approved")
            return ev.payload

    env = make_env({"sw": SleepThenWait})
    inst = env.create("sw", id="sw")
    inst.send_event(type="approved", payload={"early": True})  # before run() even started
    env.run_until_idle()
    assert inst.status().output == {"early": True}


def test_buffered_events_are_delivered_first_in_first_out_per_type(make_env: EnvFactory) -> None:
    class TwoWaits(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            other = await step.wait_for_event("other", type="other")
            first = await step.wait_for_event("first", type="item")
            second = await step.wait_for_event("second", type="item")
            return [other.payload, first.payload, second.payload]

    env = make_env({"tw": TwoWaits})
    inst = env.create("tw", id="tw")
    inst.send_event(type="item", payload=1)
    inst.send_event(type="item", payload=2)
    inst.send_event(type="other", payload="o")
    env.run_until_idle()
    assert inst.status().output == ["o", 1, 2]


def test_wait_timeout_fires_only_when_the_test_moves_the_clock_past_it(
    make_env: EnvFactory,
) -> None:
    env = make_env({"a": Approval})
    inst = env.create("a", id="a")
    env.run_until_idle()
    env.run_until_idle()
    assert inst.status().status == "waiting"  # run_until_idle never skips an event timeout
    env.clock.advance("23 hours")
    env.run_until_idle()
    assert inst.status().status == "waiting"
    env.clock.advance("1 hour")
    env.run_until_idle()
    assert inst.status().output == {"approved": False}


def test_an_uncaught_wait_timeout_errors_the_instance(make_env: EnvFactory) -> None:
    class Strict(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            return await step.wait_for_event("ok", type="ok", timeout="1 minute")

    env = make_env({"s": Strict})
    inst = env.create("s", id="s")
    env.run_until_idle()
    env.clock.advance("1 minute")
    env.run_until_idle()
    assert inst.status().status == "errored"
    assert inst.status().error.name == "WorkflowTimeoutError"


def test_wait_timeout_must_be_between_one_second_and_365_days() -> None:
    from lambda_workflows.engine.step import WorkflowStep as Step

    step = Step(replay=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidStepError, match="between 1 second and 365 days"):
        step.wait_for_event("w", type="t", timeout=0.5)
    with pytest.raises(InvalidStepError, match="between 1 second and 365 days"):
        step.wait_for_event("w", type="t", timeout="400 days")
    with pytest.raises(InvalidStepError, match="event type"):
        step.wait_for_event("w", type="not valid!")
