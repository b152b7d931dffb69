"""`lambda-workflows ui`: the dashboard on 127.0.0.1 with the API's calls forwarded to a stack —
unsigned to a running `lambda-workflows dev`, signed with SigV4 (checked against botocore's signer)
to a server that records what it gets; only the API's routes, only from the dashboard's own origin,
bodies capped at 1 MiB (issue 16)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lambda_workflows.cli import main
from lambda_workflows.cli.console import Console
from lambda_workflows.dashboard.ui_server import (
    MAX_BODY,
    UiServer,
    make_ui_server,
    serve_in_background,
)
from lambda_workflows.examples import EXAMPLES
from lambda_workflows.registry import Registry, load_workflows
from lambda_workflows.remote import HttpApi
from tests.local.devserver import ctrl_c_works
from tests.unit.http_recorder import Recorder, recording_server
from tests.unit.test_sigv4 import (
    ACCESS_KEY,
    SECRET_KEY,
    SESSION_TOKEN,
    botocore_signature,
    parse_authorization,
)

from .test_cli import ROOT, nothing_listens, workflows_script
from .wire import Connection, DevHttp, Reply, dev_http, request_bytes

JSON = (("Content-Type", "application/json"),)


@contextmanager
def ui_for(upstream: HttpApi, workflows: Registry | None = None) -> Iterator[UiServer]:
    """`lambda-workflows ui` in this process on a free port, forwarding to ``upstream``."""
    lines: list[str] = []
    server = make_ui_server(upstream, 0, workflows=workflows, out=lines.append)
    serve_in_background(server)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def send(server: UiServer, method: str, target: str, body: object = None, **headers: str) -> Reply:
    """One request to the ui (``Host: 127.0.0.1``), with any other headers given."""
    return Connection(int(server.server_address[1])).request(
        method, target, body, (*JSON, *headers.items())
    )


def for_host(server: UiServer, host: str, target: str = "/workflows") -> Reply:
    """``GET target`` with the ``Host`` given (the only one)."""
    raw = f"GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    return Connection(int(server.server_address[1])).send(raw)


@pytest.fixture(scope="module")
def dev() -> Iterator[DevHttp]:
    with dev_http() as server:
        yield server


@pytest.fixture(scope="module")
def ui(dev: DevHttp) -> Iterator[UiServer]:
    with ui_for(HttpApi(f"http://127.0.0.1:{dev.port}")) as server:
        yield server


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with recording_server() as server:
        yield server


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed fake credentials, found by the default chain in the environment."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)


# --- forwarding to a running lambda-workflows dev ---


def test_the_ui_serves_the_dashboard_page_itself(ui: UiServer) -> None:
    reply = send(ui, "GET", "/")
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/html")
    assert b'src="/dashboard/app.js"' in reply.body


def test_api_calls_reach_the_dev_server_and_its_answers_come_back_unchanged(
    ui: UiServer, dev: DevHttp
) -> None:
    # WHEN an instance is created through the ui
    created = send(ui, "POST", "/workflows/subscription/instances", {"instance_id": "via-ui-1"})

    # THEN the dev server created it, and its answer came back as the dev server gave it
    assert created.status == 201, created.body
    assert created.json()["id"] == "via-ui-1"
    direct = dev.connect().request("GET", "/workflows/subscription/instances/via-ui-1")
    assert direct.status == 200
    through = send(ui, "GET", "/workflows/subscription/instances/via-ui-1?x=1")
    assert through.status == 200
    assert through.json()["id"] == direct.json()["id"] == "via-ui-1"
    assert through.headers["content-type"] == direct.headers["content-type"]

    # AND a refusal keeps its status and its body, byte for byte
    again = send(ui, "POST", "/workflows/subscription/instances", {"instance_id": "via-ui-1"})
    same = dev.connect().request(
        "POST", "/workflows/subscription/instances", {"instance_id": "via-ui-1"}
    )
    assert again.status == same.status == 409
    assert again.body == same.body
    missing = send(ui, "GET", "/workflows/subscription/instances/never-made")
    assert missing.status == 404 and missing.error["code"] == "instance_not_found"


def test_the_dev_servers_own_routes_are_not_forwarded(ui: UiServer, dev: DevHttp) -> None:
    # WHEN the dev server's clock route is called through the ui
    before = dev.runtime.clock.time()
    reply = send(ui, "POST", "/_dev/clock/advance", {"by": "2 days"})

    # THEN it is refused, and the clock did not move
    assert reply.status == 404 and reply.error["code"] == "not_forwarded"
    assert "only /workflows" in reply.error["message"]
    assert dev.runtime.clock.time() - before < 60


# --- only the API's routes, only from this origin ---------------------------------------------


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("GET", "/etc/passwd"),
        ("GET", "/workflowsX"),
        ("GET", "/workflows/../_dev/clock"),
        ("GET", "/workflows/%2e%2e/_dev/clock"),
        ("POST", "/openapi.json"),
        ("GET", "/latest/meta-data/"),
    ],
)
def test_anything_but_the_apis_routes_is_a_404_and_nothing_is_forwarded(
    recorder: Recorder, method: str, target: str
) -> None:
    with ui_for(HttpApi(recorder.url)) as ui:
        reply = send(ui, method, target, {} if method == "POST" else None)
    assert reply.status == 404, reply.body
    assert reply.error["code"] == "not_forwarded"
    assert recorder.requests == []


def test_an_absolute_url_is_refused_it_is_not_a_proxy(recorder: Recorder) -> None:
    with ui_for(HttpApi(recorder.url)) as ui:
        reply = send(ui, "GET", f"{recorder.url}/workflows")
    assert reply.status == 400 and reply.error["code"] == "not_a_proxy"
    assert recorder.requests == []


def test_a_request_for_another_host_name_is_refused(recorder: Recorder) -> None:
    # GIVEN a page of another site whose name now points at 127.0.0.1 (DNS rebinding)
    with ui_for(HttpApi(recorder.url)) as ui:
        port = int(ui.server_address[1])
        reply = for_host(ui, "evil.example")
        page = for_host(ui, f"evil.example:{port}", "/")
        twice = Connection(port).request("GET", "/workflows", None, (("Host", "evil.example"),))
        local = for_host(ui, f"localhost:{port}")
    # THEN nothing is answered for it, and nothing is forwarded
    assert reply.status == page.status == 403
    assert reply.error["code"] == "forbidden_host"
    assert twice.status == 400  # a second Host header: which one is meant is unknown
    assert local.status == 200
    assert [r.target for r in recorder.requests] == ["/workflows"]


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://127.0.0.1:1"},  # another local app
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
    ids=["other-site", "other-port", "opaque", "cross-site", "same-site"],
)
def test_an_api_call_sent_by_another_page_is_refused(
    recorder: Recorder, headers: dict[str, str]
) -> None:
    with ui_for(HttpApi(recorder.url)) as ui:
        reply = send(ui, "POST", "/workflows/orders/instances/o-1/status", {}, **headers)
    assert reply.status == 403 and reply.error["code"] == "cross_origin"
    assert "AWS credentials" in reply.error["message"]
    assert recorder.requests == []


def test_an_api_call_from_the_dashboards_own_origin_is_forwarded(recorder: Recorder) -> None:
    recorder.answer = (200, {"id": "o-1", "status": "paused"})
    with ui_for(HttpApi(recorder.url)) as ui:
        own = f"http://127.0.0.1:{ui.server_address[1]}"
        reply = send(
            ui,
            "POST",
            "/workflows/orders/instances/o-1/status",
            {"status": "paused"},
            Origin=own,
            **{"Sec-Fetch-Site": "same-origin"},
        )
    assert reply.status == 200 and reply.json() == {"id": "o-1", "status": "paused"}
    [sent] = recorder.requests
    assert (sent.method, sent.target) == ("POST", "/workflows/orders/instances/o-1/status")
    assert json.loads(sent.body) == {"status": "paused"}


def test_only_the_headers_the_api_reads_are_forwarded(recorder: Recorder) -> None:
    with ui_for(HttpApi(recorder.url)) as ui:
        send(
            ui,
            "POST",
            "/workflows/orders/instances/o-1/events/approved",
            {"user": "ana"},
            Cookie="session=secret",
            Authorization="Bearer from-the-browser",
            **{"Idempotency-Key": "approval-1", "X-Forwarded-For": "10.0.0.1"},
        )
    [sent] = recorder.requests
    assert sent.header("Idempotency-Key") == "approval-1"
    assert sent.header("Content-Type") == "application/json"
    for dropped in ("Cookie", "Authorization", "X-Forwarded-For"):
        assert sent.header(dropped) is None, dropped


def test_a_body_over_1_mib_is_refused_before_anything_is_forwarded(recorder: Recorder) -> None:
    with ui_for(HttpApi(recorder.url)) as ui:
        big = send(ui, "POST", "/workflows/orders/instances", b"x" * (MAX_BODY + 1))
        assert big.status == 413 and big.error["code"] == "body_too_large"
        assert recorder.requests == []
        fits = send(ui, "POST", "/workflows/orders/instances", b"x" * MAX_BODY)
    assert fits.status == 200
    assert len(recorder.requests[0].body) == MAX_BODY


def test_a_malformed_request_is_refused_as_the_dev_server_refuses_it(recorder: Recorder) -> None:
    # GIVEN the ui in front of a stack that records what reaches it
    with ui_for(HttpApi(recorder.url)) as ui:

        def answer(data: bytes) -> tuple[int, str]:
            reply = Connection(int(ui.server_address[1]), timeout=10).send(data)
            assert reply.headers["content-type"] == "application/json", reply
            return reply.status, reply.error["code"]

        # WHEN requests that no API call can be are sent to it
        too_long = answer(request_bytes("GET", "/workflows/" + "a" * 70_000))
        many = answer(request_bytes("GET", "/workflows", [(f"X-{i}", "1") for i in range(120)]))
        no_version = answer(b"GET /workflows\r\n\r\n")  # HTTP/0.9: was forwarded
        not_a_token = answer(request_bytes("GE(T", "/workflows"))
        unknown = answer(request_bytes("FOO", "/workflows"))
    # THEN each gets the JSON refusal the dev server answers with (the shared http_server's),
    # and nothing is forwarded
    assert too_long == (414, "uri_too_long")  # was code not_served
    assert many == (431, "headers_too_large")  # was code not_served
    assert no_version == not_a_token == (400, "bad_request")
    assert unknown == (405, "not_served")
    assert recorder.requests == []


def test_an_api_that_does_not_answer_is_a_502_saying_where() -> None:
    url = nothing_listens()
    with ui_for(HttpApi(url)) as ui:
        reply = send(ui, "GET", "/workflows")
    assert reply.status == 502 and reply.error["code"] == "api_unreachable"
    assert url in reply.error["message"]


def test_the_stage_of_the_apis_url_is_the_same_route(recorder: Recorder) -> None:
    # GIVEN a stack whose URL ends in its stage, as API Gateway's do; its Swagger UI, served
    # through the ui, calls /prod/workflows on the ui's origin
    with ui_for(HttpApi(f"{recorder.url}/prod")) as ui:
        plain = send(ui, "GET", "/workflows")
        staged = send(ui, "GET", "/prod/workflows?limit=2")
        docs = send(ui, "GET", "/openapi.json")
    assert plain.status == staged.status == docs.status == 200
    targets = [r.target for r in recorder.requests]
    assert targets == ["/prod/workflows", "/prod/workflows?limit=2", "/prod/openapi.json"]


# --- diagrams ---------------------------------------------------------------------------------


def test_the_ui_draws_the_diagrams_of_the_workflows_registered_where_it_runs(
    recorder: Recorder,
) -> None:
    # GIVEN a ui started where WORKFLOWS names the examples
    with ui_for(HttpApi(recorder.url), load_workflows(EXAMPLES)) as ui:
        # WHEN the dashboard asks for a diagram
        reply = send(ui, "GET", "/_dashboard/workflows/subscription/diagram")

    # THEN the ui draws it from the source itself: the stack is not asked
    assert reply.status == 200
    assert reply.json()["class_name"] == "SubscriptionWorkflow" and reply.json()["steps"] == 3
    assert recorder.requests == []


def test_without_the_workflows_source_a_diagram_is_a_404_saying_how_to_get_it(
    recorder: Recorder,
) -> None:
    with ui_for(HttpApi(recorder.url)) as ui:
        reply = send(ui, "GET", "/_dashboard/workflows/subscription/diagram")
    assert reply.status == 404 and reply.error["code"] == "unknown_workflow"
    assert "start lambda-workflows ui with WORKFLOWS=name=module:Class" in reply.error["message"]
    assert recorder.requests == []


# --- signing -----------------------------------------------------------------------------------


def test_forwarded_calls_carry_botocores_signature_and_refusals_come_back_verbatim(
    credentials: None, recorder: Recorder
) -> None:
    # GIVEN a ui forwarding to an API it signs for, with fake credentials
    with ui_for(HttpApi(recorder.url, sign=True, region="eu-west-3")) as ui:
        # WHEN the dashboard lists instances and sends an event through it
        recorder.answer = (200, {"instances": [], "cursor": None})
        listed = send(ui, "GET", "/workflows/orders/instances?status=waiting&limit=25")
        recorder.answer = (403, {"message": "User is not authorized to perform this action"})
        refused = send(
            ui,
            "POST",
            "/workflows/orders/instances/o-1/events/approved",
            {"user": "ana"},
            **{"Idempotency-Key": "k-1"},
        )

    # THEN each request is signed as botocore signs it, for the region and execute-api
    assert listed.status == 200
    assert [r.method for r in recorder.requests] == ["GET", "POST"]
    for sent in recorder.requests:
        signature = parse_authorization(sent)
        assert (signature.key, signature.region, signature.service) == (
            ACCESS_KEY,
            "eu-west-3",
            "execute-api",
        )
        assert sent.header("X-Amz-Security-Token") == SESSION_TOKEN
        expected = botocore_signature(sent, recorder.url, signature.signed, "eu-west-3")
        assert signature.signature == expected
    event = recorder.requests[1]
    assert {"content-type", "idempotency-key"} <= set(parse_authorization(event).signed)
    # AND the API's refusal reaches the browser as the API sent it (the key never does)
    assert refused.status == 403
    assert refused.json() == {"message": "User is not authorized to perform this action"}
    assert "x-amz-security-token" not in refused.headers


def test_an_execute_api_url_is_signed_for_the_region_in_its_host(
    credentials: None, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an API Gateway URL, reached through the recorder as an HTTP proxy (nothing leaves
    # the machine)
    api_url = "http://a1b2c3d4e5.execute-api.eu-west-2.amazonaws.com/prod"
    monkeypatch.setenv("http_proxy", recorder.url)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)

    # WHEN the ui forwards the workflows listing there
    with ui_for(HttpApi(api_url)) as ui:
        reply = send(ui, "GET", "/workflows")

    # THEN it went to the stack's host and stage, signed for eu-west-2
    assert reply.status == 200
    [sent] = recorder.requests
    assert sent.target == f"{api_url}/workflows"
    signature = parse_authorization(sent)
    assert (signature.region, signature.service) == ("eu-west-2", "execute-api")
    assert signature.signature == botocore_signature(sent, "", signature.signed, "eu-west-2")


# --- the command -------------------------------------------------------------------------------


def test_workflows_ui_serves_until_stopped_and_says_where(dev: DevHttp) -> None:
    # GIVEN `lambda-workflows ui` started on a free port against the dev server
    port = nothing_listens().rsplit(":", 1)[1]
    process = subprocess.Popen(
        [workflows_script(), "ui", "--port", port, "--url", f"http://127.0.0.1:{dev.port}"],
        cwd=ROOT,
        env={**os.environ, "WORKFLOWS": EXAMPLES, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    try:
        banner = [process.stdout.readline() for _ in range(3)]
        # THEN it says where the dashboard is, where the calls go (unsigned), and whose
        # diagrams it draws
        assert f"http://127.0.0.1:{port}/" in banner[0], banner
        assert f"http://127.0.0.1:{dev.port} (unsigned)" in banner[1], banner
        assert banner[2].startswith("diagrams drawn from the source of: "), banner
        assert "subscription" in banner[2]
        # AND the API and the diagrams answer there
        url = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{url}/workflows", timeout=30) as answer:
            assert "subscription" in json.loads(answer.read())["workflows"]
        diagram = f"{url}/_dashboard/workflows/subscription/diagram"
        with urllib.request.urlopen(diagram, timeout=30) as answer:
            assert json.loads(answer.read())["steps"] == 3
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def test_workflows_ui_refuses_a_url_that_is_not_http() -> None:
    out, err = io_console()
    assert main(["ui", "--url", "ftp://example.com"], console=Console(out, err)) == 2
    assert "--url" in err.getvalue()


def test_workflows_ui_without_credentials_for_a_stack_exits_2_saying_how_to_set_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    out, err = io_console()
    url = "https://a1b2c3d4e5.execute-api.eu-west-2.amazonaws.com/prod"
    assert main(["ui", "--url", url, "--port", "0"], console=Console(out, err)) == 2
    assert "no AWS credentials were found" in err.getvalue()
    assert out.getvalue() == ""


def io_console() -> tuple[io.StringIO, io.StringIO]:
    return io.StringIO(), io.StringIO()


def test_workflows_dev_names_its_dashboard_in_its_banner() -> None:
    # GIVEN lambda-workflows dev started on a free port
    port = nothing_listens().rsplit(":", 1)[1]
    process = subprocess.Popen(
        [workflows_script(), "dev", "--port", port],
        preexec_fn=ctrl_c_works,
        cwd=ROOT,
        env={**os.environ, "WORKFLOWS": EXAMPLES, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    try:
        # THEN the line after "listening on" is the dashboard's address, and it serves the page
        lines = [process.stdout.readline()]
        while "listening on" not in lines[-1] and lines[-1]:
            lines.append(process.stdout.readline())
        dashboard = process.stdout.readline()
        assert dashboard.startswith(f"dashboard: http://127.0.0.1:{port}/ "), [*lines, dashboard]
        with urllib.request.urlopen(dashboard.split()[1], timeout=30) as page:
            assert page.headers["Content-Type"].startswith("text/html")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
