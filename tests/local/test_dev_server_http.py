"""`lambda-workflows dev` as an HTTP server: concurrency, body framing, its own error answers,
bursts of connections, and ids with characters no id may hold (issue 9, finding 10)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.local.server import DevRequestHandler

from .wire import Connection, DevHttp, dev_http, request_bytes

CREATE = "/workflows/flaky-fetch/instances"
JSON = (("Content-Type", "application/json"),)


@pytest.fixture(scope="module")
def dev() -> Iterator[DevHttp]:
    with dev_http(worker=False) as server:
        yield server


def exists(dev: DevHttp, workflow: str, instance_id: str) -> bool:
    reply = dev.connect().request("GET", f"/workflows/{workflow}/instances/{instance_id}")
    assert reply.status in (200, 404), reply
    return reply.status == 200


def test_concurrent_clients_each_get_the_answer_to_their_own_request(dev: DevHttp) -> None:
    # GIVEN 8 clients, each sending requests whose answers differ (201, 409, 404, 422, 200)
    wrong: Counter[tuple[int, int]] = Counter()
    answered: list[int] = []

    def client(number: int) -> None:
        connection = dev.connect()
        for i in range(20):
            own = f"conc-{number}-{i}"
            for method, path, body, expected in (
                ("POST", CREATE, {"instance_id": own}, 201),
                ("POST", CREATE, {"instance_id": own}, 409),
                ("GET", f"{CREATE}/never-{own}", None, 404),
                ("POST", CREATE, {"instance_id": 7}, 422),
                ("GET", "/workflows", None, 200),
            ):
                # WHEN they all send at once
                reply = connection.request(method, path, body)
                answered.append(reply.status)
                # THEN each answer is the one for its own request, down to the id it names
                if reply.status != expected:
                    wrong[(expected, reply.status)] += 1
                elif expected == 201:
                    assert reply.json()["id"] == own
                elif expected in (404, 409):
                    assert own in reply.error["message"], reply.error

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answered) == 8 * 20 * 5
    assert not wrong, f"answers with another request's status (expected, got): {dict(wrong)}"
    assert 500 not in answered


def test_a_chunked_create_keeps_its_id_and_params(dev: DevHttp) -> None:
    # GIVEN a create whose body comes in three chunks
    body = json.dumps({"instance_id": "chunked-1", "params": {"sku": "cat-poster", "n": 3}})
    pieces = [body[:5].encode(), body[5:20].encode(), body[20:].encode()]

    # WHEN it is sent with Transfer-Encoding: chunked
    reply = dev.connect().send(request_bytes("POST", CREATE, JSON, chunks=pieces), "POST")

    # THEN the instance has the id and the params the chunks spell
    assert reply.status == 201, reply.body
    assert reply.json()["id"] == "chunked-1"
    state = dev.runtime.aws.runtime.store.load(InstanceRef("flaky-fetch", "chunked-1"))
    assert json.loads(state.record.params) == {"sku": "cat-poster", "n": 3}


@pytest.mark.parametrize("malformed", ["abc", "-1", "+5", "1, 2", "0x10", "1e3", ""])
def test_an_unusable_content_length_is_a_400_at_once_and_creates_nothing(
    dev: DevHttp, malformed: str
) -> None:
    # GIVEN a create whose Content-Length is not a length
    instance_id = f"bad-length-{malformed.encode().hex() or 'empty'}"
    body = json.dumps({"instance_id": instance_id}).encode()
    headers = (*JSON, ("Content-Length", malformed))
    started = time.monotonic()

    # WHEN it is sent (and the client then waits, connection open)
    reply = dev.connect(timeout=5).send(request_bytes("POST", CREATE, headers, body), "POST")

    # THEN a JSON 400 arrives at once, saying what a Content-Length must be; nothing created
    assert time.monotonic() - started < 2.0
    assert reply.status == 400 and reply.closed
    assert "Content-Length" in reply.error["message"]
    assert not exists(dev, "flaky-fetch", instance_id)


def test_every_answer_the_server_makes_itself_is_json(
    dev: DevHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    def answer(data: bytes, method: str = "GET") -> tuple[int, str, dict[str, str]]:
        reply = Connection(dev.port, timeout=10).send(data, method)
        assert reply.headers["content-type"] == "application/json", reply
        return reply.status, reply.error["code"], reply.headers

    # an unknown method: the API says which methods the path takes (was an HTML 501)
    status, code, headers = answer(request_bytes("FOO", "/workflows"))
    assert (status, code, headers.get("allow")) == (405, "method_not_allowed", "GET")
    # a body over 6 MiB, sent whole: 413 (was an HTML 413, or a reset connection)
    huge = b"x" * (7 * 1024 * 1024)
    assert answer(request_bytes("POST", CREATE, JSON, huge), "POST")[:2] == (
        413,
        "body_too_large",
    )
    # ... and announced with Expect: 100-continue: refused before it is sent
    expect = (*JSON, ("Content-Length", str(len(huge))), ("Expect", "100-continue"))
    assert answer(request_bytes("POST", CREATE, expect), "POST")[0] == 413
    # request lines that are not HTTP/1.x
    for line in (b"garbage", b"GET /workflows", b"GET /workflows HTTP/2.0", b"GET / HTTP/x"):
        assert answer(line + b"\r\nHost: x\r\n\r\n")[:2] == (400, "bad_request"), line
    assert answer(b"GET /a\x1fb HTTP/1.1\r\n\r\n")[0] == 400  # \x1f splits the line
    # a blank request line (http.server closed the connection without a word)
    assert answer(b"   \r\n\r\n")[:2] == (400, "bad_request")
    assert answer(b"\r\n\r\nGET /workflows HTTP/1.1 x\r\n\r\n")[:2] == (400, "bad_request")
    # a method that is not a token
    assert answer(request_bytes("GE(T", "/workflows"))[:2] == (400, "bad_request")
    # a request line over 64 KiB, too many headers, a header line over 64 KiB
    assert answer(request_bytes("GET", "/" + "a" * 70_000))[:2] == (414, "uri_too_long")
    many = [(f"X-{i}", "1") for i in range(120)]
    assert answer(request_bytes("GET", "/workflows", many))[:2] == (431, "headers_too_large")
    long_header = [("X-Long", "a" * 70_000)]
    assert answer(request_bytes("GET", "/workflows", long_header))[0] == 431
    # malformed chunked bodies, and framings that disagree
    for framing in (
        b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n",
        b"Transfer-Encoding: gzip\r\n\r\n",
        b"Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    ):
        data = b"POST " + CREATE.encode() + b" HTTP/1.1\r\n" + framing
        assert answer(data, "POST")[:2] == (400, "bad_request"), framing
    # a client that stops sending its body: 408 once the connection's timeout passes
    monkeypatch.setattr(DevRequestHandler, "timeout", 0.5)
    short = request_bytes("POST", CREATE, (*JSON, ("Content-Length", "10")), b"{}")
    assert answer(short, "POST")[:2] == (408, "request_timeout")


def test_empty_lines_before_a_request_are_ignored(dev: DevHttp) -> None:
    # RFC 9112 §2.2: a server should ignore at least one empty line before the request line
    reply = dev.connect().send(b"\r\n\r\n" + request_bytes("GET", "/workflows"))
    assert reply.status == 200 and "flaky-fetch" in reply.json()["workflows"]


def test_a_burst_of_50_connections_is_queued_and_every_one_answered() -> None:
    with dev_http(worker=False, serve=False) as dev:
        # GIVEN 50 clients that connect before the server accepts any connection
        sockets: list[socket.socket] = []
        for _ in range(50):
            client = socket.create_connection(("127.0.0.1", dev.port), timeout=1.0)
            client.sendall(request_bytes("GET", "/workflows", (("Connection", "close"),)))
            sockets.append(client)

        # WHEN the server starts accepting
        threading.Thread(target=dev.server.serve_forever, args=(0.05,), daemon=True).start()

        # THEN every one of them is answered (a backlog of 5 refused all but 6)
        statuses = []
        for client in sockets:
            client.settimeout(30)
            data = b""
            while chunk := client.recv(65536):
                data += chunk
            client.close()
            statuses.append(int(data.split(b" ", 2)[1]))
        assert statuses == [200] * 50


@pytest.mark.parametrize(
    "segment",
    ['"abc', "a\\b", "%22abc", "a%5Cb", "abc%0A", "abc%00", "a\x01b", "a%7F", "%E2%80%8F"],
)
def test_an_id_with_characters_no_id_holds_is_a_4xx_that_says_so_never_a_405(
    dev: DevHttp, segment: str
) -> None:
    for method, suffix, body in (
        ("GET", "", None),
        ("PATCH", "/status", {"status": "terminate"}),
        ("POST", "/events/approved", {"ok": True}),
    ):
        # WHEN a request names an instance with such an id
        target = f"/workflows/flaky-fetch/instances/{segment}{suffix}"
        raw = json.dumps(body).encode() if body else None
        reply = dev.connect().send(request_bytes(method, target, JSON, raw), method)

        # THEN it is a 400 or 404 naming the rule, not "GET is not allowed ... use GET"
        assert reply.status in (400, 404), (method, target, reply)
        error = reply.error
        assert error["code"] != "method_not_allowed"
        assert "letters, digits" in error["message"], error
