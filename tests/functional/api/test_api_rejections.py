"""Every malformed or impossible request gets a 4xx that says what is wrong, and writes nothing:
the table is the same item for item, and no work message was posted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.stub import Stubber

from lambda_workflows.entrypoints.api import MAX_BODY_BYTES

from .conftest import _NO_BODY, Api

TAKEN = "taken-1"  # exists, queued
DONE = "done-1"  # exists, terminated
INSTANCES = "/workflows/orders/instances"


@dataclass(frozen=True)
class Bad:
    """One bad request and the answer it must get."""

    name: str
    method: str
    path: str
    body: Any = _NO_BODY
    status: int = 400
    code: str = "invalid_input"
    says: str = ""  # a fragment of the message
    raw: str | bytes | None = None
    query: dict[str, str] | None = None
    headers: dict[str, str] | None = field(default=None)
    base64_flag: bool | None = None  # override isBase64Encoded


CASES = [
    # --- the body is not JSON, or not what the route takes -------------------------------
    Bad("malformed JSON", "POST", INSTANCES, raw='{"id": ', code="invalid_json", says="JSON"),
    Bad("NaN is not JSON", "POST", INSTANCES, raw="NaN", code="invalid_json", says="NaN"),
    Bad("deeply nested JSON", "POST", INSTANCES, raw="[" * 100_000, code="invalid_json"),
    Bad(
        "not base64",
        "POST",
        INSTANCES,
        raw="not base64!",
        base64_flag=True,
        code="invalid_body",
        says="base64",
    ),
    Bad("not UTF-8", "POST", INSTANCES, raw=b"\xff\xfe{}", code="invalid_json", says="UTF-8"),
    Bad(
        "body over 1 MiB",
        "POST",
        INSTANCES,
        raw='{"params": "' + "x" * MAX_BODY_BYTES + '"}',
        status=413,
        code="body_too_large",
        says="1 MiB",
    ),
    Bad(
        "form-encoded body",
        "POST",
        INSTANCES,
        raw="id=a",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        status=415,
        code="unsupported_media_type",
        says="application/json",
    ),
    Bad(
        "create body is a list",
        "POST",
        INSTANCES,
        [1],
        status=422,
        code="validation_error",
        says="object",
    ),
    Bad("create body is a string", "POST", INSTANCES, "x", code="invalid_body"),
    Bad(
        "both id and instance_id",
        "POST",
        INSTANCES,
        {"id": "a", "instance_id": "b"},
        code="invalid_body",
        says="not both",
    ),
    # --- a field is wrong -----------------------------------------------------------------
    Bad(
        "id of the wrong type",
        "POST",
        INSTANCES,
        {"id": 5},
        status=422,
        code="validation_error",
        says="body.id: Input should be a valid string",
    ),
    Bad(
        "id with a bad character",
        "POST",
        INSTANCES,
        {"instance_id": "a.b"},
        status=422,
        code="validation_error",
        says="body.instance_id: may only contain letters",
    ),
    Bad(
        "id over 100 characters",
        "POST",
        INSTANCES,
        {"id": "a" * 101},
        status=422,
        code="validation_error",
        says="body.id",
    ),
    Bad(
        "id starting with '-'",
        "POST",
        INSTANCES,
        {"id": "-a"},
        status=422,
        code="validation_error",
        says="body.id",
    ),
    Bad(
        "unknown key",
        "POST",
        INSTANCES,
        {"param": {"a": 1}},
        status=422,
        code="validation_error",
        says="body.param: Extra inputs are not permitted",
    ),
    Bad(
        "params over 1 MiB once encoded",
        "POST",
        INSTANCES,
        raw='{"params": [' + ",".join(["1e5"] * 200_000) + "]}",
        says="1 MiB",
    ),
    Bad(
        "lone surrogate in params",
        "POST",
        INSTANCES,
        raw='{"params": "\\ud800"}',
        says="not JSON-serializable",
    ),
    Bad(
        "bad status action",
        "PATCH",
        f"{INSTANCES}/{TAKEN}/status",
        {"status": "explode"},
        status=422,
        code="validation_error",
        says="body.status",
    ),
    Bad(
        "status change without a body",
        "PATCH",
        f"{INSTANCES}/{TAKEN}/status",
        code="invalid_body",
        says="Field required",
    ),
    Bad(
        "limit out of range",
        "GET",
        INSTANCES,
        query={"limit": "0"},
        status=422,
        code="validation_error",
        says="query.limit",
    ),
    Bad(
        "limit not a number",
        "GET",
        INSTANCES,
        query={"limit": "ten"},
        status=422,
        code="validation_error",
        says="query.limit",
    ),
    Bad(
        "unknown status filter",
        "GET",
        INSTANCES,
        query={"status": "sleeping"},
        status=422,
        code="validation_error",
        says="query.status",
    ),
    Bad("garbage cursor", "GET", INSTANCES, query={"cursor": "%%%"}, says="cursor"),
    Bad(
        "bad event type",
        "POST",
        f"{INSTANCES}/{TAKEN}/events/bad.type",
        {"x": 1},
        says="event type 'bad.type'",
    ),
    Bad(
        "event type over 100 characters",
        "POST",
        f"{INSTANCES}/{TAKEN}/events/{'t' * 101}",
        {"x": 1},
        says="event type",
    ),
    # --- batches --------------------------------------------------------------------------
    Bad(
        "batch over 100 items",
        "POST",
        f"{INSTANCES}/batch",
        [{} for _ in range(101)],
        code="invalid_body",
        says="at most 100",
    ),
    Bad(
        "a batch item that is not an object",
        "POST",
        f"{INSTANCES}/batch",
        [{"id": "fresh-2"}, "fresh-3"],
        status=422,
        code="validation_error",
        says="body.1: must be a JSON object",
    ),
    Bad(
        "a batch item that is null",
        "POST",
        f"{INSTANCES}/batch",
        [{"id": "fresh-4"}, None],
        status=422,
        code="validation_error",
        says="body.1",
    ),
    Bad(
        "batch object without count or instances",
        "POST",
        f"{INSTANCES}/batch",
        {},
        says="needs count or instances",
    ),
    Bad(
        "batch count of 0",
        "POST",
        f"{INSTANCES}/batch",
        {"count": 0},
        says="count must be from 1 to 100, got 0",
    ),
    Bad(
        "batch count over 100",
        "POST",
        f"{INSTANCES}/batch",
        {"count": 101, "params": {}},
        says="several batches of at most 100",
    ),
    Bad(
        "batch count not a number",
        "POST",
        f"{INSTANCES}/batch",
        {"count": "3"},
        says="whole number from 1 to 100",
    ),
    Bad(
        "batch with count and instances",
        "POST",
        f"{INSTANCES}/batch",
        {"count": 2, "instances": [{"id": "fresh-5"}]},
        says="both count and instances",
    ),
    Bad(
        "batch with an unknown key",
        "POST",
        f"{INSTANCES}/batch",
        {"count": 2, "param": {"a": 1}},
        says="unknown key(s) ['param']",
    ),
    Bad(
        "batch count with params over 1 MiB",
        "POST",
        f"{INSTANCES}/batch",
        raw='{"count": 2, "params": "' + "x" * MAX_BODY_BYTES + '"}',
        status=413,
        code="body_too_large",
        says="1 MiB",
    ),
    Bad(
        "batch instances with shared params",
        "POST",
        f"{INSTANCES}/batch",
        {"instances": [{"id": "fresh-6"}], "params": {}},
        says="params goes with count",
    ),
    Bad(
        "batch instances over 100",
        "POST",
        f"{INSTANCES}/batch",
        {"instances": [{} for _ in range(101)]},
        says="at most 100",
    ),
    Bad(
        "batch instances not a list",
        "POST",
        f"{INSTANCES}/batch",
        {"instances": {"id": "fresh-7"}},
        says="instances takes a list",
    ),
    Bad("batch without a body", "POST", f"{INSTANCES}/batch", code="invalid_body"),
    # --- nothing there --------------------------------------------------------------------
    Bad(
        "unknown workflow",
        "POST",
        "/workflows/invoices/instances",
        {"id": "x"},
        status=404,
        code="unknown_workflow",
        says="registered: orders",
    ),
    Bad(
        "malformed workflow name",
        "GET",
        "/workflows/in.voices/instances",
        status=404,
        code="unknown_workflow",
        says="in.voices",
    ),
    Bad(
        "unknown instance",
        "GET",
        f"{INSTANCES}/nobody",
        status=404,
        code="instance_not_found",
        says="nobody",
    ),
    Bad(
        "malformed instance id",
        "GET",
        f"{INSTANCES}/no.body",
        status=404,
        code="instance_not_found",
        says="may only contain",
    ),
    Bad(
        "status change of an unknown instance",
        "PATCH",
        f"{INSTANCES}/nobody/status",
        {"status": "pause"},
        status=404,
        code="instance_not_found",
    ),
    Bad(
        "event to an unknown instance",
        "POST",
        f"{INSTANCES}/nobody/events/approved",
        {"user": "x"},
        status=404,
        code="instance_not_found",
    ),
    Bad("unknown route", "GET", "/instances", status=404, code="not_found", says="/instances"),
    Bad(
        "trailing path segment",
        "GET",
        f"{INSTANCES}/{TAKEN}/journal",
        status=404,
        code="not_found",
    ),
    Bad(
        "wrong method",
        "PUT",
        f"{INSTANCES}/{TAKEN}",
        status=405,
        code="method_not_allowed",
        says="use DELETE, GET",
    ),
    # --- not allowed now ------------------------------------------------------------------
    Bad(
        "taken id",
        "POST",
        INSTANCES,
        {"id": TAKEN, "params": {"amount": 1}},
        status=409,
        code="instance_exists",
        says="already exists",
    ),
    Bad(
        "terminate a finished instance",
        "PATCH",
        f"{INSTANCES}/{DONE}/status",
        {"status": "terminate"},
        status=409,
        code="invalid_transition",
        says="already terminated",
    ),
    Bad(
        "pause a finished instance",
        "PATCH",
        f"{INSTANCES}/{DONE}/status",
        {"status": "pause"},
        status=409,
        code="invalid_transition",
    ),
    Bad(
        "event to a finished instance",
        "POST",
        f"{INSTANCES}/{DONE}/events/approved",
        {"user": "x"},
        status=409,
        code="invalid_transition",
        says="cannot be sent events",
    ),
]


@pytest.fixture(scope="module")
def seeded(module_api: Api) -> Api:
    """The module's env with one queued instance (TAKEN) and one terminated (DONE)."""
    module_api.request("POST", INSTANCES, {"id": TAKEN, "params": {"amount": 1}})
    module_api.request("POST", INSTANCES, {"id": DONE, "params": {"amount": 1}})
    module_api.request("PATCH", f"{INSTANCES}/{DONE}/status", {"status": "terminate"})
    return module_api


