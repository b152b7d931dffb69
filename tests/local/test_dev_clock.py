"""The dev server's clock: read it, move it (a 2-day event timeout in seconds), or skip event
timeouts altogether; only `lambda-workflows dev` has these routes, never the Lambda API."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep, WorkflowTimeoutError
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.local.embedded import LambdaContext
from lambda_workflows.local.runtime import LocalRuntime, api_gateway_event

from .devserver import exchange, serving

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")


class Approval(WorkflowEntrypoint):
    """Waits up to 2 days for an approval; says whether it came."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        try:
            await step.wait_for_event("approval", type="approved", timeout="2 days")
        except WorkflowTimeoutError:
            return {"approved": False}
        return {"approved": True}


class Dev:
    """`lambda-workflows dev` in-process on a free port, with the Approval workflow."""

    def __init__(self, runtime: LocalRuntime, base: str) -> None:
        self.runtime = runtime
        self.base = base

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any, Any]:
        return exchange(self.base, method, path, body)

    def now(self) -> datetime:
        status, _, body = self.call("GET", "/_dev/clock")
        assert status == 200 and set(body) == {"now"}, body
        return datetime.fromisoformat(body["now"])

    def status(self, instance_id: str) -> str:
        ref = InstanceRef("approval", instance_id)
        return self.runtime.aws.runtime.service.status(ref).status.value


@pytest.fixture
def dev() -> Iterator[Dev]:
    lines: list[str] = []
    runtime = LocalRuntime({"approval": Approval}, out=lines.append)
    with serving(runtime, worker=False) as running:
        yield Dev(runtime, running.url)


def waiting_instance(dev: Dev, instance_id: str) -> None:
    body = json.dumps({"instance_id": instance_id}).encode()
    status, _, _ = dev.call("POST", "/workflows/approval/instances", body)
    assert status == 201
    dev.runtime.run_until_idle()  # no worker: the test says when work is done
    assert dev.status(instance_id) == "waiting"


def test_get_clock_answers_the_dev_servers_time(dev: Dev) -> None:
    now = dev.now()
    assert now.tzinfo is not None
    assert abs(now.timestamp() - dev.runtime.clock.time()) < 5


def test_advancing_by_2_days_times_out_a_2_day_event_wait(dev: Dev) -> None:
    # GIVEN an instance waiting for an event, with a 2-day timeout
    waiting_instance(dev, "a-1")
    before = dev.now()
    # WHEN the clock is moved 2 days, then a minute (a schedule's time is in whole seconds)
    status, _, body = dev.call("POST", "/_dev/clock/advance", b'{"by": "2 days"}')
    assert status == 200, body
    dev.call("POST", "/_dev/clock/advance", b'{"by": "1 minute"}')
    # THEN it answers its new time, the wake-up is fired at once (no schedule is left) ...
    assert datetime.fromisoformat(body["now"]) - before >= timedelta(days=2)
    assert dev.runtime.aws.schedules() == []
    # ... and the wait times out when the work runs
    dev.runtime.run_until_idle()
    assert dev.status("a-1") == "complete"
    output = dev.runtime.aws.runtime.service.status(InstanceRef("approval", "a-1")).output
    assert output == {"approved": False}


def test_advancing_less_than_the_timeout_leaves_the_wait_waiting(dev: Dev) -> None:
    waiting_instance(dev, "a-2")
    status, _, _ = dev.call("POST", "/_dev/clock/advance", b'{"by": 3600}')  # seconds
    assert status == 200
    dev.runtime.run_until_idle()
    assert dev.status("a-2") == "waiting"
    assert len(dev.runtime.aws.schedules()) == 1


