"""The ``lambda-workflows`` command against a running ``lambda-workflows dev``: every command's
``--json`` answer, its exit status (0 done, 1 the API refused, 2 bad input or no API), its help, and
its colour only on a terminal."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows.cli import main
from lambda_workflows.cli.console import Console
from lambda_workflows.engine.instances import census
from lambda_workflows.examples import EXAMPLES
from lambda_workflows.remote import HttpApi
from lambda_workflows.testing import WorkflowTestEnv
from tests.functional.workflows_under_test import Lifecycle
from tests.local.devserver import ctrl_c_works
from tests.unit.http_recorder import recording_server

from .wire import DevHttp, dev_http

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Ran:
    """What one ``lambda-workflows`` command did: its exit status, stdout and stderr."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


class Cli:
    """``workflows ...`` run in this process against one dev server."""

    def __init__(self, capsys: pytest.CaptureFixture[str], url: str) -> None:
        self.capsys = capsys
        self.url = url

    def __call__(self, *argv: str, url: str | None = None) -> Ran:
        """The command with ``--url`` (the dev server's unless ``url``)."""
        return self.bare(*argv, "--url", url or self.url)

    def bare(self, *argv: str) -> Ran:
        """The command as given.

        Its output is read from a console of its own: the dev server in this process logs to
        the process's stdout at any moment. argparse (help, usage errors) writes to sys.stdout
        and sys.stderr itself.
        """
        self.capsys.readouterr()
        out, err = io.StringIO(), io.StringIO()
        try:
            code = main(list(argv), console=Console(out, err))
        except SystemExit as exc:  # argparse: --help, --version and usage errors
            code = exc.code if isinstance(exc.code, int) else 1
            captured = self.capsys.readouterr()
            return Ran(code, captured.out, captured.err)
        return Ran(code, out.getvalue(), err.getvalue())

    def instance(self, workflow: str, instance_id: str) -> dict[str, Any]:
        body = HttpApi(self.url).request("GET", f"/workflows/{workflow}/instances/{instance_id}")
        assert isinstance(body.body, dict)
        return body.body

    def wait_for(self, workflow: str, instance_id: str, *statuses: str) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            body = self.instance(workflow, instance_id)
            if body["status"] in statuses:
                return body
            time.sleep(0.05)
        raise AssertionError(f"{workflow}/{instance_id} never reached {statuses}: {body}")


@pytest.fixture(scope="module")
def dev() -> Iterator[DevHttp]:
    with dev_http() as server:
        yield server


@pytest.fixture
def cli(dev: DevHttp, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys, f"http://127.0.0.1:{dev.port}")


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def nothing_listens() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def waiting_subscription(cli: Cli) -> str:
    instance_id = new_id("sub")
    created = cli("trigger", "subscription", "--id", instance_id, "--params", '{"customer_id": 1}')
    assert created.code == 0, created.err
    waits_for_event(cli, instance_id)
    return instance_id


