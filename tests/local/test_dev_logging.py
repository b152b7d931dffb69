"""`self.logger` in `lambda-workflows dev`: its lines are on the dev server's output at INFO (the
engine's own stay at WARNING), once each, with the workflow, instance, step and attempt, and the
file and line of the user's call."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.local.runtime import LocalRuntime
from tests.local.devserver import ctrl_c_works

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")
ROOT = Path(__file__).resolve().parents[2]


def line_of(marker: str) -> int:
    """The line number of the one line of this file that ends with the comment ``# marker``."""
    lines = Path(__file__).read_text().splitlines()
    found = [n for n, line in enumerate(lines, 1) if line.endswith(f"# {marker}")]
    assert len(found) == 1, found
    return found[0]


class Greeter(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        self.logger.info("greeting %s", event.payload["who"])  # outside

        def greet(ctx: Any) -> str:
            self.logger.info("trying to greet")  # inside
            if ctx.attempt == 1:
                raise ConnectionError("flaky")
            return "hi"

        await step.do("greet", {"retries": {"limit": 2, "delay": "1 second"}}, greet)
        await step.sleep("nap", "1 hour")  # run() is replayed after it
        return "done"


@pytest.fixture
def engine_at_warning() -> Iterator[None]:
    """The engine's loggers at WARNING, as `lambda-workflows dev` sets them
    (POWERTOOLS_LOG_LEVEL)."""
    from lambda_workflows.observability import logger

    logger()  # configured now, under this process's environment, as it would be anyway
    engine = logging.getLogger("lambda_workflows")
    level = engine.level
    engine.setLevel(logging.WARNING)
    try:
        yield
    finally:
        engine.setLevel(level)


@pytest.mark.usefixtures("engine_at_warning")
def test_self_logger_lines_are_printed_at_info_with_instance_step_attempt_and_location(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a local runtime printing to a list, the engine's own loggers at WARNING
    lines: list[str] = []
    runtime = LocalRuntime({"greeter": Greeter}, out=lines.append)
    try:
        # WHEN an instance logs in run() and in a step that fails once, then sleeps
        runtime.aws.runtime.service.create("greeter", "g-1", {"who": "ana"})
        runtime.run_until_idle()
    finally:
        runtime.close()
    # THEN the run() line is printed once (not again on the replay after the sleep) ...
    here = __file__
    outside = [line for line in lines if "greeting ana" in line]
    assert len(outside) == 1, lines
    assert " INFO greeter/g-1: greeting ana " in outside[0]
    assert f"({here}:{line_of('outside')})" in outside[0]
    assert "step" not in outside[0]
    # ... and each attempt's line names the step and the attempt
    inside = [line for line in lines if "trying to greet" in line]
    assert len(inside) == 2, lines
    for attempt, line in enumerate(inside, 1):
        assert f" INFO greeter/g-1 step 'greet' attempt {attempt}: trying to greet " in line
        assert f"({here}:{line_of('inside')})" in line
    # ... between the status lines, and not printed a second time as a JSON log line
    assert any(line.endswith("greeter/g-1 -> complete") for line in lines), lines
    assert "greeting ana" not in capsys.readouterr().out


def test_closing_the_runtime_puts_the_workflow_logger_back_as_it_was() -> None:
    logger = logging.getLogger("lambda_workflows.Greeter")
    before = (logger.level, logger.propagate, list(logger.handlers))
    first = LocalRuntime({"greeter": Greeter}, out=lambda line: None)
    second = LocalRuntime({"greeter": Greeter}, out=lambda line: None)
    assert logger.level == logging.INFO and not logger.propagate
    first.close()  # the other runtime still prints
    assert logger.level == logging.INFO and not logger.propagate and len(logger.handlers) == 1
    second.close()
    assert (logger.level, logger.propagate, list(logger.handlers)) == before


# --- `lambda-workflows dev` as a user runs it: a workflow module of their own, outside the project

HELLO = """\
from lambda_workflows import WorkflowEntrypoint


class Hello(WorkflowEntrypoint):
    async def run(self, event, step):
        self.logger.info("hello from run")

        def say(ctx):
            self.logger.info("hello from a step")
            return "hi"

        return await step.do("say hello", say)
"""


def workflows_script() -> str:
    command = shutil.which("lambda-workflows", path=str(Path(sys.executable).parent))
    assert command, "the `lambda-workflows` console script is not installed in the venv"
    return command


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_workflows_dev_prints_a_users_log_lines_with_their_file_and_line(tmp_path: Path) -> None:
    # GIVEN a workflow module outside the project, served by `lambda-workflows dev`
    module = tmp_path / "hello_wf.py"
    module.write_text(HELLO)
    port = free_port()
    env = {**os.environ, "WORKFLOWS": "hello=hello_wf:Hello", "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    env.pop("POWERTOOLS_LOG_LEVEL", None)  # the dev server's own default: WARNING
    process = subprocess.Popen(
        [workflows_script(), "dev", "--port", str(port)], preexec_fn=ctrl_c_works,
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout or ()), daemon=True)
    reader.start()
    try:
        wait_until(lambda: any("listening on" in line for line in output), output)
        # WHEN an instance is created over HTTP
        create = urllib.request.Request(
            f"http://127.0.0.1:{port}/workflows/hello/instances",
            data=json.dumps({"instance_id": "h-1"}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(create, timeout=30) as response:
            assert response.status == 201
        wait_until(lambda: any("hello/h-1 -> complete" in line for line in output), output)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        reader.join(timeout=10)
    # THEN its log lines are in the output, at INFO, pointing at the module's lines
    source = HELLO.splitlines()
    run_line = source.index('        self.logger.info("hello from run")') + 1
    step_line = source.index('            self.logger.info("hello from a step")') + 1
    text = "".join(output)
    assert f"INFO hello/h-1: hello from run ({module}:{run_line})" in text, text
    assert (
        f"INFO hello/h-1 step 'say hello' attempt 1: hello from a step ({module}:{step_line})"
        in text
    ), text
    assert text.count("hello from run") == 1, text  # not also as a JSON line


def wait_until(condition: Any, output: list[str], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "".join(output)
        time.sleep(0.05)
