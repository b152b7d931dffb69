"""Subscribing through `lambda-workflows dev`: the Python client's ``instance.subscribe()`` in
its HTTP mode (long polls of ``GET …/subscribe``) follows an instance the dev runtime runs in
the background, and a waiting long poll holds up no other request."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import Workflow, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.local.runtime import LocalRuntime

from .devserver import RunningDev, call, serving


class Approval(WorkflowEntrypoint):
    """A step, a wait for an approval, a step after it."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        amount = await step.do("quote", lambda: 42)
        decision = await step.wait_for_event("approval", type="approved", timeout="1 hour")
        return await step.do("book", lambda: {"amount": amount, "by": decision.payload["by"]})


@pytest.fixture(scope="module")
def dev() -> Iterator[RunningDev]:
    runtime = LocalRuntime({"approvals": Approval}, out=lambda line: None)
    with serving(runtime) as running:  # its worker runs the instances
        yield running


def test_the_http_client_follows_an_instance_live_until_it_finishes(dev: RunningDev) -> None:
    # GIVEN an instance created through the HTTP API
    client = Workflow("approvals", url=dev.url)
    instance = client.create(id="live-1")

    # WHEN a subscriber follows it, approving when the wait starts
    seen = []
    for event in instance.subscribe():
        seen.append(dict(event))
        if event.type == "wait.started":
            instance.send_event(type="approved", payload={"by": "ana"})

    # THEN it saw the whole life, and the iterator ended with the instance
    assert [e["type"] for e in seen] == [
        "instance.queued",
        "instance.started",
        "step.started",
        "step.completed",
        "wait.started",
        "event.received",
        "wait.completed",
        "step.started",
        "step.completed",
        "instance.complete",
    ]
    assert seen[-1]["output"] == {"amount": 42, "by": "ana"}
    assert instance.status().status == "complete"

    # AND a second subscription gives the same events, and a cursor resumes after its event
    assert [dict(e) for e in instance.subscribe()] == seen
    assert [e.type for e in instance.subscribe(cursor=seen[6]["cursor"])] == [
        "step.started",
        "step.completed",
        "instance.complete",
    ]
    only = [e.type for e in instance.subscribe(types=["step.completed"])]
    assert only == ["step.completed", "step.completed"]


def test_a_waiting_long_poll_lets_other_requests_through(dev: RunningDev) -> None:
    # GIVEN an instance waiting for its approval, and a subscriber that has seen everything
    client = Workflow("approvals", url=dev.url)
    instance = client.create(id="idle-1")
    cursor = None
    for event in instance.subscribe():
        if event.type == "wait.started":
            cursor = event.cursor
            break
    path = "/workflows/approvals/instances/idle-1"

    # WHEN it long-polls for 5 seconds in the background
    answers: list[Any] = []
    poll = threading.Thread(
        target=lambda: answers.append(
            call(dev.url, "GET", f"{path}/subscribe?wait=5&cursor={cursor}")
        )
    )
    poll.start()
    time.sleep(1.5)  # let it get inside the API and wait

    # THEN another request is answered while the poll still waits
    status, body = call(dev.url, "GET", path)
    assert status == 200 and body["status"] == "waiting"
    assert poll.is_alive()
    # AND the approval sent meanwhile ends the poll with it
    assert call(dev.url, "POST", f"{path}/events/approved", {"by": "bo"})[0] == 202
    poll.join(timeout=30)
    assert answers and answers[0][0] == 200
    assert answers[0][1]["events"][0]["type"] == "event.received"
