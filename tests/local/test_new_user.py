"""A new user's first hour, automated: their own workflow module in a folder outside the
project, registered with ``WORKFLOWS`` + ``PYTHONPATH``, served by ``lambda-workflows dev`` and
driven end to end by the ``lambda-workflows`` CLI and the Python client over HTTP — the installed
console script, in separate processes, as a person would type it.

(CI runs every test on a fresh clone; this one adds what a clone cannot: code that is not the
project's, found only through the environment.)
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.local.devserver import stop

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("lambda-workflows")

MODULE = '''
"""Someone's own workflow: greet, wait for an approval, answer."""

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


class Greeting(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> dict:
        name = await step.do("greet", lambda: f"hello {event.payload['name']}")
        approval = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return {"greeting": name, "approved_by": approval.payload["by"]}
'''

CLIENT_SCRIPT = """
import json
from lambda_workflows import Workflow

greetings = Workflow("greet")              # WORKFLOWS_URL selects the HTTP mode
instance = greetings.create(id="g-2", params={"name": "bo"})
print(json.dumps({"id": instance.id, "status": str(instance.status().status)}))
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def user_folder(tmp_path: Path) -> Path:
    """A folder outside the project holding the user's module (and nothing of ours)."""
    folder = tmp_path / "my-project"
    folder.mkdir()
    (folder / "greeting_flows.py").write_text(textwrap.dedent(MODULE))
    assert ROOT not in folder.parents
    return folder


@pytest.fixture
def user_env(user_folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKFLOWS", "PYTHONPATH"))}
    env["WORKFLOWS"] = "greet=greeting_flows:Greeting"
    env["PYTHONPATH"] = str(user_folder)
    env["NO_COLOR"] = "1"
    return env


@pytest.fixture
def dev_server(user_folder: Path, user_env: dict[str, str]) -> Iterator[str]:
    """`lambda-workflows dev` started from the user's folder, as the README says."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [str(CLI), "dev", "--port", str(port)],
        cwd=user_folder,
        env=user_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait_until_listening(url, server)
        yield url
    finally:
        stop(server)


def _wait_until_listening(url: str, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            output = server.stdout.read() if server.stdout else ""
            pytest.fail(f"lambda-workflows dev exited with {server.returncode}:\n{output}")
        try:
            with urllib.request.urlopen(f"{url}/workflows", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    pytest.fail("lambda-workflows dev did not answer within 60 s")


def _cli(env: dict[str, str], cwd: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *args, "--url", url],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _describe(env: dict[str, str], cwd: Path, url: str, instance_id: str) -> dict[str, Any]:
    result = _cli(env, cwd, url, "instances", "describe", "greet", instance_id, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _until(
    env: dict[str, str], cwd: Path, url: str, instance_id: str, status: str
) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        shown = _describe(env, cwd, url, instance_id)
        if shown["status"] == status or time.monotonic() > deadline:
            return shown
        time.sleep(0.2)


def test_a_new_user_drives_their_own_workflow_with_the_cli(
    dev_server: str, user_folder: Path, user_env: dict[str, str]
) -> None:
    listed = _cli(user_env, user_folder, dev_server, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "greet" in json.dumps(json.loads(listed.stdout))

    created = _cli(
        user_env,
        user_folder,
        dev_server,
        "trigger",
        "greet",
        "--id",
        "g-1",
        "--params",
        '{"name": "ana"}',
    )
    assert created.returncode == 0, created.stderr
    assert "g-1" in created.stdout

    waiting = _until(user_env, user_folder, dev_server, "g-1", "waiting")
    assert waiting["status"] == "waiting"
    wait_row = next(row for row in waiting["steps"] if row["type"] == "waitForEvent")
    assert wait_row["event_type"] == "approved"

    sent = _cli(
        user_env,
        user_folder,
        dev_server,
        "send-event",
        "greet",
        "g-1",
        "approved",
        "--payload",
        '{"by": "carol"}',
    )
    assert sent.returncode == 0, sent.stderr

    done = _until(user_env, user_folder, dev_server, "g-1", "complete")
    assert done["status"] == "complete"
    assert done["output"] == {"greeting": "hello ana", "approved_by": "carol"}

    text = _cli(user_env, user_folder, dev_server, "instances", "describe", "greet", "g-1")
    assert text.returncode == 0, text.stderr
    assert "complete" in text.stdout and "\x1b[" not in text.stdout


def test_a_new_user_scripts_the_python_client_over_http(
    dev_server: str, user_folder: Path, user_env: dict[str, str]
) -> None:
    script = user_folder / "start_one.py"
    script.write_text(CLIENT_SCRIPT)
    env = {**user_env, "WORKFLOWS_URL": dev_server}
    ran = subprocess.run(
        [sys.executable, str(script)],
        cwd=user_folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    started = json.loads(ran.stdout)
    assert started["id"] == "g-2"
    assert _until(user_env, user_folder, dev_server, "g-2", "waiting")["status"] == "waiting"


def test_a_mistyped_module_says_to_set_pythonpath(user_folder: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKFLOWS", "PYTHONPATH"))}
    env["WORKFLOWS"] = "greet=greeting_flows:Greeting"  # the folder is not on the path
    ran = subprocess.run(
        [str(CLI), "run", "greet"],
        cwd=ROOT.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 2
    assert "PYTHONPATH" in ran.stderr
