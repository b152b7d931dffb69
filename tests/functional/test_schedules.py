"""Recurring schedules: fired in virtual time on both backends, deployed as EventBridge
Scheduler schedules and reconciled by the sweep (moto's Scheduler API asserted), one instance
per firing, AWS errors never fatal, and the calls one firing costs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.aws.recurring import RECURRING_PREFIX
from lambda_workflows.engine.instances.schedules import schedules_of
from lambda_workflows.entrypoints import sweep
from lambda_workflows.testing import WorkflowTestEnv
from tests.aws_faults import Faults

START = datetime(2025, 1, 1, tzinfo=UTC)


class Hourly(WorkflowEntrypoint):
    schedules = ("rate(1 hour)",)

    async def run(self, event: Any, step: Any) -> Any:
        return await step.do("report", lambda: {"for": event.payload["scheduled_time"]})


class HalfHourly(Hourly):
    schedules = ("rate(30 minutes)",)


class WeekdaysInParis(Hourly):
    schedules = ({"expression": "cron(0 9 ? * MON-FRI *)", "timezone": "Europe/Paris"},)


class Sleeper(WorkflowEntrypoint):
    async def run(self, event: Any, step: Any) -> None:
        await step.sleep("nap", "30 days")


@pytest.fixture(params=["memory", "aws"])
def env(request: pytest.FixtureRequest) -> Iterator[WorkflowTestEnv]:
    with WorkflowTestEnv(
        {"hourly": Hourly, "sleeper": Sleeper}, start=START, backend=request.param
    ) as made:
        yield made


def ids(env: WorkflowTestEnv, workflow: str = "hourly") -> list[str]:
    return sorted(record.id for record in env.workflow(workflow).list(limit=100).records)


def recurring(env: WorkflowTestEnv) -> dict[str, dict[str, Any]]:
    """The group's recurring schedules on moto, by name, as GetSchedule returns them."""
    scheduler, group = env.aws.scheduler, env.aws.settings.schedule_group
    listed = scheduler.list_schedules(GroupName=group)["Schedules"]
    return {
        s["Name"]: scheduler.get_schedule(Name=s["Name"], GroupName=group)
        for s in listed
        if s["Name"].startswith(RECURRING_PREFIX)
    }


# --- firing ---------------------------------------------------------------------------------


def test_a_rate_schedule_fires_three_times_in_three_virtual_hours(env: WorkflowTestEnv) -> None:
    # GIVEN rate(1 hour), registered at 00:00
    # WHEN three hours pass
    env.clock.advance("3 hours")
    env.run_until_idle()
    # THEN three instances, one per firing, named after the UTC time, each complete
    assert ids(env) == [
        "hourly-20250101T010000Z",
        "hourly-20250101T020000Z",
        "hourly-20250101T030000Z",
    ]
    first = env.get("hourly", "hourly-20250101T010000Z").status()
    assert first.status == "complete"
    assert first.output == {"for": "2025-01-01T01:00:00Z"}


def test_a_duplicated_firing_creates_nothing(env: WorkflowTestEnv) -> None:
    env.clock.advance("1 hour")
    env.run_until_idle()
    assert ids(env) == ["hourly-20250101T010000Z"]
    # WHEN the 01:00 firing is delivered again (Scheduler delivers at least once)
    env.fire_schedule("hourly", datetime(2025, 1, 1, 1, tzinfo=UTC))
    env.run_until_idle()
    # THEN no second instance, and the first one ran once
    assert ids(env) == ["hourly-20250101T010000Z"]
    assert env.get("hourly", "hourly-20250101T010000Z").status().status == "complete"


def test_time_skipped_over_a_sleep_fires_nothing(env: WorkflowTestEnv) -> None:
    # GIVEN an instance sleeping 30 days: run_until_idle skips the clock to its wake-up
    env.create("sleeper", id="s-1")
    env.run_until_idle()
    assert env.get("sleeper", "s-1").status().status == "complete"
    # THEN the 720 hours skipped over started no instance (moving the clock does)
    assert ids(env) == []
    env.clock.advance("1 hour")
    env.run_until_idle()
    assert len(ids(env)) == 1


def test_a_changed_expression_fires_on_the_new_one(env: WorkflowTestEnv) -> None:
    env.clock.advance("1 hour")
    env.run_until_idle()
    # WHEN the workflow is deployed again with rate(30 minutes)
    env.workflows["hourly"] = HalfHourly
    env.run_until_idle()
    env.clock.advance("1 hour")
    env.run_until_idle()
    # THEN the firings follow the new expression, from the deploy on
    assert ids(env) == [
        "hourly-20250101T010000Z",
        "hourly-20250101T013000Z",
        "hourly-20250101T020000Z",
    ]


