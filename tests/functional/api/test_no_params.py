"""An instance started without params, over HTTP or by a trigger, runs with ``event.payload``
``{}`` (as on Cloudflare), so reading an optional key works instead of raising TypeError."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.entrypoints.trigger import derived_id
from lambda_workflows.testing import WorkflowTestEnv

from .conftest import Api, sample

INSTANCES = "/workflows/options/instances"


class ReadsOptions(WorkflowEntrypoint):
    """Reads an optional key of its params."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return {"tier": event.payload.get("tier", "free"), "keys": sorted(event.payload)}


DEFAULTS = {"tier": "free", "keys": []}


@pytest.fixture(scope="module")
def options_api() -> Iterator[Api]:
    env = WorkflowTestEnv({"options": ReadsOptions}, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


def finished(api: Api, instance_id: str) -> dict[str, Any]:
    api.env.run_until_idle()
    answer = api.request("GET", f"{INSTANCES}/{instance_id}")
    assert answer.status == 200, answer.body
    assert answer.body["status"] == "complete", answer.body
    return dict(answer.body)


def stored_params(api: Api, instance_id: str) -> Any:
    return json.loads(api.env.store.get(InstanceRef("options", instance_id)).params)


def test_post_without_a_body_runs_with_an_empty_object(options_api: Api) -> None:
    created = options_api.request("POST", INSTANCES)
    assert created.status == 201, created.body

    assert finished(options_api, created.body["id"])["output"] == DEFAULTS
    assert stored_params(options_api, created.body["id"]) == {}


@pytest.mark.parametrize(
    "body",
    [{"id": "np-omitted"}, {"id": "np-null", "params": None}],
    ids=["params omitted", "params null"],
)
def test_post_without_params_runs_with_an_empty_object(
    options_api: Api, body: dict[str, Any]
) -> None:
    assert options_api.request("POST", INSTANCES, body).status == 201

    assert finished(options_api, body["id"])["output"] == DEFAULTS


def test_batch_items_without_params_run_with_an_empty_object(options_api: Api) -> None:
    answer = options_api.request("POST", f"{INSTANCES}/batch", [{"id": "np-b1"}, {"id": "np-b2"}])
    assert answer.status == 201, answer.body

    assert finished(options_api, "np-b1")["output"] == DEFAULTS
    assert finished(options_api, "np-b2")["output"] == DEFAULTS


def test_an_sqs_message_without_params_runs_with_an_empty_object(options_api: Api) -> None:
    record = copy.deepcopy(sample("sqs_trigger_batch.json")["Records"][0])
    record.update(messageId="m-np", body=json.dumps({"workflow": "options", "id": "np-sqs"}))

    assert options_api.trigger({"Records": [record]}) == {"batchItemFailures": []}

    assert finished(options_api, "np-sqs")["output"] == DEFAULTS


def test_an_eventbridge_event_without_detail_runs_with_an_empty_object(
    options_api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the trigger's default workflow, and an event with no detail object
    monkeypatch.setenv("TRIGGER_WORKFLOW", "options")
    event = {**sample("eventbridge_trigger.json"), "id": "evb-np", "detail": None}

    options_api.trigger(event)

    assert finished(options_api, derived_id("evb", "evb-np"))["output"] == DEFAULTS
