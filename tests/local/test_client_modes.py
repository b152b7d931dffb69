"""The Python client behaves the same in its two modes: direct (the engine's instance service on
the stack's resources) and HTTP (the API of `lambda-workflows dev`, at a URL).

Each test runs once per mode against one `lambda-workflows dev` started in-process on a free port:
the direct client works on the embedded AWS that server uses, the HTTP client calls the server. The
tests drive the runner themselves (``run_until_idle``), so what each one sees is deterministic.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")

from lambda_workflows import (
    InstanceAlreadyExists,
    InstanceNotFound,
    InstanceStatus,
    InstanceStatusView,
    InvalidInput,
    InvalidTransition,
    StepInfo,
    UnknownWorkflow,
    Workflow,
    WorkflowError,
)
from lambda_workflows.aws.runtime import get_runtime
from lambda_workflows.client import WorkflowInstance
from lambda_workflows.engine.errors import ConfigurationError, InfrastructureError
from lambda_workflows.engine.instances.ports import InstancePage
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.engine.model import InstanceRecord, InstanceRef
from lambda_workflows.http_service import ApiUnavailable, HttpInstanceService
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.remote import URL_VARIABLE
from tests.functional.workflows_under_test import Lifecycle

from .devserver import RunningDev, serving

MODES = ("direct", "http")
WORKFLOWS = {name: Lifecycle for name in ("lifecycle", "listing-direct", "listing-http")}


class Dev(RunningDev):
    """A running in-process `lambda-workflows dev` (no worker: the test runs the work)."""

    @property
    def service(self) -> InstanceService:
        """The instance service of the server's own runtime: what the direct mode uses."""
        return self.runtime.aws.runtime.service


@dataclass
class Mode:
    """One way of building the client, and the server both ways share."""

    name: str
    dev: Dev

    def workflow(self, name: str = "lifecycle") -> Workflow:
        if self.name == "http":
            return Workflow(name, url=self.dev.url)
        return Workflow(name, service=self.dev.service)

    def id(self, text: str) -> str:
        """An instance id of this mode's own (both modes share one server)."""
        return f"{self.name}-{text}"

    def run_until_idle(self) -> None:
        self.dev.runtime.run_until_idle()


@pytest.fixture(scope="module")
def dev() -> Iterator[Dev]:
    with serving(LocalRuntime(WORKFLOWS, out=lambda line: None), worker=False) as running:
        yield Dev(running.runtime, running.server)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest, dev: Dev) -> Mode:
    return Mode(request.param, dev)


def test_create_get_and_status_answer_the_direct_modes_types_and_values(mode: Mode) -> None:
    # GIVEN a client of the lifecycle workflow
    orders = mode.workflow()

    # WHEN an instance is created and read back before and after it runs
    instance = orders.create(id=mode.id("view-1"), params={"amount": 5})
    queued = instance.status()
    mode.run_until_idle()
    waiting = orders.get(mode.id("view-1")).status()

    # THEN the handle and the views are the direct mode's types, with its values
    assert isinstance(instance, WorkflowInstance) and instance.id == mode.id("view-1")
    assert isinstance(queued, InstanceStatusView) and queued.status == "queued"
    assert queued.steps == [] and isinstance(queued.created_at, float)
    assert waiting.status is InstanceStatus.WAITING
    assert all(isinstance(step, StepInfo) for step in waiting.steps)
    assert [(s.name, s.type, s.status) for s in waiting.steps] == [
        ("charge", "do", "complete"),
        ("cool down", "sleep", "complete"),
        ("approval", "waitForEvent", "waiting"),
    ]
    assert waiting.steps[0].output == {"charged": 5}
    # and field for field what the engine itself shows (times to the millisecond)
    ref = InstanceRef("lifecycle", mode.id("view-1"))
    assert waiting.to_dict() == mode.dev.service.status(ref).to_dict()