# --- deployed on EventBridge Scheduler (moto) -----------------------------------------------


def test_the_schedule_is_deployed_on_eventbridge_scheduler(aws_env: Any) -> None:
    env = aws_env({"hourly": Hourly, "paris": WeekdaysInParis}, start=START)
    deployed = sorted(recurring(env).values(), key=lambda s: s["ScheduleExpression"])
    cron, rate = deployed
    assert cron["ScheduleExpression"] == "cron(0 9 ? * MON-FRI *)"
    assert cron["ScheduleExpressionTimezone"] == "Europe/Paris"
    assert rate["ScheduleExpression"] == "rate(1 hour)"
    assert rate["StartDate"] == datetime(2025, 1, 1, 1, tzinfo=UTC)  # aligned: on the hour
    # the target is the trigger queue, with Scheduler's scheduled time in the message
    trigger_queue = env.aws.resources.environment("SweepFunction")["TRIGGER_QUEUE_ARN"]
    assert rate["Target"]["Arn"] == trigger_queue
    assert rate["Target"]["RoleArn"] == env.aws.settings.scheduler_role_arn
    assert rate["Target"]["Input"] == (
        '{"workflow": "hourly", "scheduled_time": "<aws.scheduler.scheduled-time>"}'
    )
    assert rate["FlexibleTimeWindow"] == {"Mode": "OFF"}


def test_changing_the_expression_replaces_the_schedule(aws_env: Any) -> None:
    env = aws_env({"hourly": Hourly}, start=START)
    (before,) = recurring(env)
    # WHEN the expression changes and the sweep runs (run_until_idle reconciles first)
    env.workflows["hourly"] = HalfHourly
    env.run_until_idle()
    # THEN one schedule, with the new expression; the old one is gone
    ((name, after),) = recurring(env).items()
    assert name != before
    assert after["ScheduleExpression"] == "rate(30 minutes)"


def test_removing_the_workflow_deletes_its_schedule_and_nothing_else(aws_env: Any) -> None:
    env = aws_env({"hourly": Hourly, "sleeper": Sleeper}, start=START)
    scheduler, group = env.aws.scheduler, env.aws.settings.schedule_group
    # GIVEN a one-time wake-up (a sleeping instance) and someone else's schedule in the group
    env.create("sleeper", id="s-1")
    env.aws.invoke_wake_up(env.aws.take_invoke())
    scheduler.create_schedule(
        Name="nightly-backup",
        GroupName=group,
        ScheduleExpression="cron(0 3 * * ? *)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": env.aws.settings.work_queue_arn, "RoleArn": "arn:aws:iam::1:role/x"},
    )
    assert len(recurring(env)) == 1
    # WHEN the workflow is no longer registered and the sweep reconciles
    del env.workflows["hourly"]
    answer = sweep.make_handler(env.aws.runtime, trigger_queue_arn(env))({}, None)
    # THEN its schedule is deleted; the wake-up and the other schedule are untouched
    assert answer["schedules"] == {"created": 0, "deleted": 1, "kept": 0, "failed": 0}
    names = [s["Name"] for s in scheduler.list_schedules(GroupName=group)["Schedules"]]
    assert recurring(env) == {}
    assert "nightly-backup" in names
    assert any(name.startswith("wf-") for name in names)


def trigger_queue_arn(env: WorkflowTestEnv) -> str:
    return env.aws.resources.environment("SweepFunction")["TRIGGER_QUEUE_ARN"]


def test_the_sweep_reconciles_and_a_steady_state_costs_one_list_call(aws_env: Any) -> None:
    env = aws_env({}, start=START)
    handler = sweep.make_handler(env.aws.runtime, trigger_queue_arn(env))
    env.workflows["hourly"] = Hourly  # deployed with a schedule
    assert handler({}, None)["schedules"] == {"created": 1, "deleted": 0, "kept": 0, "failed": 0}
    calls = count_scheduler_calls(env)
    assert handler({}, None)["schedules"] == {"created": 0, "deleted": 0, "kept": 1, "failed": 0}
    assert calls == Counter({"ListSchedules": 1})


