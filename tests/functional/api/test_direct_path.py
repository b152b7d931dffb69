"""The API's direct path (``entrypoints/_api_direct.py``) answers as the resolver does.

A well-formed request is read and answered without Powertools' resolver or pydantic, so that a
cold start loads neither. What it reads must be what the resolver's validation reads, and what
it answers what the resolver answers. Here: its routes are the resolver's, it matches paths with
the resolver's pattern, every body or query it takes the models take too and read the same
way (generated inputs), its answers are its models' dumps for instances in every state, and a
storage failure or a domain error is answered by both with the same bytes. (Every test of this
folder also checks each GET both ways: see ``check_paths_agree`` in its conftest.)
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import api_gateway
from botocore.stub import Stubber
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.entrypoints import _api_direct as direct
from lambda_workflows.entrypoints import api as api_function
from lambda_workflows.entrypoints import api_models
from lambda_workflows.entrypoints._api_common import RUNTIME
from lambda_workflows.entrypoints._api_ops import capped
from lambda_workflows.entrypoints._api_resolver import app as resolver
from lambda_workflows.entrypoints._api_wire import SHAPES
from lambda_workflows.testing import WorkflowTestEnv

from .conftest import Api, build_event

INSTANCES = "/workflows/orders/instances"


def read(method: str, path: str, body: Any = None, **options: Any) -> tuple[Any, ...] | None:
    """What the direct path reads from a request (None: it leaves it to the resolver)."""
    event = build_event(method, path, body, **options)
    for route in direct.ROUTES:
        found = route.pattern.match(path) if route.method == method else None
        if found:
            try:
                return route.read(direct._Request(event, found.groupdict(), route.declared))
            except direct._Unread:
                return None
    return None


# --- the same routes, matched alike ---------------------------------------------------------


def test_its_routes_are_the_resolvers_in_the_same_order() -> None:
    declared = [
        (route.method, route.rule.pattern)
        for route in resolver._dynamic_routes + resolver._static_routes
        if route.include_in_schema
    ]
    ours = [(r.method, r.pattern.pattern) for r in direct.ROUTES]
    assert sorted(ours) == sorted(declared)
    dynamic = [(m, p) for m, p in declared if "(?P<" in p]
    assert [(m, p) for m, p in ours if "(?P<" in p] == dynamic


def test_a_segment_holds_what_the_resolver_routes() -> None:
    routed = re.sub(
        api_gateway._DYNAMIC_ROUTE_PATTERN, api_gateway._NAMED_GROUP_BOUNDARY_PATTERN, "<x>"
    )
    assert routed == f"(?P<x>{direct.SEGMENT})"


# --- what it reads, the models read the same way ----------------------------------------------

SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
JSON = st.recursive(
    SCALARS | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
IDS = st.one_of(st.none(), st.sampled_from(["a", "a-1", "_x", "-x", "é", "", "a" * 101]), JSON)
NEW = st.fixed_dictionaries(
    {}, optional={"id": IDS, "instance_id": IDS, "params": JSON, "param": JSON}
)
STEP = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.text(max_size=3), JSON),
        "count": st.one_of(st.integers(-1, 3), st.booleans(), st.floats(1, 2), st.just("1")),
        "type": st.one_of(
            st.sampled_from(["do", "sleep", "waitForEvent", "runWorkflow", "x"]), JSON
        ),
        "other": JSON,
    },
)
CHANGE = st.fixed_dictionaries(
    {},
    optional={
        "status": st.one_of(st.sampled_from(["pause", "resume", "terminate", "restart"]), JSON),
        "from_step": st.one_of(st.none(), STEP, JSON),
        "rollback": st.one_of(st.booleans(), st.just(1), st.just("yes"), st.none()),
        "extra": JSON,
    },
)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


@FAST
@given(st.one_of(NEW, JSON))
def test_a_new_instance_it_reads_is_the_models(body: Any) -> None:
    taken = read("POST", INSTANCES, body)
    if taken is not None:
        new = api_models.NewInstanceBody.model_validate(body or {})
        assert taken == ("orders", new.requested_id, new.params)


@FAST
@given(st.one_of(CHANGE, JSON))
def test_a_status_change_it_reads_is_the_models(body: Any) -> None:
    taken = read("PATCH", f"{INSTANCES}/i-1/status", body)
    if taken is not None:
        change = api_models.StatusChange.model_validate(body)
        selector = change.from_step.selector() if change.from_step is not None else None
        assert taken == ("orders", "i-1", change.status, selector, change.rollback)


@FAST
@given(st.one_of(st.fixed_dictionaries({"ids": st.lists(JSON, max_size=3)}), JSON))
def test_a_batch_delete_it_reads_is_the_models(body: Any) -> None:
    taken = read("POST", f"{INSTANCES}/delete", body)
    if taken is not None:
        assert taken == ("orders", api_models.DeleteBatchBody.model_validate(body).ids)


@FAST
@given(
    st.one_of(
        st.lists(st.dictionaries(st.text(max_size=3), JSON), max_size=3),
        st.fixed_dictionaries({"count": st.integers(-1, 101)}, optional={"params": JSON}),
        st.fixed_dictionaries({"instances": st.lists(JSON, max_size=3)}),
        JSON,
    )
)
def test_a_batch_it_reads_is_the_models(body: Any) -> None:
    taken = read("POST", f"{INSTANCES}/batch", body)
    if taken is not None and isinstance(body, dict):
        # an object form goes to the service whole, as the resolver passes it on
        assert taken == ("orders", TypeAdapter(api_models.JsonValue).validate_python(body))
    elif taken is not None:
        items = api_models.BATCH_LIST.validate_python(body)
        assert len(items) <= api_models.MAX_BATCH and taken == ("orders", items)


@FAST
@given(JSON)
def test_an_event_payload_it_reads_is_the_models_with_its_types(payload: Any) -> None:
    taken = read("POST", f"{INSTANCES}/i-1/events/ping", payload)
    assert taken is not None  # any JSON is a payload
    model = TypeAdapter(api_models.JsonValue).validate_python(payload)
    assert json.dumps(taken[3]) == json.dumps(model) and type(taken[3]) is type(model)


QUERY = st.one_of(
    st.sampled_from(["1", "50", "1000", "1001", "0", "-1", " 5", "5 ", "+5", "05", "1_0", ""]),
    st.text(max_size=4),
)


@FAST
@given(limit=QUERY, status=st.one_of(QUERY, st.sampled_from(["queued", "complete", "unknown"])))
def test_a_listing_query_it_reads_is_the_resolvers(limit: str, status: str) -> None:
    taken = read("GET", INSTANCES, query={"limit": limit, "status": status})
    if taken is not None:
        assert taken[3] == TypeAdapter(int).validate_python(limit) and 1 <= taken[3] <= 1000
        assert taken[1] == api_models.InstanceStatus(status)


def test_a_repeated_query_parameter_or_header_is_left_to_the_resolver() -> None:
    event = build_event("GET", INSTANCES, query={"limit": "5"})
    event["multiValueQueryStringParameters"] = {"limit": ["5", "6"]}
    assert direct.answer(event) is None
    event = build_event("POST", f"{INSTANCES}/i-1/events/ping", {}, headers={"X": "1"})
    event["multiValueHeaders"] = {"Idempotency-Key": ["k1"], "idempotency-key": ["k2"]}
    assert direct.answer(event) is None


# --- what it answers ------------------------------------------------------------------------


def undo(ctx: Any, output: Any, error: Any) -> None:
    """A rollback that returns."""


class Charge(WorkflowEntrypoint):
    """A child: fails on request, else returns."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        if event.payload.get("fail"):
            raise ValueError("declined")
        return await step.do("charge", lambda: {"charged": True})


