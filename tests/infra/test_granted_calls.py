"""Serving every API route and every kind of trigger on moto calls only AWS operations the
function's policy in template.yaml grants (moto does not enforce IAM; AWS would refuse them).

The static check (test_least_privilege, through code_paths) reads the code; this one watches
the real handlers' calls, so a call the reading misses still fails here.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.testing import WorkflowTestEnv
from tests.functional.api.conftest import Api, sample
from tests.functional.workflows_under_test import Lifecycle

from .code_paths import AUTHORIZED_BY, TRANSACT_ITEM_ACTIONS
from .test_least_privilege import granted


class CallLog:
    """The IAM actions of the AWS calls made while it is recording."""

    def __init__(self) -> None:
        self.actions: set[str] = set()
        self.recording = False

    def __call__(self, model: Any, params: dict[str, Any], event_name: str, **_: Any) -> None:
        if not self.recording:
            return
        service = event_name.split(".")[1]
        action = f"{service}:{model.name}"
        if action == "dynamodb:TransactWriteItems":
            for item in params["TransactItems"]:
                self.actions |= {TRANSACT_ITEM_ACTIONS[kind] for kind in item}
        else:
            self.actions |= AUTHORIZED_BY.get(action, {action})


@pytest.fixture
def api() -> Iterator[tuple[Api, CallLog]]:
    """The real handlers on a fresh moto stack, with every engine client's calls logged."""
    env = WorkflowTestEnv({"orders": Lifecycle}, backend="aws")
    calls = CallLog()
    runtime = env.aws.runtime
    clients = (runtime.store.client, runtime.queue.client, runtime.wakeups.client)
    for client in (*clients, runtime.queue.direct.client):  # and the runner's direct invokes
        client.meta.events.register("before-parameter-build", calls)
    try:
        yield Api(env), calls
    finally:
        env.close()


def test_every_api_route_calls_only_what_api_function_may(api: tuple[Api, CallLog]) -> None:
    client, calls = api
    orders = "/workflows/orders/instances"
    big = base64.b64encode(os.urandom(600_000)).decode()  # stored in chunks: a transaction
    # GIVEN an instance that ran its first steps (a restart from a step copies what it keeps)
    client.request("POST", orders, {"id": "stepped", "params": {"amount": 1}})
    client.env.run_once("orders", "stepped")
    # AND an instance with a wake-up scheduled an hour ahead (as a sleeping instance has)
    client.request("POST", orders, {"id": "sleeper", "params": {"amount": 1}})
    runtime = client.aws.runtime
    runtime.wakeups.schedule(InstanceRef("orders", "sleeper"), runtime.clock.time() + 3600, "t")

    # WHEN every route is served, on its success paths
    calls.recording = True
    statuses = [
        client.request("GET", "/workflows").status,
        client.request("GET", "/workflows/orders").status,
        client.request("POST", orders, {"id": "a", "params": {"amount": 1}}).status,
        client.request("POST", orders, {"id": "large", "params": {"blob": big}}).status,
        client.request("POST", f"{orders}/batch", [{"id": "b"}, {"id": "a"}]).status,
        client.request("GET", orders).status,
        client.request("GET", orders, query={"status": "queued", "limit": "1"}).status,
        client.request("GET", f"{orders}/a").status,
        client.request("GET", f"{orders}/large").status,
        client.request("PATCH", f"{orders}/a/status", {"status": "pause"}).status,
        client.request("PATCH", f"{orders}/a/status", {"status": "resume"}).status,
        client.request("POST", f"{orders}/a/events/approved", {"user": "ana"}).status,
        client.request("PATCH", f"{orders}/sleeper/status", {"status": "terminate"}).status,
        client.request("PATCH", f"{orders}/sleeper/status", {"status": "restart"}).status,
        client.request("GET", f"{orders}/stepped/steps/charge").status,
        client.request(
            "PATCH",
            f"{orders}/stepped/status",
            {"status": "restart", "from_step": {"name": "cool down"}},
        ).status,
        client.request("DELETE", f"{orders}/stepped").status,
        client.request("POST", f"{orders}/delete", {"ids": ["b", "missing"]}).status,
        client.request("GET", "/openapi.json").status,
        client.request("GET", "/docs").status,
    ]
    calls.recording = False

    # THEN each succeeded, and ApiFunction's policy grants every call made
    assert all(200 <= status < 300 for status in statuses), statuses
    assert {"scheduler:ListSchedules", "scheduler:DeleteSchedule"} <= calls.actions
    missing = calls.actions - granted("ApiFunction")
    assert not missing, f"ApiFunction called {sorted(missing)}, which its policy does not grant"
    assert "scheduler:CreateSchedule" not in calls.actions


def test_every_trigger_calls_only_what_trigger_function_may(
    api: tuple[Api, CallLog], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, calls = api
    monkeypatch.setenv("TRIGGER_WORKFLOW", "orders")
    big = base64.b64encode(os.urandom(600_000)).decode()
    event = sample("eventbridge_trigger.json")
    large = {**sample("eventbridge_trigger.json"), "id": "large-event", "detail": {"blob": big}}
    # WHEN a batch of messages, an event, a redelivered event and a large event arrive
    calls.recording = True
    answers = [
        client.trigger(sample("sqs_trigger_batch.json")),
        client.trigger(event),
        client.trigger(event),
        client.trigger(large),
    ]
    calls.recording = False

    # THEN every instance was created (once), and TriggerFunction's policy grants every call
    assert answers[0] == {"batchItemFailures": []}
    assert [answer["created"] for answer in answers[1:]] == [True, False, True]
    assert {"dynamodb:PutItem", "lambda:InvokeFunction"} <= calls.actions  # work: invoked
    missing = calls.actions - granted("TriggerFunction")
    assert not missing, f"TriggerFunction called {sorted(missing)}, which its policy lacks"
    assert len(client.drain()) == 4  # two messages, two events: one first run each
