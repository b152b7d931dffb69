"""GET /workflows/{name}/instances/{id}/history through the real ApiFunction handler on moto:
the export format, sensitive results redacted, and what the Replayer makes of it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.testing import Replayer, StepCall, WorkflowTestEnv

from .conftest import Api


class Signup(WorkflowEntrypoint):
    """A secret, a sleep, then a wait for confirmation."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("issue token", {"sensitive": "output"}, lambda: "s3cr3t")
        plan = await step.do("pick plan", lambda: {"plan": event.payload["plan"]})
        await step.sleep("settle", "1 minute")
        got = await step.wait_for_event("confirm", type="confirmed", timeout="1 day")
        return [plan, got.payload]


class SignupSleepsFirst(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("settle", "1 minute")
        await step.do("issue token", lambda: "s3cr3t")


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    env = WorkflowTestEnv({"signup": Signup}, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


def test_history_of_an_instance_in_flight(api: Api) -> None:
    api.request("POST", "/workflows/signup/instances", {"id": "s-1", "params": {"plan": "pro"}})
    api.env.run_until_idle()
    api.request("POST", "/workflows/signup/instances/s-1/events/confirmed", {"by": "ana"})
    api.writes.calls.clear()

    answer = api.request("GET", "/workflows/signup/instances/s-1/history")

    assert answer.status == 200 and api.writes.calls == []
    body = answer.body
    assert (body["format"], body["format_version"]) == ("workflows-history", 1)
    assert (body["workflow"], body["id"], body["workflow_version"]) == ("signup", "s-1", "1")
    assert (body["status"], body["params"]) == ("waiting", {"plan": "pro"})
    steps = [(e["name"], e["kind"], e["position"], e["result"]) for e in body["entries"]]
    assert steps == [
        ("issue token", "step", 1, "[REDACTED]"),
        ("pick plan", "step", 2, {"plan": "pro"}),
        ("settle", "sleep", 3, None),
        ("confirm", "wait", 4, None),
    ]
    assert [(e["type"], e["payload"]) for e in body["events"]] == [("confirmed", {"by": "ana"})]
    assert "s3cr3t" not in str(body)

    # a replay needs no result: the redacted history replays, and a change is found
    assert Replayer({"signup": Signup}).replay(body).compatible
    divergence = Replayer({"signup": SignupSleepsFirst}).replay(body).divergence
    assert divergence is not None and divergence.position == 1
    assert (divergence.recorded, divergence.replayed) == (
        StepCall("issue token", "do"),
        StepCall("settle", "sleep"),
    )


def test_history_of_an_unknown_instance_is_a_404(api: Api) -> None:
    answer = api.request("GET", "/workflows/signup/instances/nope/history")
    assert (answer.status, answer.code) == (404, "instance_not_found")
    answer = api.request("GET", "/workflows/billing/instances/s-1/history")
    assert answer.status == 404