class Order(WorkflowEntrypoint):
    """A step of each kind, a large output, a child, a retried step and a rollback."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("big", lambda: "x" * 70_000, rollback=undo)

        def flaky(ctx: Any) -> int:
            if ctx.attempt < 2:
                raise RuntimeError("try again")
            return int(ctx.attempt)

        await step.do("flaky", {"retries": {"limit": 2, "delay": "1 second"}}, flaky)
        await step.run_workflow("pay", workflow="charge", params=event.payload)
        await step.sleep("nap", "1 hour")
        got = await step.wait_for_event("approve", type="approved", timeout="1 day")
        if event.payload.get("explode"):
            raise KeyError("boom")
        return {"approved": got.payload}


@pytest.fixture(scope="module")
def varied() -> Iterator[WorkflowTestEnv]:
    """Instances in every state an answer shows, on the test kit's in-memory store."""
    env = WorkflowTestEnv({"orders": Order, "charge": Charge})
    env.create("orders", "waiting", {})
    env.create("orders", "done", {})
    env.create("orders", "rolled-back", {"explode": True})
    env.create("orders", "child-failed", {"fail": True})
    env.create("orders", "paused", {})
    env.run_until_idle()
    env.get("orders", "done").send_event(type="approved", payload={"ok": 1})
    env.get("orders", "rolled-back").send_event(type="approved")
    env.get("orders", "paused").pause()
    env.run_until_idle()
    yield env
    env.close()


