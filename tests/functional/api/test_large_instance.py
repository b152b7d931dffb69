"""An instance of 25,000 steps (the most an instance may have) that each failed once, read
through the real ApiFunction handler: every answer stays under 1 MiB, and its pages put end to
end are exactly its whole timeline and its whole history (issue 24, item 1).

The handler works here on the test kit's in-memory store: 50,000 journal entries are written
there in seconds, where moto takes minutes to write them and about as long to read each page
back. The pages are cut in the instance service, the same on every store; the API tests on moto
(``test_paged_answers.py``) page the same routes on DynamoDB.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.instances.pages import STEPS_PAGE
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.entrypoints import api as api_function
from lambda_workflows.testing import WorkflowTestEnv

from .conftest import build_event, check_paths_agree
from .many_steps import FlakySteps, record_many_steps

STEPS = 25_000
MIB = 1024 * 1024
INSTANCE = "/workflows/flaky/instances/big"


@dataclass
class ServiceRuntime:
    """What the API handler reads of its runtime, over the test kit's in-memory store."""

    workflows: Any
    clock: Clock
    service: InstanceService


@dataclass
class Read:
    """One answer of the handler: its status, its body as sent, and the body decoded."""

    status: int
    raw: str
    body: Any


class MemoryApi:
    """The real ApiFunction handler on a memory env's instance service."""

    def __init__(self, env: WorkflowTestEnv) -> None:
        self.env = env
        self.runtime = ServiceRuntime(env.workflows, env.clock, env.service)
        self._handler = api_function.make_handler(lambda: self.runtime)  # type: ignore[arg-type, return-value]

    def get(self, path: str, check_paths: bool = False, **query: str) -> Read:
        event = build_event("GET", path, query=query or None)
        response = self._handler(event, None)
        if check_paths:  # the resolver answers it byte for byte alike (a second read: slow)
            check_paths_agree(self.runtime, event, response)
        return Read(response["statusCode"], response["body"], json.loads(response["body"]))


@pytest.fixture(scope="module")
def api() -> Iterator[MemoryApi]:
    env = WorkflowTestEnv({"flaky": FlakySteps})
    record_many_steps(env, "flaky", "big", STEPS)
    yield MemoryApi(env)


@pytest.fixture(scope="module")
def whole_status(api: MemoryApi) -> dict[str, Any]:
    """Its status in one piece, as the engine shows it in process."""
    return api.env.service.status(InstanceRef("flaky", "big")).to_dict()


def test_its_whole_status_would_not_fit_a_lambda_answer(whole_status: dict[str, Any]) -> None:
    # the instance this file reads is the issue's: in one piece, its status is over 6 MB
    assert len(json.dumps(whole_status, separators=(",", ":"))) > 6 * MIB


def test_every_answer_is_under_1_mib_and_the_steps_pages_make_the_whole_timeline(
    api: MemoryApi, whole_status: dict[str, Any]
) -> None:
    # WHEN its status is read, then every page of its steps after the status's first
    first = api.get(INSTANCE, check_paths=True)
    pages = [first]
    cursor = first.body["steps_cursor"]
    while cursor is not None:
        pages.append(api.get(f"{INSTANCE}/steps", check_paths=len(pages) == 1, cursor=cursor))
        assert pages[-1].status == 200, pages[-1].body
        cursor = pages[-1].body["cursor"]

    # THEN every answer is under 1 MiB, and the status carries the first page and the count
    assert max(len(page.raw) for page in pages) < MIB
    assert first.status == 200 and first.body["status"] == "complete"
    assert first.body["steps_total"] == STEPS
    assert 0 < len(first.body["steps"]) <= STEPS_PAGE
    assert all(page.body["total"] == STEPS for page in pages[1:])
    # AND the pages put end to end are the whole timeline, row for row, each failed attempt
    # with its traceback
    rows = [row for page in pages for row in page.body["steps"]]
    assert [row["name"] for row in rows] == [f"step {n}" for n in range(STEPS)]
    assert rows == [{**row, "output_truncated": False} for row in whole_status["steps"]]
    failed = rows[-1]["attempt_history"][0]
    assert failed["error"]["message"] == f"step {STEPS - 1} lost its connection"
    assert "Traceback (most recent call last)" in failed["error"]["traceback"]


def test_every_history_page_is_under_1_mib_and_the_pages_make_the_whole_history(
    api: MemoryApi,
) -> None:
    # WHEN every page of its history is read
    pages = [api.get(f"{INSTANCE}/history", check_paths=True)]
    while "cursor" in pages[-1].body:
        cursor = pages[-1].body["cursor"]
        pages.append(api.get(f"{INSTANCE}/history", check_paths=len(pages) == 1, cursor=cursor))
        assert pages[-1].status == 200, pages[-1].body

    # THEN every page is under 1 MiB, and their entries and events put end to end are the
    # whole history, the one `lambda-workflows instances export` writes
    assert max(len(page.raw) for page in pages) < MIB
    whole = api.env.service.history(InstanceRef("flaky", "big")).to_dict()
    assert len(whole["entries"]) == 2 * STEPS
    assembled = {
        **{key: value for key, value in pages[0].body.items() if key != "cursor"},
        "entries": [entry for page in pages for entry in page.body["entries"]],
        "events": [event for page in pages for event in page.body["events"]],
    }
    assert assembled == whole
    # AND each page carries the same header, so any one of them says whose history it is
    headers = {json.dumps({k: v for k, v in p.body.items() if k not in HEADLESS}) for p in pages}
    assert len(headers) == 1


HEADLESS = {"entries", "events", "cursor"}
