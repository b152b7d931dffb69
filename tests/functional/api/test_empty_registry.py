"""A deployment that registers no workflow (WORKFLOWS unset or empty) says so on every request
for one, and says how to fix it: set WORKFLOWS=name=module:Class."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lambda_workflows.testing import WorkflowTestEnv

from .conftest import Api


@pytest.fixture(scope="module")
def unconfigured() -> Iterator[Api]:
    env = WorkflowTestEnv({}, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


def test_listing_the_workflows_of_an_empty_registry_says_to_set_workflows(
    unconfigured: Api,
) -> None:
    answer = unconfigured.request("GET", "/workflows")
    assert (answer.status, answer.code) == (500, "configuration_error")
    assert "WORKFLOWS=name=module:Class" in answer.message


def test_creating_an_instance_with_nothing_registered_is_a_404_that_says_to_set_workflows(
    unconfigured: Api,
) -> None:
    answer = unconfigured.request("POST", "/workflows/orders/instances", {"id": "o-1"})
    assert (answer.status, answer.code) == (404, "unknown_workflow")
    assert "WORKFLOWS=name=module:Class" in answer.message
    assert unconfigured.table() == []