@pytest.mark.parametrize("bad", CASES, ids=[c.name for c in CASES])
def test_bad_request_gets_a_4xx_saying_why_and_writes_nothing(
    seeded: Api, api: Api, bad: Bad
) -> None:
    # GIVEN the table as it is
    before = api.table()

    # WHEN the bad request arrives
    answer = api.request(
        bad.method,
        bad.path,
        bad.body,
        raw=bad.raw,
        query=bad.query,
        headers=bad.headers,
        base64_flag=bad.base64_flag,
    )

    # THEN it is refused with the right status and code, saying what is wrong
    assert (answer.status, answer.code) == (bad.status, bad.code), answer.body
    assert bad.says in answer.message
    assert answer.headers["Content-Type"] == "application/json"

    # AND nothing was written: same items, no work message, no successful write call
    assert api.table() == before
    assert api.drain() == []
    assert api.writes.calls == []


def test_wrong_method_lists_the_allowed_ones(seeded: Api, api: Api) -> None:
    answer = api.request("PUT", INSTANCES, {})

    assert answer.status == 405
    assert answer.headers["Allow"] == "GET, POST"


def test_storage_failure_is_a_503_that_says_retry(seeded: Api, api: Api) -> None:
    # GIVEN DynamoDB failing (botocore's Stubber injects the fault)
    client = api.aws.runtime.store.client
    with Stubber(client) as stubber:
        stubber.add_client_error("query", "InternalServerError", http_status_code=500)

        # WHEN an instance is read
        answer = api.request("GET", f"{INSTANCES}/{TAKEN}")

    # THEN the answer is a retryable 503, not a crash
    assert (answer.status, answer.code) == (503, "storage_error")
    assert "retry" in answer.message
    assert answer.headers["Retry-After"] == "1"


def test_unexpected_error_is_a_500_without_internals(
    seeded: Api, api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a bug somewhere below the handler
    def broken(*args: object) -> None:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(api.aws.runtime.service, "status", broken)

    # WHEN an instance is read
    answer = api.request("GET", f"{INSTANCES}/{TAKEN}")

    # THEN the client gets a 500 in the error shape, without the internals
    assert (answer.status, answer.code) == (500, "internal_error")
    assert "secret" not in answer.message


def test_forged_cursor_is_a_4xx(seeded: Api, api: Api) -> None:
    # GIVEN a cursor that decodes to a JSON object that is no DynamoDB key: {"a": 1}
    forged = "eyJhIjogMX0="

    answer = api.request("GET", INSTANCES, query={"cursor": forged})

    assert (answer.status, answer.code) == (400, "invalid_input")