def dumped(model: str, answer: dict[str, Any]) -> str:
    return json.dumps(
        getattr(api_models, model).model_validate(answer).model_dump(mode="json"),
        separators=(",", ":"),
    )


def test_each_answer_is_shaped_as_its_model_dumps_it(varied: WorkflowTestEnv) -> None:
    service = varied.service
    instances = (
        service.list("orders", None, None, 100).records
        + service.list("charge", None, None, 100).records
    )
    statuses = {str(r.status) for r in instances}
    assert {"waiting", "complete", "errored", "paused"} <= statuses, statuses
    for record in instances:
        details = capped(service.status(record.ref).to_dict())
        assert json.dumps(SHAPES["InstanceDetails"](details), separators=(",", ":")) == dumped(
            "InstanceDetails", details
        ), record.id
        history = service.history(record.ref).to_dict()
        assert json.dumps(SHAPES["HistoryBody"](history), separators=(",", ":")) == dumped(
            "HistoryBody", history
        )
    shown = [capped(service.status(r.ref).to_dict()) for r in instances]
    kinds = {step["type"] for view in shown for step in view["steps"]}
    assert {"do", "sleep", "waitForEvent", "runWorkflow", "rollback"} <= kinds
    assert any(step.get("output_truncated") for view in shown for step in view["steps"])
    assert any(view["parent"] for view in shown) and any(view["rollback"] for view in shown)
    for name in ("orders", "charge"):
        described = service.describe(name).to_dict() | {"schedules": []}
        assert json.dumps(SHAPES["WorkflowDetails"](described), separators=(",", ":")) == dumped(
            "WorkflowDetails", described
        )


def test_each_steps_output_is_shaped_as_its_model_dumps_it(varied: WorkflowTestEnv) -> None:
    # a runWorkflow row's output is its child's: the step route answers it as any other
    service = varied.service
    kinds = set()
    for record in service.list("orders", None, None, 100).records:
        for step in service.status(record.ref).steps:
            if step.type == "rollback":
                continue
            output = service.step_output(record.ref, step.name, step.count).to_dict()
            kinds.add(output["type"])
            assert json.dumps(SHAPES["StepOutputBody"](output), separators=(",", ":")) == dumped(
                "StepOutputBody", output
            )
    assert kinds == {"do", "sleep", "waitForEvent", "runWorkflow"}


# --- failures answered alike ----------------------------------------------------------------


def answered_both_ways(api: Api, event: dict[str, Any], fault: Any) -> list[dict[str, Any]]:
    """The answer of each path to ``event``, with ``fault`` armed before each."""
    runtime = api.aws.runtime
    answers = []
    for path in ("direct", "resolver"):
        with fault():
            token = RUNTIME.set(runtime)
            try:
                if path == "direct":
                    answers.append(direct.answer(event))
                else:
                    answers.append(resolver.resolve(event, None))
            finally:
                RUNTIME.reset(token)
    return answers


def test_a_storage_failure_is_the_same_503_on_both_paths(api: Api) -> None:
    api.request("POST", INSTANCES, {"id": "both-503"})
    client = api.aws.runtime.store.client

    def failing() -> Stubber:
        stubber = Stubber(client)
        stubber.add_client_error("query", "InternalServerError", http_status_code=500)
        return stubber

    direct_answer, resolver_answer = answered_both_ways(
        api, build_event("GET", f"{INSTANCES}/both-503"), failing
    )
    assert direct_answer is not None and direct_answer["statusCode"] == 503
    assert direct_answer == resolver_answer
    assert direct_answer["multiValueHeaders"] == {
        "Retry-After": ["1"],
        "Content-Type": ["application/json"],
    }


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/workflows/nope", None),
        ("GET", f"{INSTANCES}/never-created", None),
        ("GET", f"{INSTANCES}/never-created/steps/x", None),
        ("PATCH", f"{INSTANCES}/never-created/status", {"status": "pause"}),
        ("POST", f"{INSTANCES}/never-created/events/ping", {"a": "é"}),
        ("DELETE", f"{INSTANCES}/bad.id", None),
    ],
)
def test_a_domain_error_is_the_same_answer_on_both_paths(
    api: Api, method: str, path: str, body: Any
) -> None:
    event = build_event(method, path, body)
    direct_answer, resolver_answer = answered_both_ways(
        api, api_function._with_json_media_type(event), contextlib.nullcontext
    )
    assert direct_answer is not None and direct_answer["statusCode"] in (404, 409)
    assert direct_answer == resolver_answer
