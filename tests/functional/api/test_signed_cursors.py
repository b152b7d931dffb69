"""Listing cursors are signed: a valid one pages through every instance once; any cursor the
API did not issue (forged, tampered, nested, too long, of another listing) is a 400 that writes
nothing, never a 500. The signing key lives in the instance table, created once per stack."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.stub import Stubber

from lambda_workflows.aws.cursors import CURSOR_KEY_ITEM, MAX_CURSOR, CursorSigner
from lambda_workflows.testing import WorkflowTestEnv

from .conftest import WORKFLOWS, Api

INSTANCES = "/workflows/orders/instances"
IDS = [f"cur-{n}" for n in range(5)]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def old_style(key: dict[str, Any]) -> str:
    """A cursor in the unsigned format the API used to hand out: base64 of the start key."""
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode()


def flipped(text: str, index: int) -> str:
    """``text`` with the base64url character at ``index`` replaced by another one."""
    return text[:index] + ("B" if text[index] == "A" else "A") + text[index + 1 :]


def page(api: Api, **query: str) -> Any:
    answer = api.request("GET", INSTANCES, query=query)
    assert answer.status == 200, answer.body
    return answer.body


def key_items(api: Api) -> list[dict[str, Any]]:
    return [i for i in api.table() if i["pk"] == CURSOR_KEY_ITEM["pk"]]


@pytest.fixture
def listed(api: Api) -> Api:
    """The module's env holding at least IDS, created a second apart, all queued."""
    for instance_id in IDS:
        if api.request("GET", f"{INSTANCES}/{instance_id}").status == 404:
            api.env.clock.advance(1)
            assert api.request("POST", INSTANCES, {"id": instance_id}).status == 201
    api.drain()
    api.writes.calls.clear()
    return api