def waits_for_event(cli: Cli, instance_id: str) -> None:
    """Until the subscription waits for its approval (it waits out its sleep first)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        body = cli.wait_for("subscription", instance_id, "waiting")
        if body["steps"][-1]["type"] == "waitForEvent":
            return
        time.sleep(0.05)
    raise AssertionError(f"subscription/{instance_id} never waited for its event")


# --- reading -----------------------------------------------------------------------------------


def test_list_prints_the_apis_workflows_as_json_or_one_name_per_line(cli: Cli) -> None:
    # WHEN the registered workflows are listed
    as_json, as_text = cli("list", "--json"), cli("list")
    # THEN the JSON is the API's answer and the text one name per line, both on stdout
    assert as_json.code == 0 and as_text.code == 0
    names = as_json.json()["workflows"]
    assert {"subscription", "flaky-fetch"} <= set(names)
    assert as_text.out.splitlines() == names
    assert as_json.err == ""


def test_describe_shows_the_workflows_class_module_description_and_counts(cli: Cli) -> None:
    # GIVEN a completed flaky-fetch instance
    instance_id = new_id("desc")
    assert cli("trigger", "flaky-fetch", "--id", instance_id).code == 0
    cli.wait_for("flaky-fetch", instance_id, "complete")
    # WHEN the workflow is described
    ran = cli("describe", "flaky-fetch", "--json")
    # THEN the answer names its class, module and docstring, and counts the instance
    assert ran.code == 0, ran.err
    body = ran.json()
    assert body["name"] == "flaky-fetch"
    assert body["class_name"] == "FlakyFetchWorkflow"
    assert body["module"] == "lambda_workflows.examples.showcase"
    assert body["description"].startswith("A step that fails twice")
    assert body["instances"]["complete"] >= 1
    text = cli("describe", "flaky-fetch")
    assert text.code == 0 and "FlakyFetchWorkflow" in text.out
    counts = next(line for line in text.out.splitlines() if line.startswith("instances:"))
    assert f"complete {body['instances']['complete']}" in counts
    assert "paused" not in counts  # statuses with no instance are left out


def test_describe_marks_the_counts_that_are_lower_bounds_with_a_plus(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the API's answer for a workflow with more instances than a count reads (3 here):
    # one terminated, then five queued
    monkeypatch.setattr(census, "CENSUS_LIMIT", 3)
    env = WorkflowTestEnv({"orders": Lifecycle})
    env.create("orders", id="t-1").terminate()
    for n in range(5):
        env.clock.advance(1)
        env.create("orders", id=f"q-{n}")
    body = env.service.describe("orders").to_dict()
    assert body["instances_at_least"] == ["queued", "errored", "terminated", "complete"]
    with recording_server() as api:
        api.answer = (200, body)
        # WHEN the CLI describes it
        ran = Cli(capsys, api.url)("describe", "orders")
    # THEN the lower bounds read "3+", and so does the version's count in flight
    assert ran.code == 0, ran.err
    lines = ran.out.splitlines()
    assert next(line for line in lines if line.startswith("instances:")).endswith("queued 3+")
    assert next(line for line in lines if line.startswith("version 1:")).endswith("3+ in flight")


def test_describe_an_unknown_workflow_exits_1_with_the_apis_error(cli: Cli) -> None:
    ran = cli("describe", "no-such-workflow", "--json")
    assert ran.code == 1
    assert ran.out == ""
    assert "no-such-workflow" in ran.err and "unknown_workflow" in ran.err


def test_instances_describe_and_status_show_the_same_instance(cli: Cli) -> None:
    # GIVEN a subscription waiting for its approval
    instance_id = waiting_subscription(cli)
    # WHEN it is described, as JSON and as a timeline, and through the status alias
    described = cli("instances", "describe", "subscription", instance_id, "--json")
    aliased = cli("status", "subscription", instance_id, "--json")
    timeline = cli("instances", "describe", "subscription", instance_id)
    # THEN the JSON is the API's, the alias answers the same, the text is the timeline
    assert described.code == aliased.code == timeline.code == 0
    body = described.json()
    assert body["id"] == instance_id and body["status"] == "waiting"
    assert [s["type"] for s in body["steps"]] == ["do", "sleep", "waitForEvent"]
    assert aliased.json()["steps"] == body["steps"]
    assert f"subscription/{instance_id}: waiting" in timeline.out
    assert "waitForEvent" in timeline.out


def test_describing_an_unknown_instance_exits_1(cli: Cli) -> None:
    for command in (["instances", "describe"], ["status"]):
        ran = cli(*command, "subscription", "never-created", "--json")
        assert ran.code == 1, command
        assert ran.out == ""
        assert "instance_not_found" in ran.err and "never-created" in ran.err


def test_instances_list_pages_with_limit_and_cursor_and_filters_by_status(cli: Cli) -> None:
    # GIVEN three completed flaky-fetch instances and one waiting subscription
    ids = [new_id("page") for _ in range(3)]
    for instance_id in ids:
        assert cli("trigger", "flaky-fetch", "--id", instance_id).code == 0
    for instance_id in ids:
        cli.wait_for("flaky-fetch", instance_id, "complete")
    waiting = waiting_subscription(cli)
    # WHEN the listing is read two at a time
    seen: list[str] = []
    cursor: list[str] = []
    while True:
        page = cli("instances", "list", "flaky-fetch", "--limit", "2", *cursor, "--json")
        assert page.code == 0, page.err
        body = page.json()
        assert len(body["instances"]) <= 2
        seen += [row["id"] for row in body["instances"]]
        if not body["cursor"]:
            break
        cursor = ["--cursor", body["cursor"]]
    # THEN every instance is on exactly one page
    assert set(ids) <= set(seen) and len(seen) == len(set(seen))
    # AND --status keeps only that status
    only = cli("instances", "list", "subscription", "--status", "waiting", "--json").json()
    assert waiting in [row["id"] for row in only["instances"]]
    assert {row["status"] for row in only["instances"]} == {"waiting"}
    none = cli("instances", "list", "flaky-fetch", "--status", "paused", "--json").json()
    assert none["instances"] == []
    # AND the table has a row per instance
    table = cli("instances", "list", "subscription", "--status", "waiting")
    assert table.out.splitlines()[0].split() == ["ID", "STATUS", "CREATED", "FINISHED"]
    assert any(line.split()[:2] == [waiting, "waiting"] for line in table.out.splitlines())
    # AND the next page's command keeps the status filter its cursor belongs to
    first = cli("instances", "list", "flaky-fetch", "--status", "complete", "--limit", "1")
    more = (first.out + first.err).split("more: ", 1)[1].split()
    assert " ".join(more[:9]) == (
        "lambda-workflows instances list flaky-fetch --status complete --limit 1 --cursor"
    )
    assert cli(*more[1:], "--json").code == 0


@pytest.mark.parametrize(
    "options",
    [["--status", "sleeping"], ["--limit", "0"], ["--limit", "1001"], ["--limit", "ten"]],
    ids=["unknown-status", "limit-0", "limit-1001", "limit-not-a-number"],
)
def test_instances_list_refuses_a_bad_option_with_2(cli: Cli, options: list[str]) -> None:
    ran = cli("instances", "list", "flaky-fetch", *options)
    assert ran.code == 2
    assert ran.out == ""
    assert options[0] in ran.err


# --- changing ----------------------------------------------------------------------------------


def test_trigger_creates_an_instance_with_its_id_and_params(cli: Cli) -> None:
    # WHEN an instance is triggered with an id and params
    instance_id = new_id("trig")
    ran = cli(
        "trigger", "subscription", "--id", instance_id, "--params", '{"customer_id": 42}', "--json"
    )
    # THEN the answer names it, and it runs with those params
    assert ran.code == 0, ran.err
    assert ran.json()["id"] == instance_id
    waits_for_event(cli, instance_id)
    steps = cli.instance("subscription", instance_id)["steps"]
    assert steps[0]["name"] == "charge 42"
    # AND without --id the API picks one; the text form prints it on stdout
    generated = cli("trigger", "flaky-fetch")
    assert generated.code == 0
    name, _, status = generated.out.strip().partition(": ")
    assert name.startswith("flaky-fetch/") and status in ("queued", "running", "complete")
    assert "lambda-workflows instances describe flaky-fetch" in generated.err


def test_trigger_with_a_taken_id_exits_1_with_the_apis_error(cli: Cli) -> None:
    instance_id = new_id("taken")
    assert cli("trigger", "flaky-fetch", "--id", instance_id).code == 0
    again = cli("trigger", "flaky-fetch", "--id", instance_id, "--json")
    assert again.code == 1
    assert again.out == ""
    assert "instance_exists" in again.err


def test_trigger_with_params_that_are_not_json_exits_2_and_creates_nothing(cli: Cli) -> None:
    instance_id = new_id("badjson")
    ran = cli("trigger", "flaky-fetch", "--id", instance_id, "--params", "{customer: 1}")
    assert ran.code == 2
    assert ran.out == ""
    assert "--params is not JSON" in ran.err
    assert cli("status", "flaky-fetch", instance_id).code == 1  # nothing was created


def test_send_event_delivers_its_payload_once_per_idempotency_key(cli: Cli) -> None:
    # GIVEN a subscription waiting for "approved"
    instance_id = waiting_subscription(cli)
    # WHEN the event is sent twice with the same key
    args = ["send-event", "subscription", instance_id, "approved"]
    first = cli(*args, "--payload", '{"user": "ana"}', "--key", "approval-1", "--json")
    second = cli(*args, "--payload", '{"user": "bo"}', "--key", "approval-1", "--json")
    # THEN both answers name the one stored event, and the instance got the first payload
    assert first.code == 0 and second.code == 0, first.err + second.err
    assert first.json()["instance_id"] == instance_id and first.json()["type"] == "approved"
    assert second.json()["event_id"] == first.json()["event_id"]
    done = cli.wait_for("subscription", instance_id, "complete", "errored")
    assert done["output"]["approved_by"] == "ana"


def test_send_event_with_a_payload_that_is_not_json_exits_2_and_sends_nothing(cli: Cli) -> None:
    # GIVEN a waiting subscription
    instance_id = waiting_subscription(cli)
    args = ["send-event", "subscription", instance_id, "approved", "--payload", "{user: ana}"]
    # WHEN the payload is malformed: refused before any request (no API needs to listen)
    unreachable = cli(*args, url=nothing_listens())
    ran = cli(*args)
    # THEN exit 2, saying which option is wrong, and the instance still waits
    for refused in (unreachable, ran):
        assert refused.code == 2
        assert refused.out == ""
        assert "--payload is not JSON" in refused.err
    time.sleep(0.3)
    assert cli.instance("subscription", instance_id)["status"] == "waiting"


def test_send_event_to_a_finished_instance_exits_1(cli: Cli) -> None:
    instance_id = waiting_subscription(cli)
    assert cli("terminate", "subscription", instance_id).code == 0
    cli.wait_for("subscription", instance_id, "terminated")
    ran = cli("send-event", "subscription", instance_id, "approved", "--payload", "{}")
    assert ran.code == 1
    assert "invalid_transition" in ran.err


def test_pause_resume_terminate_and_restart_change_the_instance(cli: Cli) -> None:
    # GIVEN a waiting subscription
    instance_id = waiting_subscription(cli)
    target = ["subscription", instance_id]
    # WHEN it is paused: THEN it pauses
    paused = cli("pause", *target, "--json")
    assert paused.code == 0, paused.err
    assert paused.json()["id"] == instance_id
    cli.wait_for(*target, "paused")
    # WHEN resumed: THEN it waits for its event again
    assert cli("resume", *target, "--json").code == 0
    waits_for_event(cli, instance_id)
    # WHEN terminated: THEN it is terminated, and terminating again is refused (1)
    terminated = cli("terminate", *target)
    assert terminated.code == 0
    assert terminated.out.strip() == f"subscription/{instance_id}: terminated"
    again = cli("terminate", *target)
    assert again.code == 1 and "invalid_transition" in again.err
    # WHEN restarted: THEN it runs from the top and waits again
    restarted = cli("restart", *target, "--json")
    assert restarted.code == 0, restarted.err
    assert restarted.json()["status"] in ("queued", "running", "waiting")
    waits_for_event(cli, instance_id)


def test_changing_an_unknown_instance_exits_1(cli: Cli) -> None:
    for action in ("pause", "resume", "terminate", "restart"):
        ran = cli(action, "subscription", "never-created")
        assert ran.code == 1, action
        assert "instance_not_found" in ran.err


# --- no API, bad URL ---------------------------------------------------------------------------

API_COMMANDS = [
    ["list"],
    ["describe", "subscription"],
    ["instances", "list", "subscription"],
    ["instances", "describe", "subscription", "sub-1"],
    ["status", "subscription", "sub-1"],
    ["trigger", "subscription"],
    ["pause", "subscription", "sub-1"],
    ["resume", "subscription", "sub-1"],
    ["terminate", "subscription", "sub-1"],
    ["restart", "subscription", "sub-1"],
    ["send-event", "subscription", "sub-1", "approved"],
    ["dev-clock", "advance", "1 hour"],
    ["dev-events", "put", "--detail-type", "Order Placed", "--detail", "{}"],
]


@pytest.mark.parametrize("command", API_COMMANDS, ids=" ".join)
def test_every_api_command_exits_2_when_nothing_answers(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    ran = Cli(capsys, nothing_listens())(*command)
    assert ran.code == 2
    assert ran.out == ""
    assert "cannot reach" in ran.err


def test_a_url_that_is_not_http_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    ran = Cli(capsys, "ftp://example.com")("list")
    assert ran.code == 2 and "--url" in ran.err


def test_workflows_url_in_the_environment_is_the_default(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKFLOWS_URL", cli.url)
    ran = cli.bare("list", "--json")
    assert ran.code == 0 and "subscription" in ran.json()["workflows"]
    monkeypatch.setenv("WORKFLOWS_URL", nothing_listens())
    assert cli.bare("list").code == 2


# --- the dev clock -----------------------------------------------------------------------------


def test_dev_clock_advance_moves_the_dev_servers_clock_past_an_event_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a dev server of its own (moving its clock would time out other tests' waits)
    with dev_http() as own:
        cli = Cli(capsys, f"http://127.0.0.1:{own.port}")
        instance_id = waiting_subscription(cli)  # waits for "approved", timeout 1 day
        before = datetime.fromisoformat(
            cli("dev-clock", "advance", "1 second", "--json").json()["now"]
        )
        # WHEN its clock is moved 2 days forward
        ran = cli("dev-clock", "advance", "2 days", "--json")
        # THEN it answers its new time, and the wait times out
        assert ran.code == 0, ran.err
        now = datetime.fromisoformat(ran.json()["now"])
        assert now - before >= timedelta(days=2)
        assert cli.wait_for("subscription", instance_id, "errored")["status"] == "errored"
        text = cli("dev-clock", "advance", "1 hour")
        assert text.code == 0 and datetime.fromisoformat(text.out.strip()) > now


@pytest.mark.parametrize(
    ("command", "only_dev"),
    [
        (["dev-clock", "advance", "1 hour"], "has a clock to move"),
        (
            ["dev-events", "put", "--detail-type", "Order Placed", "--detail", "{}"],
            "takes events this way (on AWS: aws events put-events)",
        ),
    ],
    ids=["dev-clock", "dev-events"],
)
@pytest.mark.parametrize(
    ("status", "code"), [(404, "not_found"), (405, "method_not_allowed")], ids=["404", "405"]
)
def test_a_dev_only_command_against_a_server_that_is_not_workflows_dev_exits_1(
    capsys: pytest.CaptureFixture[str], command: list[str], only_dev: str, status: int, code: str
) -> None:
    # GIVEN a server without the dev routes (a deployed API answers them 404 or 405)
    with recording_server() as api:
        api.answer = (status, {"error": {"code": code, "message": "no route here"}})
        # WHEN a dev-only command is pointed at it
        ran = Cli(capsys, api.url)(*command)
    # THEN it fails with the server's answer, what only a dev server does, and the way out
    assert ran.code == 1 and ran.out == ""
    assert (
        f"no route here ({status} {code}); only a lambda-workflows dev server {only_dev}: "
        "point --url at one"
    ) in ran.err
    assert [r.method for r in api.requests] == ["POST"]


@pytest.mark.parametrize("duration", ["two days", "2 fortnights", "-1 day", ""])
def test_dev_clock_advance_refuses_a_bad_duration_with_2_before_any_request(
    capsys: pytest.CaptureFixture[str], duration: str
) -> None:
    ran = Cli(capsys, nothing_listens())("dev-clock", "advance", duration)
    assert ran.code == 2
    assert "is not a duration" in ran.err and "2 days" in ran.err


# --- help, version, colour ---------------------------------------------------------------------

COMMANDS = [
    [],
    ["dev"],
    ["run"],
    ["dev-clock"],
    ["dev-clock", "advance"],
    ["list"],
    ["describe"],
    ["instances"],
    ["instances", "list"],
    ["instances", "describe"],
    ["status"],
    ["trigger"],
    ["pause"],
    ["resume"],
    ["terminate"],
    ["restart"],
    ["send-event"],
    ["ui"],
    ["check-deploy"],
    ["lint"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "lambda-workflows")
def test_every_commands_help_shows_an_example_and_no_markup(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    if command == ["lint"]:  # the linter prints its own help, to the process's stdout
        done = subprocess.run(
            [workflows_script(), "lint", "--help"], capture_output=True, text=True, timeout=60
        )
        ran = Ran(done.returncode, done.stdout, done.stderr)
    else:
        ran = Cli(capsys, "").bare(*command, "--help")
    assert ran.code == 0
    assert "examples:" in ran.out
    assert f"  lambda-workflows {' '.join(command)}".rstrip() in ran.out
    for markup in ("``", ":mod:", ":class:", ":func:", ":data:"):
        assert markup not in ran.out, markup


def workflows_script() -> str:
    command = shutil.which("lambda-workflows", path=str(Path(sys.executable).parent))
    assert command, "the `lambda-workflows` console script is not installed in the venv"
    return command


def test_version_prints_the_installed_package_version() -> None:
    ran = subprocess.run(
        [workflows_script(), "--version"], capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0
    assert ran.stdout.strip() == f"lambda-workflows {version('lambda-workflows')}"


def on_a_terminal(argv: list[str], env: dict[str, str]) -> str:
    """What ``workflows argv`` writes to stdout when stdout is a terminal."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [workflows_script(), *argv], stdout=follower, stderr=subprocess.DEVNULL, env=env
    )
    os.close(follower)
    chunks: list[bytes] = []
    try:
        while select.select([leader], [], [], 60)[0]:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: the command has exited
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
        process.wait(timeout=60)
    return b"".join(chunks).decode()