def test_listing_filters_by_status_and_pages_with_a_cursor(mode: Mode) -> None:
    # GIVEN five instances, two of them terminated
    listing = mode.workflow(f"listing-{mode.name}")
    ids = [f"l-{i}" for i in range(5)]
    listing.create_batch([{"id": i, "params": {"amount": 1}} for i in ids])
    for i in ids[:2]:
        listing.get(i).terminate()

    # WHEN they are listed by status, and page by page
    terminated = listing.list(status="terminated")
    queued = listing.list(status="queued", limit=100)
    pages = [listing.list(limit=2)]
    while pages[-1].cursor is not None:
        pages.append(listing.list(limit=2, cursor=pages[-1].cursor))

    # THEN each page is the direct mode's page of records, and every instance is on one
    assert isinstance(terminated, InstancePage)
    assert all(isinstance(r, InstanceRecord) for r in terminated.records)
    assert sorted(r.id for r in terminated.records) == ids[:2]
    assert {r.status for r in terminated.records} == {InstanceStatus.TERMINATED}
    assert all(r.finished_at is not None for r in terminated.records)
    assert sorted(r.id for r in queued.records) == ids[2:]
    assert len(pages[0].records) == 2
    listed = [r.id for page in pages for r in page.records]
    assert sorted(listed) == ids


def test_create_batch_reports_a_taken_id_and_a_bad_id_and_creates_the_rest(mode: Mode) -> None:
    # GIVEN an instance whose id a batch asks for again
    orders = mode.workflow()
    taken = orders.create(id=mode.id("batch-taken"), params={"amount": 1}).id

    # WHEN a batch holds it, an invalid id and two new ones
    result = orders.create_batch(
        [
            {"id": mode.id("batch-1"), "params": {"amount": 1}},
            {"id": taken},
            {"id": "not an id!"},
            {"id": mode.id("batch-2"), "params": {"amount": 2}},
        ]
    )

    # THEN the new ones are created and each other one is reported by its index and code
    assert sorted(result["created"]) == [mode.id("batch-1"), mode.id("batch-2")]
    assert [(e["index"], e["id"], e["code"]) for e in result["errors"]] == [
        (1, taken, "instance_exists"),
        (2, "not an id!", "invalid_input"),
    ]
    assert orders.get(mode.id("batch-2")).status().status == "queued"


def test_create_batch_with_count_creates_instances_with_generated_ids(mode: Mode) -> None:
    orders = mode.workflow()

    # WHEN the client asks for 3 instances with the same params (Cloudflare's {count, params})
    result = orders.create_batch(count=3, params={"amount": 4})

    # THEN 3 distinct generated ids are created, each queued with those params
    assert result["errors"] == [] and len(set(result["created"])) == 3
    for instance_id in result["created"]:
        assert orders.get(instance_id).status().status == "queued"


def test_create_batch_refuses_a_bad_count_whole_in_both_modes(mode: Mode) -> None:
    orders = mode.workflow()

    with pytest.raises(InvalidInput, match="count must be from 1 to 100, got 101"):
        orders.create_batch(count=101)
    with pytest.raises(InvalidInput, match="both count and instances"):
        orders.create_batch({"count": 1, "instances": []})
    with pytest.raises(TypeError, match="not both"):
        orders.create_batch([{}], count=1)

    # and the instances form answers as the list does
    result = orders.create_batch({"instances": [{"id": mode.id("bi-1")}, {"id": "bad id"}]})
    assert result["created"] == [mode.id("bi-1")]
    assert [(e["index"], e["code"]) for e in result["errors"]] == [(1, "invalid_input")]


def test_pause_resume_terminate_and_restart(mode: Mode) -> None:
    # GIVEN an instance waiting for its event
    instance = mode.workflow().create(id=mode.id("control-1"), params={"amount": 1})
    mode.run_until_idle()

    # WHEN it is paused, resumed, restarted and terminated, THEN each change shows
    instance.pause()
    assert instance.status().status == "paused"
    instance.resume()
    mode.run_until_idle()
    assert instance.status().status == "waiting"
    instance.restart()
    assert instance.status().status == "queued"
    mode.run_until_idle()
    restarted = instance.status()  # a fresh journal: everything ran again, up to the wait
    assert [(s.name, s.status) for s in restarted.steps][-1] == ("approval", "waiting")
    instance.terminate()
    assert instance.status().status == "terminated"


