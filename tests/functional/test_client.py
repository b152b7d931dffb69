"""The Python client: from users' code (runtime built from the environment, as on Lambda)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import InstanceAlreadyExists, InstanceNotFound, InvalidTransition
from lambda_workflows.aws.runtime import get_runtime
from lambda_workflows.client import Workflow

from .workflows_under_test import Lifecycle


@pytest.fixture
def from_environment(aws_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An embedded AWS whose resources are named by environment variables, like a Lambda's."""
    env = aws_env({"lifecycle": Lifecycle})
    for name, value in env.aws.environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("WORKFLOWS", "lifecycle=tests.functional.workflows_under_test:Lifecycle")
    get_runtime.cache_clear()  # the client builds its runtime from the environment
    yield env
    get_runtime.cache_clear()


def test_client_creates_controls_and_reads_instances(from_environment: Any) -> None:
    env = from_environment
    orders = Workflow("lifecycle")
    instance = orders.create(id="order-9", params={"amount": 5})
    assert instance.id == "order-9"
    assert instance.status().status == "queued"
    with pytest.raises(InstanceAlreadyExists):
        orders.create(id="order-9")
    env.run_until_idle()  # the runner sees what the client wrote: same table, same queue
    assert orders.get("order-9").status().status == "waiting"
    instance.send_event(type="approved", payload={"user": "cy"})
    env.run_until_idle()
    assert instance.status().output == {"receipt": {"charged": 5}, "by": "cy"}
    with pytest.raises(InvalidTransition):
        instance.terminate()
    with pytest.raises(InstanceNotFound):
        orders.get("nope")


def test_client_batch_is_idempotent_and_listing_pages(from_environment: Any) -> None:
    orders = Workflow("lifecycle")
    first = orders.create_batch([{"id": f"b-{i}", "params": {"amount": i}} for i in range(5)])
    assert sorted(first["created"]) == [f"b-{i}" for i in range(5)]
    again = orders.create_batch([{"id": "b-1"}, {"id": "b-5", "params": {"amount": 5}}])
    assert again["created"] == ["b-5"]
    assert [(e["id"], e["code"]) for e in again["errors"]] == [("b-1", "instance_exists")]
    page = orders.list(limit=4)
    assert len(page.records) == 4 and page.cursor
    rest = orders.list(limit=4, cursor=page.cursor)
    ids = [r.id for r in page.records + rest.records]
    assert sorted(ids) == [f"b-{i}" for i in range(6)]
    queued = orders.list(status="queued", limit=100)
    assert len(queued.records) == 6


def test_pause_resume_restart_through_the_client(from_environment: Any) -> None:
    env = from_environment
    instance = Workflow("lifecycle").create(id="p-1", params={"amount": 1})
    env.run_until_idle()
    instance.pause()
    assert instance.status().status == "paused"
    instance.resume()
    env.run_until_idle()
    assert instance.status().status == "waiting"
    instance.restart()
    assert instance.status().status == "queued"
    env.run_until_idle()
    status = instance.status()  # a fresh journal: everything ran again, up to the event wait
    assert status.status == "waiting"
    assert [(s.name, s.status) for s in status.steps] == [
        ("charge", "complete"),
        ("cool down", "complete"),
        ("approval", "waiting"),
    ]