def test_status_words_are_coloured_on_a_terminal_unless_no_color_is_set(cli: Cli) -> None:
    # GIVEN a waiting instance
    instance_id = waiting_subscription(cli)
    argv = ["instances", "list", "subscription", "--status", "waiting", "--url", cli.url]
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    # WHEN listed on a terminal: THEN its status is coloured
    assert "\033[33mwaiting\033[0m" in on_a_terminal(argv, env)
    # WHEN NO_COLOR is set, or stdout is not a terminal: THEN there is no escape code at all
    plain = on_a_terminal(argv, {**env, "NO_COLOR": "1"})
    assert instance_id in plain and "\033[" not in plain
    piped = subprocess.run([workflows_script(), *argv], capture_output=True, text=True, env=env)
    assert instance_id in piped.stdout and "\033[" not in piped.stdout + piped.stderr


# --- lambda-workflows run (the instance in this process) ---


def run_locally(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [workflows_script(), "run", *argv],
        cwd=ROOT, env={**os.environ, "WORKFLOWS": EXAMPLES}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def test_run_exits_0_for_a_waiting_instance_and_says_how_to_send_its_event() -> None:
    ran = run_locally("subscription", "--id", "waits-1", "--params", '{"customer_id": 3}')
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "subscription/waits-1: waiting" in ran.stdout
    assert "waiting for event 'approved'" in ran.stdout
    assert "when the wait times out" in ran.stdout  # its timeout
    assert "lambda-workflows dev" in ran.stdout
    assert (
        """lambda-workflows trigger subscription --id waits-1 --params '{"customer_id": 3}'"""
        in ran.stdout
    )
    assert "lambda-workflows send-event subscription waits-1 approved --payload" in ran.stdout


def test_run_exits_1_when_the_instance_errors() -> None:
    ran = run_locally("subscription", "--id", "no-customer")  # params {}: no customer_id
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "subscription/no-customer: errored" in ran.stdout
    assert "KeyError" in ran.stdout


# --- lambda-workflows dev --skip-event-timeouts ---


@contextmanager
def dev_process(*options: str) -> Iterator[str]:
    """``lambda-workflows dev OPTIONS`` in its own process on a free port; yields its URL."""
    port = nothing_listens().rsplit(":", 1)[1]
    process = subprocess.Popen(
        [workflows_script(), "dev", "--port", port, *options],
        preexec_fn=ctrl_c_works,
        cwd=ROOT, env={**os.environ, "WORKFLOWS": EXAMPLES, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    banner = []
    while "listening on" not in (line := process.stdout.readline()) and line:
        banner.append(line)
    try:
        assert "listening on" in line, "".join(banner)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)


def test_dev_skip_event_timeouts_times_out_a_wait_that_gets_no_event(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN lambda-workflows dev --skip-event-timeouts
    with dev_process("--skip-event-timeouts") as url:
        cli = Cli(capsys, url)
        # WHEN a subscription waits for an approval (timeout 1 day) that never comes
        created = cli("trigger", "subscription", "--params", '{"customer_id": 5}', "--json")
        # THEN the wait times out at once and the instance errors, without a clock move
        done = cli.wait_for("subscription", created.json()["id"], "errored", "complete")
        assert done["status"] == "errored"
        assert done["steps"][-1]["type"] == "waitForEvent"