def test_send_event_reaches_a_waiting_instance_and_a_key_makes_a_retry_store_nothing(
    mode: Mode,
) -> None:
    # GIVEN an instance waiting for "approved"
    instance = mode.workflow().create(id=mode.id("event-1"), params={"amount": 3})
    mode.run_until_idle()

    # WHEN the event is sent twice with one key (a retry after a lost answer)
    instance.send_event(type="approved", payload={"user": "ana"}, key="approval-1")
    instance.send_event(type="approved", payload={"user": "ana"}, key="approval-1")

    # THEN one event is stored, and the instance completes with its payload
    stored = mode.dev.runtime.aws.runtime.store.load(instance.ref).events
    assert [e.key for e in stored] == ["approval-1"]
    mode.run_until_idle()
    assert instance.status().output == {"receipt": {"charged": 3}, "by": "ana"}
    # the same key after it finished is still a retry (no error); a new send is refused
    instance.send_event(type="approved", payload={"user": "ana"}, key="approval-1")
    with pytest.raises(InvalidTransition):
        instance.send_event(type="approved", payload={"user": "bo"})


def _raises(call: Callable[[], Any], expected: type[WorkflowError]) -> WorkflowError:
    with pytest.raises(expected) as caught:
        call()
    return caught.value


def test_errors_are_the_engines_exceptions_in_both_modes(mode: Mode) -> None:
    orders = mode.workflow()
    taken = orders.create(id=mode.id("errors-1"), params={"amount": 1})
    taken.terminate()

    _raises(lambda: mode.workflow("no-such-workflow").create(params={}), UnknownWorkflow)
    _raises(lambda: mode.workflow("no-such-workflow").list(), UnknownWorkflow)
    missing = _raises(lambda: orders.get(mode.id("missing")), InstanceNotFound)
    assert mode.id("missing") in str(missing)
    exists = _raises(lambda: orders.create(id=mode.id("errors-1")), InstanceAlreadyExists)
    assert isinstance(exists, InstanceAlreadyExists)
    assert (exists.workflow, exists.instance_id) == ("lifecycle", mode.id("errors-1"))
    _raises(taken.terminate, InvalidTransition)
    _raises(lambda: taken.send_event(type="approved"), InvalidTransition)
    _raises(lambda: orders.create(id="not an id!"), InvalidInput)
    _raises(lambda: orders.create(params={"too": "x" * (1024 * 1024)}), InvalidInput)
    _raises(lambda: orders.list(status="bogus"), InvalidInput)
    _raises(lambda: orders.list(limit=0), InvalidInput)
    _raises(lambda: taken.send_event(type="not a type!"), InvalidInput)


# --- choosing the mode ----------------------------------------------------------------------


def test_workflows_url_selects_the_http_mode(dev: Dev, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN WORKFLOWS_URL naming the dev server, and none of the stack's variables
    monkeypatch.setenv(URL_VARIABLE, dev.url)
    monkeypatch.delenv("TABLE_NAME", raising=False)

    # WHEN a client is built with nothing but a name
    orders = Workflow("lifecycle")
    instance = orders.create(id="from-url-1", params={"amount": 1})

    # THEN it works over HTTP, on the server's instances
    assert orders.url == dev.url and isinstance(orders.service, HttpInstanceService)
    assert dev.service.get(instance.ref).status == "queued"
    # an explicit url= or service= wins over the variable
    assert Workflow("lifecycle", url="http://127.0.0.1:1").url == "http://127.0.0.1:1"
    direct = Workflow("lifecycle", service=dev.service)
    assert direct.url is None and direct.service is dev.service


def test_without_a_url_or_the_stacks_variables_the_error_says_how_to_reach_the_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a script's environment: no WORKFLOWS_URL, none of the variables a Lambda gets
    for name in (URL_VARIABLE, "TABLE_NAME", "WORK_QUEUE_URL", "WORK_QUEUE_ARN"):
        monkeypatch.delenv(name, raising=False)
    get_runtime.cache_clear()

    # WHEN the client is used in the direct mode
    with pytest.raises(ConfigurationError) as caught:
        Workflow("orders").create(id="o-1")

    # THEN the error names the variables, and says to give a URL or set WORKFLOWS_URL
    message = str(caught.value)
    assert "TABLE_NAME" in message and "url=" in message and URL_VARIABLE in message
    assert "lambda-workflows dev` locally" not in message
    get_runtime.cache_clear()


def test_an_api_nobody_answers_at_is_a_retryable_infrastructure_error() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    orders = Workflow("orders", url=f"http://127.0.0.1:{port}")
    error = _raises(lambda: orders.create(id="o-1"), ApiUnavailable)
    assert isinstance(error, InfrastructureError)
    assert f"127.0.0.1:{port}" in str(error)
