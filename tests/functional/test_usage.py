"""``status().usage``: what one instance used, counted exactly, on both stores, with no AWS
call of its own (the counts ride on writes the engine makes anyway)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.runtime import LAMBDA_RUNNER
from lambda_workflows.cli.instances import usage_line
from lambda_workflows.engine.model import InstanceStatusView, InstanceUsage
from lambda_workflows.entrypoints.api import app
from lambda_workflows.testing import WorkflowTestEnv

from .api.conftest import Api
from .test_costs import count_calls
from .workflows_under_test import Sequential


class Approval(WorkflowEntrypoint):
    """One step, then an event (or its timeout a day later)."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("ask", lambda: "asked")
        approval = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return approval.payload


def items_written(env: WorkflowTestEnv) -> Counter[str]:
    """Items the runtime's successful DynamoDB writes wrote (a transaction writes each of its
    items), by operation, from the request parameters; a failed condition wrote nothing."""
    written: Counter[str] = Counter()
    events = env.aws.runtime.store.client.meta.events

    def asked(model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if model.name == "TransactWriteItems":
            context["items"] = len(params["TransactItems"])
        elif model.name in ("PutItem", "UpdateItem"):
            context["items"] = 1

    def answered(http_response: Any, model: Any, context: dict[str, Any], **_: Any) -> None:
        if http_response.status_code < 300:
            written[model.name] += context.get("items", 0)

    events.register("before-parameter-build.dynamodb", asked)
    events.register("after-call.dynamodb", answered)
    return written


def test_three_steps_and_a_one_hour_sleep_count_9_writes_2_reads_2_invocations_1_schedule(
    aws_env: Any,
) -> None:
    # GIVEN the deployed runner's pacing on moto, every AWS call counted
    env = aws_env({"seq": Sequential}, settings=LAMBDA_RUNNER)
    calls = count_calls(env)
    written = items_written(env)
    # WHEN step 0, a 1-hour sleep, then steps 1 and 2 run to the end
    inst = env.create("seq", id="u-1", params={"steps": 3, "sleep": True})
    env.run_until_idle()
    # THEN: 4 journal entries (3 steps, the sleep) + 5 instance-item writes (create, lease,
    # wait, lease, finish); one load per invocation; one schedule for the sleep
    usage = inst.status().usage
    assert usage == InstanceUsage(writes=9, reads=2, invocations=2, schedules=1)
    # ... and those are the calls the runtime actually made (status() itself read once)
    assert usage.writes == sum(written.values())
    assert usage.reads == calls["dynamodb.Query"] - 1
    assert usage.invocations == env.invocations
    assert usage.schedules == calls["scheduler.CreateSchedule"]


def test_the_memory_store_counts_the_same() -> None:
    with WorkflowTestEnv({"seq": Sequential}, settings=LAMBDA_RUNNER) as env:
        inst = env.create("seq", id="u-1", params={"steps": 3, "sleep": True})
        env.run_until_idle()
        assert inst.status().usage == InstanceUsage(writes=9, reads=2, invocations=2, schedules=1)


@pytest.mark.parametrize("backend", ["memory", "aws"])
def test_an_event_counts_the_items_of_its_transaction(backend: str) -> None:
    with WorkflowTestEnv({"approvals": Approval}, backend=backend, settings=LAMBDA_RUNNER) as env:
        written = items_written(env) if backend == "aws" else Counter[str]()
        inst = env.create("approvals", id="a-1")
        env.run_until_idle()  # the step, then waiting: its timeout is a schedule
        inst.send_event(type="approved", payload={"by": "ana"}, key="k-1")
        inst.send_event(type="approved", payload={"by": "ana"}, key="k-1")  # a retry: nothing
        env.run_until_idle()
        status = inst.status()
        assert status.output == {"by": "ana"}
        # create, lease (the step), wait, finish = 4 item writes (the event's replay runs no
        # step code: no lease, lambda_workflows.engine.instances.lazy_lease); the event's
        # transaction:
        # the instance item, the event, its key's marker = 3; journal: ask, approval,
        # delivery = 3
        assert status.usage == InstanceUsage(writes=10, reads=2, invocations=2, schedules=1)
        if backend == "aws":
            assert status.usage.writes == sum(written.values())


def test_a_hundred_steps_cost_no_call_more_than_before(aws_env: Any) -> None:
    env = aws_env({"seq": Sequential}, settings=LAMBDA_RUNNER)
    calls = count_calls(env)
    inst = env.create("seq", id="u-100", params={"steps": 100})
    env.run_until_idle()
    # create and its direct invoke, lease, load, 100 results, finish: nothing for the counting
    assert sum(calls.values()) == 1 + 1 + 1 + 1 + 100 + 1
    assert inst.status().usage == InstanceUsage(writes=103, reads=1, invocations=1, schedules=0)


def test_a_retry_slept_in_process_sets_no_schedule() -> None:
    attempts: list[int] = []

    class Flaky(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            def fetch() -> str:
                attempts.append(1)
                if len(attempts) < 2:
                    raise ConnectionError("down")
                return "ok"

            return await step.do("fetch", {"retries": {"limit": 2, "delay": 1}}, fetch)

    with WorkflowTestEnv({"flaky": Flaky}, settings=LAMBDA_RUNNER) as env:
        inst = env.create("flaky", id="f-1")
        env.run_until_idle()
        # create, lease, finish; the failed attempt and the result: the 1 s delay was slept
        assert inst.status().usage == InstanceUsage(writes=5, reads=1, invocations=1, schedules=0)


def test_status_through_the_api_shows_usage_and_the_client_reads_it_back() -> None:
    with WorkflowTestEnv({"seq": Sequential}, backend="aws", settings=LAMBDA_RUNNER) as env:
        api = Api(env)
        assert (
            api.request(
                "POST",
                "/workflows/seq/instances",
                {"id": "h-1", "params": {"steps": 3, "sleep": True}},
            ).status
            == 201
        )
        env.run_until_idle()
        body = api.request("GET", "/workflows/seq/instances/h-1").body
        assert body["usage"] == {"writes": 9, "reads": 2, "invocations": 2, "schedules": 1}
        view = InstanceStatusView.from_dict(body)
        assert view.usage == InstanceUsage(writes=9, reads=2, invocations=2, schedules=1)
        assert view.to_dict()["usage"] == body["usage"]


def test_a_status_without_usage_reads_back_as_none() -> None:
    shown = {"id": "x", "workflow": "w", "status": "queued"}
    assert InstanceStatusView.from_dict(shown).usage is None


def test_the_openapi_document_describes_usage() -> None:
    schemas = json.loads(app.get_openapi_json_schema())["components"]["schemas"]
    assert "UsageView" in json.dumps(schemas["InstanceDetails"]["properties"]["usage"])
    fields = schemas["UsageView"]["properties"]
    assert set(fields) == {"writes", "reads", "invocations", "schedules"}
    assert "not counted" in fields["writes"]["description"]


def test_the_cli_line_says_each_count_in_the_singular_or_plural() -> None:
    usage = {"writes": 9, "reads": 1, "invocations": 1, "schedules": 0}
    assert usage_line(usage) == "usage: 9 writes, 1 read, 1 invocation, 0 schedules"