def test_a_number_is_seconds(dev: Dev) -> None:
    before = dev.now()
    _, _, body = dev.call("POST", "/_dev/clock/advance", b'{"by": 5400}')
    moved = datetime.fromisoformat(body["now"]) - before
    assert timedelta(minutes=90) <= moved < timedelta(minutes=91)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"", "the body is empty"),
        (b"{not json", "the body is not JSON"),
        (b'["2 days"]', "has no 'by'"),
        (b'{"seconds": 60}', "has no 'by'"),
        (b'{"by": "2 days", "force": true}', "unknown key(s) 'force'"),
        (b'{"by": "2 fortnights"}', "is not a duration"),
        (b'{"by": "-1 day"}', "is not a duration"),
        (b'{"by": -60}', "non-negative"),
        (b'{"by": true}', "not a bool"),
        (b'{"by": null}', "must be a string like '10 seconds'"),
        (b'{"by": 1e400}', "finite"),
        (b'{"by": "100 years"}', "at most 3650 days"),
        (b'{"by": 1' + b"0" * 400 + b"}", "at most 3650 days"),
    ],
)
def test_bad_input_is_a_400_that_says_what_is_wrong_and_moves_nothing(
    dev: Dev, body: bytes, says: str
) -> None:
    before = dev.now()
    status, _, answer = dev.call("POST", "/_dev/clock/advance", body)
    assert status == 400
    assert answer["error"]["code"] == "invalid_input"
    assert says in answer["error"]["message"]
    assert dev.now() - before < timedelta(seconds=30)  # only real time passed


def test_other_methods_and_paths_under_dev_are_405_and_404(dev: Dev) -> None:
    status, headers, body = dev.call("GET", "/_dev/clock/advance")
    assert status == 405 and headers["Allow"] == "POST"
    assert body["error"]["code"] == "method_not_allowed"
    status, headers, body = dev.call("POST", "/_dev/clock", b"{}")
    assert status == 405 and headers["Allow"] == "GET"
    status, _, body = dev.call("GET", "/_dev/time")
    assert status == 404 and body["error"]["code"] == "not_found"
    assert "GET /_dev/clock" in body["error"]["message"]


def test_the_lambda_api_has_no_dev_routes(dev: Dev) -> None:
    # GIVEN the ApiFunction handler as Lambda runs it (no local runtime in front of it)
    from lambda_workflows.entrypoints.api import make_handler

    handler = make_handler(dev.runtime.aws.runtime)
    for method, path in (("GET", "/_dev/clock"), ("POST", "/_dev/clock/advance")):
        event = api_gateway_event(method, path, [], [("Content-Type", "application/json")], b"{}")
        # WHEN it is asked for the dev routes: THEN they do not exist there
        answer = handler(event, LambdaContext("ApiFunction", 29_000))
        assert answer["statusCode"] == 404, answer
    openapi = handler(
        api_gateway_event("GET", "/openapi.json", [], [], b""), LambdaContext("ApiFunction")
    )
    assert "/_dev" not in openapi["body"]


# --- skip_event_timeouts -------------------------------------------------------------------------


def run_one(runtime: LocalRuntime, instance_id: str) -> str:
    service = runtime.aws.runtime.service
    service.create("approval", instance_id, {})
    runtime.run_until_idle()
    return service.status(InstanceRef("approval", instance_id)).status.value


def test_skip_event_timeouts_times_out_a_wait_at_once_and_says_so() -> None:
    lines: list[str] = []
    runtime = LocalRuntime({"approval": Approval}, skip_event_timeouts=True, out=lines.append)
    try:
        assert run_one(runtime, "s-1") == "complete"
        output = runtime.aws.runtime.service.status(InstanceRef("approval", "s-1")).output
        assert output == {"approved": False}
    finally:
        runtime.close()
    skipped = [line for line in lines if "skipped" in line]
    assert len(skipped) == 1 and "event-wait timeout of approval/s-1" in skipped[0], lines


def test_by_default_an_event_wait_is_not_skipped_even_with_sleeps_skipped() -> None:
    runtime = LocalRuntime({"approval": Approval}, skip_sleeps=True, out=lambda line: None)
    try:
        assert run_one(runtime, "s-2") == "waiting"
    finally:
        runtime.close()


# --- skipping sleeps never jumps over an event-wait timeout ----------------------------------


class Nap(WorkflowEntrypoint):
    """Sleeps as long as its params say, then finishes."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", event.payload["for"])
        return "rested"


class WaitBesideANap(WorkflowEntrypoint):
    """Waits up to 2 days for an approval while, in the same gather, it sleeps 3 days."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def approval() -> bool:
            try:
                await step.wait_for_event("approval", type="approved", timeout="2 days")
            except WorkflowTimeoutError:
                return False
            return True

        approved, _ = await asyncio.gather(approval(), step.sleep("nap", "3 days"))
        return {"approved": approved}


