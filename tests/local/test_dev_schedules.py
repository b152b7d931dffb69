"""Recurring schedules through `lambda-workflows dev`: deployed at start, fired when the clock is
moved over HTTP (one instance per firing, named after its UTC time), shown by
GET /workflows/{name} with their next firings."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.engine.instances.schedules import Schedule, firing_id
from lambda_workflows.local.runtime import LocalRuntime

from .devserver import call, serving

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")


class Hourly(WorkflowEntrypoint):
    schedules = ("rate(1 hour)", {"expression": "cron(0 9 ? * MON-FRI *)", "timezone": "UTC"})

    async def run(self, event: Any, step: Any) -> Any:
        return await step.do("report", lambda: {"for": event.payload["scheduled_time"]})


class Dev:
    def __init__(self, runtime: LocalRuntime, base: str, lines: list[str]) -> None:
        self.runtime = runtime
        self.base = base
        self.lines = lines

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return call(self.base, method, path, body)

    def now(self) -> float:
        status, body = self.call("GET", "/_dev/clock")
        assert status == 200, body
        return datetime.fromisoformat(body["now"]).timestamp()

    def complete_ids(self) -> list[str]:
        status, body = self.call("GET", "/workflows/hourly/instances?status=complete")
        assert status == 200, body
        return sorted(item["id"] for item in body["instances"])


@pytest.fixture
def dev() -> Iterator[Dev]:
    lines: list[str] = []
    runtime = LocalRuntime({"hourly": Hourly}, out=lines.append)
    with serving(runtime) as running:
        yield Dev(runtime, running.url, lines)


def test_moving_the_clock_three_hours_fires_three_instances(dev: Dev) -> None:
    # GIVEN lambda-workflows dev with rate(1 hour), deployed at start
    started = dev.now()
    deployed = "schedule rate(1 hour) of hourly deployed; next firing"
    assert any(deployed in line for line in dev.lines)
    # WHEN the clock is moved 3 hours
    status, _ = dev.call("POST", "/_dev/clock/advance", {"by": "3 hours"})
    assert status == 200
    moved = dev.now()
    # THEN one complete instance per firing, with the ids TriggerFunction gives on AWS
    expected = sorted(
        {
            firing_id("hourly", at)
            for expression in ("rate(1 hour)", "cron(0 9 ? * MON-FRI *)")
            for at in Schedule(expression).firings(started, moved)
        }
    )
    assert len(expected) == 3  # the 9:00 cron firing, when in range, is also a rate firing
    deadline = time.monotonic() + 60
    while dev.complete_ids() != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert dev.complete_ids() == expected
    assert any(" of hourly fired for " in line for line in dev.lines)


def test_a_duplicated_firing_creates_nothing(dev: Dev) -> None:
    dev.call("POST", "/_dev/clock/advance", {"by": "1 hour"})
    deadline = time.monotonic() + 60
    while not dev.complete_ids() and time.monotonic() < deadline:
        time.sleep(0.1)
    (first,) = dev.complete_ids()
    at = datetime.strptime(first.removeprefix("hourly-"), "%Y%m%dT%H%M%SZ")
    # WHEN Scheduler delivers the same firing again
    dev.runtime.recurring.deliver("hourly", at.replace(tzinfo=UTC).timestamp())
    # THEN no second instance
    _, body = dev.call("GET", "/workflows/hourly/instances")
    assert [item["id"] for item in body["instances"]] == [first]


def test_the_workflow_shows_its_schedules_and_next_firings(dev: Dev) -> None:
    now = dev.now()
    status, body = dev.call("GET", "/workflows/hourly")
    assert status == 200, body
    rate, cron = body["schedules"]
    expected = Schedule("rate(1 hour)").next_firings(now, 3)
    assert rate["expression"] == "rate(1 hour)"
    assert rate["timezone"] == "UTC"
    assert rate["next_firings"] == [
        datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") for at in expected
    ]
    assert rate["next_ids"] == [firing_id("hourly", at) for at in expected]
    assert cron["expression"] == "cron(0 9 ? * MON-FRI *)"
    assert all(t.endswith("T09:00:00Z") for t in cron["next_firings"])


def test_workflows_describe_prints_the_schedules(dev: Dev) -> None:
    import io

    from lambda_workflows.cli import main
    from lambda_workflows.cli.console import Console

    out, err = io.StringIO(), io.StringIO()
    code = main(["describe", "hourly", "--url", dev.base], console=Console(out, err))
    assert code == 0, err.getvalue()
    lines = [line for line in out.getvalue().splitlines() if line.startswith("schedule:")]
    assert len(lines) == 2
    assert lines[0].startswith("schedule:    rate(1 hour), next 20")
    assert lines[1].startswith("schedule:    cron(0 9 ? * MON-FRI *), next ")
