"""Property: whatever a client sends, the API never answers 5xx; every 4xx is a JSON error
that says what is wrong; and a rejected request leaves the table, the work queue and the
schedules exactly as they were.

Requests are generated from valid and invalid names, ids and event types, random methods and
paths, random JSON, shaped-but-wrong bodies, garbage text, base64 bytes and oversized bodies.
One moto env serves every example (state carries over, as it would in production).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lambda_workflows.entrypoints.api import MAX_BODY_BYTES
from lambda_workflows.testing import WorkflowTestEnv

from .conftest import WORKFLOWS, Api, build_event

EXAMPLES = 1000

NAMES = st.one_of(
    st.just("orders"),
    st.sampled_from(["invoices", "in.voices", "ORDERS", "x" * 65, "%2F", "é"]),
)
IDS = st.one_of(
    st.sampled_from(["p-1", "p-2", "p-3", "taken", "done", "batch"]),
    st.sampled_from(["no.pe", "-x", "a" * 101, "é", "a b"]),
    st.text(max_size=12).filter(lambda s: "/" not in s and s),
)
TYPES = st.one_of(
    st.sampled_from(["approved", "ping", "bad.type", "t" * 101, "-x"]),
    st.text(max_size=8).filter(lambda s: "/" not in s and s),
)
INSTANCE = st.builds("/workflows/{}/instances/{}".format, NAMES, IDS)
KNOWN = st.sampled_from(["taken", "done", "p-1", "p-2"])  # exist, or soon will
ORDERS = st.builds("/workflows/orders/instances/{}".format, KNOWN)
PATHS = st.one_of(
    st.just("/workflows"),
    st.builds("/workflows/{}/instances".format, NAMES),
    st.builds("/workflows/{}/instances/batch".format, NAMES),
    INSTANCE,
    INSTANCE.map(lambda p: p + "/status"),
    st.builds("{}/events/{}".format, INSTANCE, TYPES),
    st.sampled_from(["/openapi.json", "/docs", "/", "/workflows/", "/workflows/orders"]),
    st.text(max_size=30).map(lambda t: "/" + t),
)
METHODS = st.sampled_from(["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "OPTIONS"])
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ITEM = st.fixed_dictionaries({}, optional={"id": IDS, "instance_id": IDS, "params": JSON_VALUES})
ACTION = st.fixed_dictionaries(
    {"status": st.sampled_from(["pause", "resume", "terminate", "restart", "stop", 1, None])}
)
SHAPED = st.one_of(ITEM, st.lists(ITEM, max_size=5), ACTION)
OVERSIZED = "x" * (MAX_BODY_BYTES + 1)
BODIES = st.one_of(
    st.none(),
    JSON_VALUES.map(json.dumps),
    SHAPED.map(json.dumps),
    st.text(max_size=40),  # garbage
    st.binary(max_size=40),  # sent base64-encoded
    st.just(OVERSIZED),
    st.just("[" * 5000),
)
QUERIES = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "status": st.sampled_from(["waiting", "queued", "complete", "nope", ""]),
        "limit": st.sampled_from(["1", "50", "1000", "0", "1001", "x", "-1", "1e3"]),
        "cursor": st.text(max_size=20),
    },
)
CONTENT_TYPES = st.sampled_from(
    [
        None,
        "application/json",
        "application/json; charset=utf-8",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "multipart/form-data",
    ]
)
# Requests a client of the API would plausibly send: the right method for the path, a body of
# about the right shape (still often wrong in its details).
PLAUSIBLE = st.one_of(
    st.tuples(st.just("GET"), st.just("/workflows"), st.none()),
    st.tuples(
        st.just("POST"),
        st.builds("/workflows/{}/instances".format, NAMES),
        st.none() | ITEM.map(json.dumps),
    ),
    st.tuples(
        st.just("POST"),
        st.builds("/workflows/{}/instances/batch".format, NAMES),
        st.lists(ITEM, max_size=4).map(json.dumps),
    ),
    st.tuples(st.just("GET"), st.builds("/workflows/{}/instances".format, NAMES), st.none()),
    st.tuples(st.just("GET"), INSTANCE | ORDERS, st.none()),
    st.tuples(
        st.just("PATCH"), (INSTANCE | ORDERS).map(lambda p: p + "/status"), ACTION.map(json.dumps)
    ),
    st.tuples(
        st.just("POST"),
        st.builds("{}/events/{}".format, INSTANCE | ORDERS, TYPES),
        st.none() | JSON_VALUES.map(json.dumps),
    ),
    st.tuples(
        st.just("POST"),
        st.just("/workflows/orders/instances"),
        st.builds(lambda i, p: json.dumps({"id": i, "params": p}), KNOWN, JSON_VALUES),
    ),
)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """A REST API proxy event: half plausible requests, half anything at all."""
    if draw(st.booleans()):
        method, path, body = draw(PLAUSIBLE)
        headers = {"Content-Type": "application/json"} if body is not None else None
    else:
        method, path, body = draw(METHODS), draw(PATHS), draw(BODIES)
        content_type = draw(CONTENT_TYPES)
        headers = {"Content-Type": content_type} if content_type else None
    return build_event(method, path, raw=body, query=draw(QUERIES), headers=headers)


def test_no_request_gets_a_5xx_and_rejected_ones_write_nothing() -> None:
    env = WorkflowTestEnv(WORKFLOWS, backend="aws")
    api = Api(env)
    try:
        # GIVEN one queued and one terminated instance among whatever the requests create
        api.request("POST", "/workflows/orders/instances", {"id": "taken"})
        api.request("POST", "/workflows/orders/instances", {"id": "done"})
        api.request("PATCH", "/workflows/orders/instances/done/status", {"status": "terminate"})
        statuses: Counter[int] = Counter()

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(event=requests())
        def check(event: dict[str, Any]) -> None:
            before = api.snapshot()
            api.writes.calls.clear()

            # WHEN the request arrives
            answer = api.send(event)
            statuses[answer.status] += 1

            # THEN never a 5xx: nothing a client sends is a server fault
            assert answer.status < 500, (event["httpMethod"], event["path"], answer.body)
            if answer.status >= 400:
                # a rejection says what is wrong, in the one error shape...
                assert answer.code and answer.message, answer.body
                # ...and wrote nothing: same table, no message posted, no schedule touched
                assert api.writes.calls == [], (answer.status, answer.body)
                assert api.snapshot() == before

        check()
    finally:
        env.close()

    # the generator reached successes and the whole range of rejections
    assert sum(statuses.values()) >= EXAMPLES
    assert any(200 <= s < 300 for s in statuses)
    assert {400, 404, 405, 409, 413, 415, 422} <= set(statuses), statuses