@pytest.fixture
def fresh() -> Iterator[Api]:
    """A stack of its own, on which no cursor was ever issued."""
    env = WorkflowTestEnv(WORKFLOWS, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


def test_a_valid_cursor_pages_through_every_instance_once(listed: Api) -> None:
    everything = [i["id"] for i in page(listed, limit="1000")["instances"]]

    seen: list[str] = []
    cursors: list[str] = []
    body = page(listed, limit="2")
    while True:
        seen.extend(i["id"] for i in body["instances"])
        if body["cursor"] is None:
            break
        cursors.append(body["cursor"])
        body = page(listed, limit="2", cursor=body["cursor"])

    assert seen == everything
    assert set(IDS) <= set(seen)
    assert all(c.count(".") == 1 and len(c) <= MAX_CURSOR for c in cursors)


def test_a_filtered_listing_pages_with_its_own_cursor(listed: Api) -> None:
    first = page(listed, status="queued", limit="2")
    second = page(listed, status="queued", limit="2", cursor=first["cursor"])

    ids = [i["id"] for i in first["instances"] + second["instances"]]
    assert len(ids) == len(set(ids)) == 4
    assert {i["status"] for i in first["instances"] + second["instances"]} == {"queued"}


FORGED = {
    "deeply nested": b64(b"[" * 100_000),
    "deeply nested, with a signature": b64(b"[" * 100_000) + "." + b64(bytes(32)),
    # short enough to reach the signature check, nested enough to overflow the JSON parser
    "nested under the length bound": b64(b"[" * 1_400) + "." + b64(bytes(32)),
    "old format, index key missing": old_style(
        {"pk": {"S": "I#orders#cur-1"}, "sk": {"S": "I"}, "gsi2pk": {"S": "orders"}}
    ),
    "old format, a whole key": old_style(
        {
            "pk": {"S": "I#orders#cur-1"},
            "sk": {"S": "I"},
            "gsi2pk": {"S": "orders"},
            "gsi2sk": {"S": "00001735689601000#cur-1"},
        }
    ),
    "not base64": "%%%",
    "empty parts": ".",
    "not ASCII": "é.é",
    "padding and spaces": "e30= .e30=",
    "over 2 KB": "A" * (MAX_CURSOR + 1) + ".A",
}


@pytest.mark.parametrize("cursor", FORGED.values(), ids=FORGED.keys())
def test_a_forged_cursor_is_a_400_that_writes_nothing(listed: Api, cursor: str) -> None:
    before = listed.table()

    answer = listed.request("GET", INSTANCES, query={"cursor": cursor})

    assert (answer.status, answer.code) == (400, "invalid_input"), answer.body
    assert "cursor is not valid" in answer.message
    assert listed.table() == before
    assert listed.writes.calls == []


@pytest.mark.parametrize("part", ["payload", "signature"])
@pytest.mark.parametrize("index", [0, 5, -2])
def test_a_tampered_cursor_is_a_400(listed: Api, part: str, index: int) -> None:
    # GIVEN a cursor the API issued
    issued = page(listed, limit="2")["cursor"]
    payload, signature = issued.split(".")

    # WHEN one character of its payload or of its signature is changed
    if part == "payload":
        tampered = f"{flipped(payload, index % len(payload))}.{signature}"
    else:
        tampered = f"{payload}.{flipped(signature, index % (len(signature) - 1))}"
    answer = listed.request("GET", INSTANCES, query={"cursor": tampered, "limit": "2"})

    # THEN it is refused
    assert (answer.status, answer.code) == (400, "invalid_input"), answer.body


def test_a_cursor_signed_with_another_key_is_a_400(listed: Api) -> None:
    payload = base64.urlsafe_b64decode(page(listed, limit="2")["cursor"].split(".")[0] + "==")
    other = hmac.new(b"k" * 32, payload, hashlib.sha256).digest()

    answer = listed.request("GET", INSTANCES, query={"cursor": f"{b64(payload)}.{b64(other)}"})

    assert (answer.status, answer.code) == (400, "invalid_input"), answer.body


@pytest.mark.parametrize(
    ("issued_by", "used_by"),
    [
        ({}, {"status": "queued"}),
        ({"status": "queued"}, {}),
        ({"status": "queued"}, {"status": "terminated"}),
    ],
    ids=["unfiltered used filtered", "filtered used unfiltered", "other status"],
)
def test_a_cursor_of_another_listing_is_a_400(
    listed: Api, issued_by: dict[str, str], used_by: dict[str, str]
) -> None:
    cursor = page(listed, limit="2", **issued_by)["cursor"]

    answer = listed.request("GET", INSTANCES, query={**used_by, "cursor": cursor})

    assert (answer.status, answer.code) == (400, "invalid_input"), answer.body
    assert "another listing" in answer.message


@pytest.mark.parametrize(
    "start_key",
    [
        {"pk": {"S": "I#orders#cur-1"}, "sk": {"S": "I"}, "gsi2pk": {"S": "orders"}},
        {**CURSOR_KEY_ITEM, "gsi2pk": {"S": "orders"}, "gsi2sk": {"S": "0"}, "x": {"S": "1"}},
        {**CURSOR_KEY_ITEM, "gsi2pk": {"S": "orders"}, "gsi2sk": {"N": "0"}},
        ["pk", "sk"],
    ],
    ids=["index key missing", "extra key", "not a string", "not an object"],
)
def test_a_signed_cursor_that_is_no_start_key_of_this_listing_is_a_400(
    listed: Api, start_key: Any
) -> None:
    # GIVEN a cursor signed with the stack's key, but not one a listing issued (defence in
    # depth: the shape is checked even when the signature holds)
    cursor = listed.aws.runtime.store.cursors.sign(start_key)

    answer = listed.request("GET", INSTANCES, query={"cursor": cursor})

    assert (answer.status, answer.code) == (400, "invalid_input"), answer.body


def test_the_key_item_is_one_config_item_that_no_listing_shows(listed: Api) -> None:
    page(listed, limit="1")  # issues a cursor

    (item,) = key_items(listed)
    assert set(item) == {"pk", "sk", "key"}  # no index attribute, no TTL
    assert len(base64.b64decode(item["key"]["S"])) == 32
    ids = [i["id"] for i in page(listed, limit="1000")["instances"]]
    assert not any("cursor" in i for i in ids)


def test_a_new_container_reads_the_key_once_and_accepts_cursors_of_the_others(
    listed: Api,
) -> None:
    # GIVEN a cursor issued by this container, and a second container (own client, no cache)
    cursor = page(listed, limit="2")["cursor"]
    client = listed.aws.session.client("dynamodb")
    reads: list[str] = []
    client.meta.events.register("before-call.dynamodb.GetItem", lambda **_: reads.append("get"))
    other = CursorSigner(client, listed.aws.settings.table_name)

    # WHEN it verifies that cursor and issues and verifies its own, several times
    payload = other.verify(cursor)
    for _ in range(3):
        assert other.verify(other.sign(payload)) == payload

    # THEN it read the key once, and its cursors are the first container's
    assert reads == ["get"]
    assert other.sign(payload) == cursor


def test_a_rejected_cursor_on_a_new_stack_creates_no_key(fresh: Api) -> None:
    answer = fresh.request("GET", INSTANCES, query={"cursor": b64(b"{}") + "." + b64(bytes(32))})

    assert (answer.status, answer.code) == (400, "invalid_input"), answer.body
    assert key_items(fresh) == []
    assert fresh.writes.calls == []


def test_two_containers_issuing_their_first_cursor_at_once_share_one_key(fresh: Api) -> None:
    # GIVEN two containers, each with its own client, on a stack with no key yet
    table = fresh.aws.settings.table_name
    first = CursorSigner(fresh.aws.session.client("dynamodb"), table)
    second_client = fresh.aws.session.client("dynamodb")
    second = CursorSigner(second_client, table)
    payload = {"pk": {"S": "I#orders#x"}, "sk": {"S": "I"}}
    early: list[str] = []

    def first_wins(**_: Any) -> None:
        # between the second's read (no key) and its put, the first creates the key
        if not early:
            early.append(first.sign(payload))

    second_client.meta.events.register("before-call.dynamodb.PutItem", first_wins)

    # WHEN the second issues its first cursor
    cursor = second.sign(payload)

    # THEN its conditional put lost, it took the winner's key: one key, the same cursors
    assert early and cursor == early[0]
    assert len(key_items(fresh)) == 1
    assert first.verify(cursor) == second.verify(cursor) == payload


def test_a_failed_key_read_is_a_503(fresh: Api) -> None:
    client = fresh.aws.runtime.store.client
    with Stubber(client) as stubber:
        stubber.add_client_error("get_item", "InternalServerError", http_status_code=500)

        answer = fresh.request("GET", INSTANCES, query={"cursor": b64(b"{}") + "." + b64(b"s")})

    assert (answer.status, answer.code) == (503, "storage_error"), answer.body
