"""`POST /_dev/events` on `lambda-workflows dev`: an `aws events put-events` entry, wrapped in the
envelope EventBridge delivers and run through the real TriggerFunction handler — a "Workflow
Event" reaches a waiting instance once per event id, any other detail-type creates an instance;
what cannot be delivered is a 4xx with the reason and writes nothing."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.cli import main
from lambda_workflows.cli.console import Console
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.local.dev_events import trigger_rules
from lambda_workflows.local.runtime import LocalRuntime

from .devserver import call, serving

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")

SOURCE = "workflows.trigger"  # template.yaml's TriggerEventSource default
EVENTS = "/_dev/events"


class Approval(WorkflowEntrypoint):
    """Waits for an approval; returns its payload."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        approved = await step.wait_for_event("approval", type="approved", timeout="2 days")
        return {"by": approved.payload}


class Greet(WorkflowEntrypoint):
    """Returns its params."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("greet", lambda: {"hello": event.payload})


class Dev:
    """`lambda-workflows dev` in-process on a free port (no worker: the test runs the work)."""

    def __init__(self, runtime: LocalRuntime, base: str, lines: list[str]) -> None:
        self.runtime = runtime
        self.base = base
        self.lines = lines
        self.service = runtime.aws.runtime.service

    def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        return call(self.base, method, path, body, headers)

    def put(self, detail_type: str, detail: Any, **entry: Any) -> tuple[int, Any]:
        return self.call(
            "POST", EVENTS, {"Source": SOURCE, "DetailType": detail_type, "Detail": detail, **entry}
        )

    def waiting(self, instance_id: str) -> InstanceRef:
        ref = InstanceRef("approval", instance_id)
        self.service.create(ref.workflow, ref.id, {})
        self.runtime.run_until_idle()
        assert self.service.status(ref).status.value == "waiting"
        return ref

    def events_of(self, ref: InstanceRef) -> list[dict[str, Any]]:
        status, body = self.call("GET", f"/workflows/{ref.workflow}/instances/{ref.id}/history")
        assert status == 200, body
        return list(body["events"])

    def items(self) -> int:
        """How many items the table holds: a refused event must add none."""
        table = self.runtime.aws.settings.table_name
        client = self.runtime.aws.session.client("dynamodb")
        return sum(page["Count"] for page in client.get_paginator("scan").paginate(TableName=table))


@pytest.fixture
def dev() -> Iterator[Dev]:
    lines: list[str] = []
    runtime = LocalRuntime({"approval": Approval, "greet": Greet}, out=lines.append)
    with serving(runtime, worker=False) as running:
        yield Dev(runtime, running.url, lines)


def approval(instance_id: str, **more: Any) -> dict[str, Any]:
    return {"workflow": "approval", "instance_id": instance_id, "type": "approved", **more}


def test_the_source_taken_is_the_template_rules(dev: Dev) -> None:
    assert trigger_rules().source == SOURCE
    assert trigger_rules().bus == "default"


def test_a_workflow_event_reaches_the_waiting_instance_which_completes(dev: Dev) -> None:
    # GIVEN an instance waiting for "approved"
    ref = dev.waiting("a-1")
    # WHEN a Workflow Event for it is put
    status, body = dev.put("Workflow Event", approval("a-1", payload={"user": "ana"}), Id="e-1")
    # THEN TriggerFunction delivered it, and the instance completes with its payload
    assert status == 200, body
    assert body["outcome"] == "delivered" and body["id"] == "e-1"
    assert (body["workflow"], body["instance_id"], body["type"]) == ("approval", "a-1", "approved")
    dev.runtime.run_until_idle()
    view = dev.service.status(ref)
    assert view.status.value == "complete" and view.output == {"by": {"user": "ana"}}
    assert any("e-1 (Workflow Event) delivered to approval/a-1" in line for line in dev.lines)


def test_the_same_id_twice_is_one_event(dev: Dev) -> None:
    ref = dev.waiting("a-2")
    # WHEN the same event (same Id) is put twice before the instance runs, then once after
    first = dev.put("Workflow Event", approval("a-2", payload=1), Id="dup-1")
    second = dev.put("Workflow Event", approval("a-2", payload=1), Id="dup-1")
    dev.runtime.run_until_idle()
    third = dev.put("Workflow Event", approval("a-2", payload=1), Id="dup-1")
    # THEN each answer names the one stored event, and the instance has just that one
    assert first[0] == second[0] == third[0] == 200
    assert first[1]["event_id"] == second[1]["event_id"] == third[1]["event_id"]
    assert len(dev.events_of(ref)) == 1
    assert dev.service.status(ref).status.value == "complete"


def test_without_an_id_each_put_is_a_new_event(dev: Dev) -> None:
    ref = dev.waiting("a-3")
    first = dev.put("Workflow Event", approval("a-3"))
    second = dev.put("Workflow Event", approval("a-3"))
    assert first[1]["id"] != second[1]["id"]
    assert len(dev.events_of(ref)) == 2


def test_put_events_form_with_a_string_detail_and_the_bus_is_taken(dev: Dev) -> None:
    # the README's `aws events put-events` entry, as written
    ref = dev.waiting("a-4")
    detail = json.dumps(approval("a-4", payload={"user": "ana"}))
    status, body = dev.put("Workflow Event", detail, EventBusName="default")
    assert status == 200, body
    dev.runtime.run_until_idle()
    assert dev.service.status(ref).output == {"by": {"user": "ana"}}


@pytest.mark.parametrize(
    ("detail", "status", "code", "says"),
    [
        (approval("nobody"), 404, "instance_not_found", "nobody"),
        ({**approval("a-5"), "workflow": "nope"}, 404, "unknown_workflow", "nope"),
        ({**approval("a-5"), "type": "not a type!"}, 400, "invalid_input", "event type"),
        ({**approval("a-5"), "payloud": 1}, 400, "invalid_input", "payloud"),
        ({"workflow": "approval", "type": "approved"}, 400, "invalid_input", "instance_id"),
    ],
    ids=["unknown-instance", "unknown-workflow", "bad-type", "unknown-key", "no-instance-id"],
)
def test_an_event_that_cannot_be_delivered_is_a_4xx_with_the_reason_and_writes_nothing(
    dev: Dev, detail: dict[str, Any], status: int, code: str, says: str
) -> None:
    ref = dev.waiting("a-5")
    before = dev.items()
    answer = dev.put("Workflow Event", detail, Id="bad-1")
    assert answer[0] == status, answer
    assert answer[1]["error"]["code"] == code
    assert says in answer[1]["error"]["message"]
    assert dev.items() == before
    assert dev.events_of(ref) == []
    status_code, _ = dev.call("GET", "/workflows/approval/instances/nobody")
    assert status_code == 404


def test_an_event_for_a_finished_instance_is_a_409(dev: Dev) -> None:
    ref = dev.waiting("a-6")
    dev.put("Workflow Event", approval("a-6"), Id="ok-6")
    dev.runtime.run_until_idle()
    before = dev.items()
    status, body = dev.put("Workflow Event", approval("a-6"), Id="late-6")
    assert status == 409 and body["error"]["code"] == "invalid_transition", body
    assert "complete" in body["error"]["message"]
    assert dev.items() == before and len(dev.events_of(ref)) == 1


def test_another_detail_type_creates_an_instance_once_per_id(dev: Dev) -> None:
    # WHEN an event of another detail-type is put, twice with the same Id
    status, body = dev.put("Order Placed", {"workflow": "greet", "name": "ana"}, Id="order-1")
    again = dev.put("Order Placed", {"workflow": "greet", "name": "ana"}, Id="order-1")
    # THEN TriggerFunction created one instance, its id derived from the event id
    assert status == 201, body
    assert body == {
        "id": "order-1",
        "detail-type": "Order Placed",
        "outcome": "created",
        "workflow": "greet",
        "instance_id": "evb-order-1",
    }
    assert again[0] == 200 and again[1]["outcome"] == "exists"
    dev.runtime.run_until_idle()
    view = dev.service.status(InstanceRef("greet", "evb-order-1"))
    assert view.status.value == "complete" and view.output == {"hello": {"name": "ana"}}
    _, listing = dev.call("GET", "/workflows/greet/instances")
    assert [i["id"] for i in listing["instances"]] == ["evb-order-1"]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"Source": "com.example", "DetailType": "X", "Detail": {}}, "'workflows.trigger'"),
        ({"DetailType": "X", "Detail": {}}, "Source is required"),
        ({"Source": SOURCE, "Detail": {}}, "DetailType is required"),
        ({"Source": SOURCE, "DetailType": "X"}, "Detail is required"),
        ({"Source": SOURCE, "DetailType": "X", "Detail": "{nope"}, "not JSON"),
        ({"Source": SOURCE, "DetailType": "X", "Detail": "[1]"}, "must be a JSON object"),
        ({"Source": SOURCE, "DetailType": "X", "Detail": {}, "Id": ""}, "Id must be"),
        ({"Source": SOURCE, "DetailType": "X", "Detail": {}, "Time": "now"}, "'Time'"),
        ({"Source": SOURCE, "DetailType": "X", "Detail": {}, "EventBusName": "b"}, "'default'"),
        ({"Source": SOURCE, "DetailType": "X", "Detail": {}, "Resources": "arn"}, "Resources"),
        ([{"Source": SOURCE, "DetailType": "X", "Detail": {}}], "not a list"),
    ],
    ids=[
        "other-source",
        "no-source",
        "no-detail-type",
        "no-detail",
        "detail-not-json",
        "detail-not-object",
        "empty-id",
        "unknown-key",
        "other-bus",
        "bad-resources",
        "a-list",
    ],
)
def test_a_bad_entry_is_a_400_saying_what_to_send_and_writes_nothing(
    dev: Dev, entry: Any, says: str
) -> None:
    before = dev.items()
    status, body = dev.call("POST", EVENTS, entry)
    assert status == 400, body
    assert body["error"]["code"] == "invalid_input"
    assert says in body["error"]["message"], body
    assert dev.items() == before


@pytest.mark.parametrize("body", [b"", b"{nope", b'{"Source": NaN}'])
def test_a_body_that_is_not_a_json_entry_is_a_400(dev: Dev, body: bytes) -> None:
    status, answer = dev.call("POST", EVENTS, body)
    assert status == 400 and "put-events entry" in answer["error"]["message"]


def test_a_creation_event_naming_no_workflow_says_what_to_add(
    dev: Dev, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRIGGER_WORKFLOW", raising=False)
    before = dev.items()
    status, body = dev.put("Order Placed", {"sku": "cat-poster"})
    assert status == 400 and '"workflow"' in body["error"]["message"], body
    assert dev.items() == before


def test_a_page_of_another_origin_cannot_put_events(dev: Dev) -> None:
    ref = dev.waiting("a-7")
    entry = {"Source": SOURCE, "DetailType": "Workflow Event", "Detail": approval("a-7")}
    status, body = dev.call("POST", EVENTS, entry, {"Origin": "https://evil.example"})
    assert status == 403 and body["error"]["code"] == "cross_origin"
    assert dev.events_of(ref) == []


def test_only_post_is_served(dev: Dev) -> None:
    status, body = dev.call("GET", EVENTS)
    assert status == 405 and "POST" in body["error"]["message"]


# --- the CLI ---------------------------------------------------------------------------------


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), console=Console(out, err))
    return code, out.getvalue(), err.getvalue()


def test_dev_events_put_delivers_a_workflow_event(dev: Dev) -> None:
    ref = dev.waiting("c-1")
    detail = json.dumps(approval("c-1", payload="ana"))
    argv = ["dev-events", "put", "--detail-type", "Workflow Event", "--detail", detail]
    code, out, err = cli(*argv, "--id", "cli-1", "--url", dev.base)
    assert code == 0, err
    assert out.strip() == "event cli-1 delivered to approval/c-1 as 'approved'"
    code, out, _ = cli(*argv, "--id", "cli-1", "--url", dev.base, "--json")
    assert code == 0 and json.loads(out)["outcome"] == "delivered"
    dev.runtime.run_until_idle()
    assert dev.service.status(ref).output == {"by": "ana"} and len(dev.events_of(ref)) == 1


def test_dev_events_put_creates_and_reports_a_refusal(dev: Dev) -> None:
    argv = ["dev-events", "put", "--detail-type", "Order Placed", "--url", dev.base]
    code, out, _ = cli(*argv, "--detail", '{"workflow": "greet"}', "--id", "o-2")
    assert code == 0 and out.strip() == "event o-2 created greet/evb-o-2"
    code, out, err = cli(*argv, "--detail", '{"workflow": "nope"}')
    assert code == 1 and out == "" and "nope" in err and "404 unknown_workflow" in err
    code, _, err = cli(*argv, "--detail", "[1]")
    assert code == 2 and "JSON object" in err


def test_dev_events_help_shows_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["dev-events", "put", "--help"])
    shown = capsys.readouterr().out
    assert "examples:" in shown
    assert 'lambda-workflows dev-events put --detail-type "Workflow Event" --detail' in shown
