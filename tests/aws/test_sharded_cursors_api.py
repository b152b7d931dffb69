"""GET /workflows/{name}/instances with the listing indexes spread over shards: the API pages
through every instance once, newest first, with or without a status filter, and a cursor that
was tampered with, forged in shape, or issued by another listing is a 400 that writes nothing.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows.aws.cursors import MAX_CURSOR
from lambda_workflows.testing import WorkflowTestEnv
from tests.functional.api.conftest import WORKFLOWS, Api

from .conftest import SHARDS

INSTANCES = "/workflows/orders/instances"
IDS = [f"shard-{n:02d}" for n in range(14)]
TERMINATED = IDS[1::4]


@pytest.fixture(scope="module")
def sharded() -> Iterator[Api]:
    """A stack whose store spreads the listing keys over SHARDS shards, holding IDS (created a
    second apart, some at the same second) of which TERMINATED are terminated."""
    with WorkflowTestEnv(WORKFLOWS, backend="aws") as env:
        assert env.aws is not None
        env.aws.runtime.store.index_shards = SHARDS
        api = Api(env)
        for n, instance_id in enumerate(IDS):
            if n % 3:
                env.clock.advance(1)
            assert api.request("POST", INSTANCES, {"id": instance_id}).status == 201
        for instance_id in TERMINATED:
            answer = api.request(
                "PATCH", f"{INSTANCES}/{instance_id}/status", {"status": "terminate"}
            )
            assert answer.status == 200, answer.body
        api.drain()
        yield api


@pytest.fixture
def api(sharded: Api) -> Api:
    sharded.writes.calls.clear()
    return sharded


def get(api: Api, **query: str) -> Any:
    answer = api.request("GET", INSTANCES, query=query)
    assert answer.status == 200, answer.body
    return answer.body


def every_page(api: Api, **query: str) -> tuple[list[str], list[str]]:
    ids: list[str] = []
    cursors: list[str] = []
    body = get(api, **query)
    while True:
        ids += [i["id"] for i in body["instances"]]
        if body["cursor"] is None:
            return ids, cursors
        cursors.append(body["cursor"])
        body = get(api, **query, cursor=body["cursor"])


def test_the_instances_are_spread_over_every_shard(api: Api) -> None:
    keys = {i["lpk"]["S"] for i in api.table() if i["sk"]["S"] == "I" and "lpk" in i}

    assert keys == {f"orders#{k}" for k in range(SHARDS)}


@pytest.mark.parametrize("limit", ["1", "3", "5"])
def test_pages_hold_every_instance_once_newest_first(api: Api, limit: str) -> None:
    ids, cursors = every_page(api, limit=limit)

    assert ids == list(reversed(IDS))  # created in order; ties broken by id, like the order
    assert all(len(c) <= MAX_CURSOR and c.count(".") == 1 for c in cursors)


@pytest.mark.parametrize(("status", "expected"), [("terminated", TERMINATED), ("queued", None)])
def test_a_status_listing_pages_across_shards(
    api: Api, status: str, expected: list[str] | None
) -> None:
    wanted = expected if expected is not None else [i for i in IDS if i not in TERMINATED]

    ids, _ = every_page(api, status=status, limit="2")

    assert ids == list(reversed(wanted))


def flip(text: str, index: int) -> str:
    return text[:index] + ("B" if text[index] == "A" else "A") + text[index + 1 :]


@pytest.mark.parametrize("index", [0, 7, 30, -3])
def test_a_tampered_cursor_is_a_400_that_writes_nothing(api: Api, index: int) -> None:
    payload, signature = get(api, limit="3")["cursor"].split(".")
    tampered = f"{flip(payload, index % len(payload))}.{signature}"
    before = api.table()

    answer = api.request("GET", INSTANCES, query={"cursor": tampered, "limit": "3"})

    assert (answer.status, answer.code) == (400, "invalid_input"), answer.body
    assert "cursor is not valid" in answer.message
    assert api.table() == before
    assert api.writes.calls == []


def test_the_cursor_is_opaque_to_whoever_reads_it_but_names_no_shard_key(api: Api) -> None:
    payload = get(api, limit="3")["cursor"].split(".")[0]
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))

    # one position for every shard (the last instance listed), and which partitions ran out
    assert set(decoded) == {"w", "s", "after", "done", "layout"}
    assert decoded["after"].endswith("#" + list(reversed(IDS))[2])


def test_a_cursor_of_another_status_filter_is_a_400(api: Api) -> None:
    cursor = get(api, status="queued", limit="2")["cursor"]

    answer = api.request("GET", INSTANCES, query={"status": "terminated", "cursor": cursor})

    assert (answer.status, answer.code) == (400, "invalid_input"), answer.body
    assert "another listing" in answer.message


SIGNED_BUT_MALFORMED = {
    "a start key of the unsharded listing": {
        "pk": {"S": "I#orders#shard-01"},
        "sk": {"S": "I"},
        "gsi2pk": {"S": "orders"},
        "gsi2sk": {"S": "00001735689601000#shard-01"},
    },
    "a field missing": {"w": "orders", "s": None, "after": "0#x"},
    "a cursor of the listing before the upgrade": {
        "w": "orders",
        "s": None,
        "after": "0#x",
        "done": 0,
    },
    "an extra field": {"w": "orders", "s": None, "after": "0#x", "done": 0, "k": 1},
    "after not a string": {"w": "orders", "s": None, "after": 5, "done": 0},
    "after empty": {"w": "orders", "s": None, "after": "", "done": 0},
    "done not a number": {"w": "orders", "s": None, "after": "0#x", "done": "1"},
    "done negative": {"w": "orders", "s": None, "after": "0#x", "done": -1},
    "done a boolean": {"w": "orders", "s": None, "after": "0#x", "done": True},
    "not an object": ["orders", None, "0#x", 0],
}


@pytest.mark.parametrize("payload", SIGNED_BUT_MALFORMED.values(), ids=SIGNED_BUT_MALFORMED.keys())
def test_a_signed_cursor_of_another_shape_is_a_400(api: Api, payload: Any) -> None:
    # GIVEN a payload signed with the stack's key that no listing issued (the shape is checked
    # again after the signature: defence in depth)
    cursor = api.aws.runtime.store.cursors.sign(payload)

    answer = api.request("GET", INSTANCES, query={"cursor": cursor})

    assert (answer.status, answer.code) == (400, "invalid_input"), answer.body
    assert "cursor is not valid" in answer.message