@pytest.fixture
def napping() -> Iterator[tuple[Dev, list[str]]]:
    lines: list[str] = []
    workflows = {"approval": Approval, "nap": Nap, "beside": WaitBesideANap}
    runtime = LocalRuntime(workflows, out=lines.append)  # sleeps skipped, event timeouts not
    with serving(runtime, worker=False) as running:
        yield Dev(runtime, running.url), lines


def create(dev: Dev, workflow: str, instance_id: str, params: Any = None) -> None:
    body = json.dumps({"instance_id": instance_id, "params": params or {}}).encode()
    status, _, answer = dev.call("POST", f"/workflows/{workflow}/instances", body)
    assert status == 201, answer
    dev.runtime.run_until_idle()


def output_of(dev: Dev, workflow: str, instance_id: str) -> Any:
    status, _, body = dev.call("GET", f"/workflows/{workflow}/instances/{instance_id}")
    assert status == 200, body
    return body["status"], body.get("output")


def test_skipping_a_longer_sleep_does_not_time_out_another_instances_event_wait(
    napping: tuple[Dev, list[str]],
) -> None:
    dev, lines = napping
    # GIVEN an instance waiting up to 2 days for its approval
    create(dev, "approval", "a-1")
    before = dev.now()
    # WHEN another instance sleeps 3 days and the dev server skips that sleep
    create(dev, "nap", "n-1", {"for": "3 days"})
    # THEN the sleep is over, but the wait goes on: the time skipped is not the wait's, and
    # the screen says so
    assert output_of(dev, "nap", "n-1") == ("complete", "rested")
    assert dev.now() - before >= timedelta(days=3)
    assert output_of(dev, "approval", "a-1") == ("waiting", None)
    kept = [line for line in lines if "keeps its time" in line]
    assert len(kept) == 1 and "event-wait timeout of approval/a-1" in kept[0], lines
    # AND the approval sent now is the one it gets
    status, _, _ = dev.call("POST", "/workflows/approval/instances/a-1/events/approved", b"{}")
    assert status == 202
    dev.runtime.run_until_idle()
    assert output_of(dev, "approval", "a-1") == ("complete", {"approved": True})


def test_moving_the_clock_by_hand_counts_toward_a_wait_that_skipping_did_not(
    napping: tuple[Dev, list[str]],
) -> None:
    # GIVEN a 2-day event wait, and 3 days of another instance's sleep skipped since it began
    dev, _ = napping
    create(dev, "approval", "a-3")
    create(dev, "nap", "n-3", {"for": "3 days"})
    # WHEN the clock is moved by less than the wait's 2 days: THEN it still waits
    dev.call("POST", "/_dev/clock/advance", b'{"by": "1 day"}')
    dev.runtime.run_until_idle()
    assert output_of(dev, "approval", "a-3") == ("waiting", None)
    # WHEN it is moved past them: THEN the wait times out
    dev.call("POST", "/_dev/clock/advance", b'{"by": "1 day"}')
    dev.call("POST", "/_dev/clock/advance", b'{"by": "1 minute"}')  # whole seconds
    dev.runtime.run_until_idle()
    assert output_of(dev, "approval", "a-3") == ("complete", {"approved": False})


def test_a_shorter_sleep_is_still_skipped_beside_an_event_wait(
    napping: tuple[Dev, list[str]],
) -> None:
    dev, _ = napping
    create(dev, "approval", "a-2")
    create(dev, "nap", "n-2", {"for": "1 day"})
    assert output_of(dev, "nap", "n-2") == ("complete", "rested")
    assert output_of(dev, "approval", "a-2") == ("waiting", None)  # 1 day of its 2 is left


def test_a_sleep_beside_an_event_wait_in_one_gather_does_not_time_the_wait_out(
    napping: tuple[Dev, list[str]],
) -> None:
    dev, _ = napping
    before = dev.now()
    create(dev, "beside", "b-1")
    assert output_of(dev, "beside", "b-1") == ("waiting", None)
    assert dev.now() - before < timedelta(minutes=1)
    dev.call("POST", "/workflows/beside/instances/b-1/events/approved", b"{}")
    dev.runtime.run_until_idle()  # the approval came: the 3-day sleep is skipped
    assert output_of(dev, "beside", "b-1") == ("complete", {"approved": True})