def count_scheduler_calls(env: WorkflowTestEnv) -> Counter[str]:
    calls: Counter[str] = Counter()

    def hook(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    env.aws.runtime.wakeups.client.meta.events.register("before-call.scheduler", hook)
    return calls


@pytest.mark.parametrize("kind", ["throttle", "timeout", "unreachable"])
def test_an_aws_error_is_never_fatal_to_the_sweep_and_the_next_run_retries(
    aws_env: Any, kind: str
) -> None:
    env = aws_env({}, start=START)
    handler = sweep.make_handler(env.aws.runtime, trigger_queue_arn(env))
    env.workflows["hourly"] = Hourly
    faults = Faults.on(env.aws.runtime)
    faults.arm("scheduler.CreateSchedule", kind)
    # WHEN CreateSchedule fails, THEN the sweep answers (recovery done) and counts the failure
    first = handler({}, None)["schedules"]
    if kind == "timeout":  # the call happened; only its answer was lost
        assert first == {"created": 0, "deleted": 0, "kept": 0, "failed": 1}
        assert len(recurring(env)) == 1
    else:
        assert first == {"created": 0, "deleted": 0, "kept": 0, "failed": 1}
        assert recurring(env) == {}
    # AND the next run puts it right
    second = handler({}, None)["schedules"]
    assert second["failed"] == 0
    assert len(recurring(env)) == 1


def test_a_failed_listing_touches_nothing(aws_env: Any) -> None:
    env = aws_env({"hourly": Hourly}, start=START)
    handler = sweep.make_handler(env.aws.runtime, trigger_queue_arn(env))
    del env.workflows["hourly"]
    faults = Faults.on(env.aws.runtime)
    faults.arm("scheduler.ListSchedules", "throttle")
    assert handler({}, None)["schedules"]["failed"] == 1
    assert len(recurring(env)) == 1  # not deleted on a guess
    handler({}, None)
    assert recurring(env) == {}


# --- cost -----------------------------------------------------------------------------------


def test_one_firing_costs_one_conditional_put_and_one_direct_invoke(aws_env: Any) -> None:
    env = aws_env({"hourly": Hourly}, start=START)
    calls: Counter[str] = Counter()
    runtime = env.aws.runtime
    for client in (runtime.store.client, runtime.queue.client, runtime.queue.direct.client):

        def hook(model: Any, **_: Any) -> None:
            calls[model.name] += 1

        client.meta.events.register("before-call.*", hook)
    # WHEN Scheduler delivers one firing to the trigger queue (TriggerFunction's calls)
    env.fire_schedule("hourly", datetime(2025, 1, 1, 1, tzinfo=UTC))
    assert calls == Counter({"PutItem": 1, "Invoke": 1})  # the new instance's work: no SQS
    # AND the same firing again: the conditional put fails, nothing is sent
    calls.clear()
    env.fire_schedule("hourly", datetime(2025, 1, 1, 1, tzinfo=UTC))
    assert calls == Counter({"PutItem": 1})
    assert ids(env) == ["hourly-20250101T010000Z"]


def test_a_removed_workflow_fires_no_more(env: WorkflowTestEnv) -> None:
    env.clock.advance("1 hour")
    env.run_until_idle()
    # WHEN the workflow is no longer registered (deployed without it)
    del env.workflows["hourly"]
    env.run_until_idle()
    env.clock.advance("3 hours")
    env.run_until_idle()
    # THEN its schedule fired no more (on AWS: it was deleted)
    page = env.store.list_instances("hourly", None, None, 100)
    assert [record.id for record in page.records] == ["hourly-20250101T010000Z"]
    if env.backend == "aws":
        assert recurring(env) == {}


class TwiceHourly(WorkflowEntrypoint):
    """Two schedules that both fire on the hour."""

    schedules = ("rate(1 hour)", "cron(0 * * * ? *)")

    async def run(self, event: Any, step: Any) -> Any:
        return await step.do("report", lambda: {"for": event.payload["scheduled_time"]})


@pytest.mark.parametrize("backend", ["memory", "aws"])
def test_two_schedules_firing_at_one_time_start_one_instance_each(backend: str) -> None:
    # GIVEN a workflow with two schedules that both fire at 01:00 and 02:00
    with WorkflowTestEnv({"twice": TwiceHourly}, start=START, backend=backend) as env:
        cron_key = schedules_of(TwiceHourly)[1].key
        # WHEN two hours pass
        env.clock.advance("2 hours")
        env.run_until_idle()
        # THEN each firing started its own instance: the first schedule's ids as ever, the
        # second's with its key
        assert ids(env, "twice") == [
            "twice-20250101T010000Z",
            f"twice-20250101T010000Z-{cron_key}",
            "twice-20250101T020000Z",
            f"twice-20250101T020000Z-{cron_key}",
        ]
        # AND a firing of either delivered again starts nothing more
        env.fire_schedule("twice", datetime(2025, 1, 1, 1, tzinfo=UTC))
        env.fire_schedule("twice", datetime(2025, 1, 1, 1, tzinfo=UTC), "cron(0 * * * ? *)")
        env.run_until_idle()
        assert len(ids(env, "twice")) == 4
        statuses = {env.get("twice", i).status().status for i in ids(env, "twice")}
        assert statuses == {"complete"}
        with pytest.raises(ValueError, match="declares no schedule"):
            env.fire_schedule("twice", START, "rate(5 minutes)")
