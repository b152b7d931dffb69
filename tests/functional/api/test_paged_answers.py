"""Bounded answers on DynamoDB (moto): an instance's status carries the first page of its steps,
``GET …/steps`` and ``GET …/history`` page with ``limit`` and ``cursor``, a row shows at most 25
attempts, and a cursor the API did not hand out for that instance and route is a 400 that
writes nothing. A small instance's answers keep their shape. (Issue 24, item 1; the
25,000-step instance is read in ``test_large_instance.py``.)"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows.engine.instances.pages import ATTEMPTS_SHOWN, PAGE_BYTES
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.testing import Replayer, WorkflowTestEnv

from .conftest import Answer, Api
from .many_steps import FlakySteps, LoudSteps, StubbornStep

WORKFLOWS = {"flaky": FlakySteps, "loud": LoudSteps, "stubborn": StubbornStep}
MIB = 1024 * 1024


class Calls:
    """The DynamoDB operations a client made, by name."""

    def __init__(self) -> None:
        self.made: Counter[str] = Counter()

    def __call__(self, model: Any, **_: Any) -> None:
        self.made[model.name] += 1


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    env = WorkflowTestEnv(WORKFLOWS, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


def instance(api: Api, workflow: str, instance_id: str, **params: Any) -> str:
    """The path of a new instance of ``workflow``, run until it is idle."""
    path = f"/workflows/{workflow}/instances"
    if api.request("GET", f"{path}/{instance_id}").status == 404:
        assert api.request("POST", path, {"id": instance_id, "params": params}).status == 201
        api.env.run_until_idle()
    return f"{path}/{instance_id}"


def read(api: Api, path: str, **query: str) -> Answer:
    answer = api.request("GET", path, query=query or None)
    assert answer.status == 200, answer.body
    return answer


def all_steps(api: Api, path: str, limit: str) -> list[Answer]:
    pages = [read(api, f"{path}/steps", limit=limit)]
    while pages[-1].body["cursor"] is not None:
        pages.append(read(api, f"{path}/steps", limit=limit, cursor=pages[-1].body["cursor"]))
    return pages


def all_history(api: Api, path: str, limit: str) -> list[Answer]:
    pages = [read(api, f"{path}/history", limit=limit)]
    while "cursor" in pages[-1].body:
        pages.append(read(api, f"{path}/history", limit=limit, cursor=pages[-1].body["cursor"]))
    return pages


def test_a_small_instances_answers_keep_their_shape(api: Api) -> None:
    # GIVEN an instance of three steps
    path = instance(api, "flaky", "small", steps=3)
    # WHEN its status, its steps and its history are read without a cursor
    status, steps = read(api, path), read(api, f"{path}/steps")
    history = read(api, f"{path}/history")
    # THEN the status and the history are the one-piece answers they always were (no count,
    # no cursor: the history is the export format itself), and the steps page is the last
    assert "steps_total" not in status.body and "steps_cursor" not in status.body
    assert [row["name"] for row in status.body["steps"]] == ["step 0", "step 1", "step 2"]
    assert "attempts_omitted" not in status.body["steps"][0]
    assert "cursor" not in history.body
    assert history.body == api.env.service.history(InstanceRef("flaky", "small")).to_dict()
    assert steps.body == {"steps": status.body["steps"], "total": 3, "cursor": None}


def test_steps_and_history_page_with_limit_and_cursor(api: Api) -> None:
    # GIVEN an instance of 12 steps that each failed once (24 journal entries)
    path = instance(api, "flaky", "twelve", steps=12)
    whole = read(api, path).body
    # WHEN its steps are read 5 at a time, and its history 7 at a time
    steps = all_steps(api, path, "5")
    history = all_history(api, path, "7")
    # THEN the pages hold 5, 5 and 2 rows, which put end to end are the status's timeline
    assert [len(page.body["steps"]) for page in steps] == [5, 5, 2]
    assert {page.body["total"] for page in steps} == {12}
    assert [row for page in steps for row in page.body["steps"]] == whole["steps"]
    # AND the history's pages, 7 entries at most each, are the whole history, which replays
    assert [len(page.body["entries"]) for page in history] == [7, 7, 7, 3]
    assembled = {
        **{key: value for key, value in history[0].body.items() if key != "cursor"},
        "entries": [entry for page in history for entry in page.body["entries"]],
        "events": [event for page in history for event in page.body["events"]],
    }
    assert assembled == api.env.service.history(InstanceRef("flaky", "twelve")).to_dict()
    assert Replayer({"flaky": FlakySteps}).replay(assembled).compatible


def test_a_page_is_read_with_one_query_and_writes_nothing(api: Api) -> None:
    # GIVEN an instance whose pages were read once (the stack's cursor key exists)
    path = instance(api, "flaky", "costed", steps=12)
    all_steps(api, path, "5")
    calls = Calls()
    client = api.env.aws.runtime.store.client
    client.meta.events.register("before-call.dynamodb", calls)
    api.check_paths = False  # the resolver's second reading would count twice
    api.writes.calls.clear()
    try:
        # WHEN the second page of its steps and of its history are read
        first = read(api, f"{path}/steps", limit="5")
        read(api, f"{path}/steps", limit="5", cursor=first.body["cursor"])
        page = read(api, f"{path}/history", limit="7")
        read(api, f"{path}/history", limit="7", cursor=page.body["cursor"])
    finally:
        client.meta.events.unregister("before-call.dynamodb", calls)
        api.check_paths = True
    # THEN each page is one Query of the instance's partition, and nothing is written
    assert calls.made == Counter({"Query": 4})
    assert api.writes.calls == []


def test_the_status_is_cut_by_size_and_every_answer_stays_under_1_mib(api: Api) -> None:
    # GIVEN 70 steps whose failed attempts each say 8,000 characters (~9 KB a row)
    path = instance(api, "loud", "loud", steps=70)
    # WHEN its status is read, then the pages after it
    status = read(api, path)
    pages = [status]
    cursor = status.body["steps_cursor"]
    while cursor is not None:
        pages.append(read(api, f"{path}/steps", cursor=cursor))
        cursor = pages[-1].body["cursor"]
    # THEN the status holds fewer than 70 rows (its rows are kept to 512 KiB), says how many
    # there are in all, and every answer is under 1 MiB; the pages hold every row once
    assert status.body["steps_total"] == 70
    assert 1 < len(status.body["steps"]) < 70
    assert len(json.dumps(status.body["steps"])) < PAGE_BYTES + 20 * 1024
    assert all(len(json.dumps(page.body)) < MIB for page in pages)
    names = [row["name"] for page in pages for row in page.body["steps"]]
    assert names == [f"loud {n}" for n in range(70)]


def test_a_row_shows_the_first_and_the_newest_attempts_and_counts_the_others(api: Api) -> None:
    # GIVEN a step that failed 30 times before it succeeded (31 attempts)
    path = instance(api, "stubborn", "stubborn", failures=30)
    # WHEN its status is read over HTTP
    [row] = read(api, path).body["steps"]
    # THEN its row shows 25 attempts, the first and the 24 newest, and counts the 6 left out
    assert row["attempts"] == 31 and row["status"] == "complete"
    assert [a["attempt"] for a in row["attempt_history"]] == [1, *range(8, 32)]
    assert row["attempts_omitted"] == 31 - ATTEMPTS_SHOWN == 6
    assert read(api, f"{path}/steps").body["steps"] == [row]
    # AND in process, and in the history, every attempt is kept
    ref = InstanceRef("stubborn", "stubborn")
    assert len(api.env.service.status(ref).steps[0].attempt_history) == 31
    assert len(read(api, f"{path}/history").body["entries"]) == 31


# --- cursors that are refused ---------------------------------------------------------------


def refused(api: Api, path: str, **query: str) -> Answer:
    api.writes.calls.clear()
    answer = api.request("GET", path, query=query)
    assert api.writes.calls == []  # nothing written, whatever was refused
    return answer


@pytest.fixture
def paged(api: Api) -> str:
    """An instance whose steps and history take several pages of 5."""
    return instance(api, "flaky", "paged", steps=12)


@pytest.mark.parametrize("route", ["steps", "history"])
def test_a_tampered_or_made_up_cursor_is_a_400_that_reads_and_writes_nothing(
    api: Api, paged: str, route: str
) -> None:
    first = read(api, f"{paged}/{route}", limit="5").body["cursor"]
    body, signature = first.split(".")
    flipped = ("B" if body[3] == "A" else "A").join((body[:3], body[4:]))
    for cursor in (f"{flipped}.{signature}", "garbage", "a.b", first + "x", "x" * 3000):
        answer = refused(api, f"{paged}/{route}", cursor=cursor)
        assert (answer.status, answer.code) == (400, "invalid_input"), cursor
        assert "cursor is not valid" in answer.message


def test_a_cursor_of_another_instance_or_route_is_a_400_saying_so(api: Api, paged: str) -> None:
    other = instance(api, "flaky", "other", steps=12)
    steps_cursor = read(api, f"{paged}/steps", limit="5").body["cursor"]
    history_cursor = read(api, f"{paged}/history", limit="5").body["cursor"]
    listing_cursor = read(api, "/workflows/flaky/instances", limit="1").body["cursor"]
    for path, cursor in (
        (f"{other}/steps", steps_cursor),
        (f"{paged}/history", steps_cursor),
        (f"{paged}/steps", history_cursor),
    ):
        answer = refused(api, path, cursor=cursor)
        assert (answer.status, answer.code) == (400, "invalid_input"), path
        assert "is not one of the" in answer.message and "pages of instance" in answer.message
    # a listing's cursor is signed with the same key, and still not a page's
    answer = refused(api, f"{paged}/steps", cursor=listing_cursor)
    assert (answer.status, answer.code) == (400, "invalid_input")


def test_a_cursor_from_before_a_restart_is_a_400_stale_cursor(api: Api) -> None:
    path = instance(api, "flaky", "restarted", steps=12)
    steps_cursor = read(api, f"{path}/steps", limit="5").body["cursor"]
    history_cursor = read(api, f"{path}/history", limit="5").body["cursor"]
    assert api.request("PATCH", f"{path}/status", {"status": "restart"}).status == 200
    for route, cursor in (("steps", steps_cursor), ("history", history_cursor)):
        answer = refused(api, f"{path}/{route}", cursor=cursor)
        assert (answer.status, answer.code) == (400, "stale_cursor")
        assert "was restarted" in answer.message and "without a cursor" in answer.message


@pytest.mark.parametrize("limit", ["0", "1001", "ten", "-1"])
@pytest.mark.parametrize("route", ["steps", "history"])
def test_a_limit_out_of_range_is_a_422(api: Api, paged: str, route: str, limit: str) -> None:
    answer = refused(api, f"{paged}/{route}", limit=limit)
    assert (answer.status, answer.code) == (422, "validation_error")
    assert "limit" in answer.message
