"""Benchmark of ``lambda-workflows check-deploy``: the time per instance history it checks.

Run with ``python -m bench.check_deploy_bench [N]``. It starts ``lambda-workflows dev`` in-process
and creates N instances (default 50) of a workflow of 100 steps that then waits for an event,
so each is in flight with a history of 101 entries; setting them up is the slow part (the
embedded AWS records each step in turn: 2 to 4 s an instance, so 1,000 would take an
hour before anything is measured). Then it times ``lambda-workflows check-deploy`` against that
server, the code unchanged: listing, fetching each history over HTTP (8 at a time) and
replaying it. The figure is the wall time divided by N; beside it, the replay alone (the
local part of the work). On the dev server the fetch dominates: the embedded DynamoDB (moto)
answers one request at a time and takes a few hundred milliseconds to read 101 journal items;
a deployed stack's DynamoDB answers in milliseconds, and in parallel.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.cli import main as workflows_cli
from lambda_workflows.cli.console import Console
from lambda_workflows.dev_server import make_server
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.registry import load_workflows
from lambda_workflows.remote import HttpApi
from lambda_workflows.testing import Replayer

STEPS = 100
DEFAULT_INSTANCES = 50
SPEC = "hundred=bench.check_deploy_bench:HundredSteps"


async def _one() -> int:
    return 1


class HundredSteps(WorkflowEntrypoint):
    """100 trivial steps, then a wait: in flight, with a history of 101 entries."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for i in range(STEPS):
            await step.do(f"step {i}", _one)
        return await step.wait_for_event("done", type="done", timeout="1 day")


def _all_waiting(api: HttpApi, count: int) -> None:
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline:
        body = api.request("GET", "/workflows/hundred").body
        if (body.get("instances") or {}).get("waiting", 0) >= count:
            return
        time.sleep(0.5)
    raise SystemExit("check-deploy bench: the instances never all reached waiting")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_INSTANCES
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # a line per instance otherwise
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ["WORKFLOWS"] = SPEC  # the local code check-deploy replays with: the same
    runtime = LocalRuntime(load_workflows(SPEC), out=lambda line: None)
    server = make_server(runtime, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    runtime.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        api = HttpApi(url)
        started = time.perf_counter()
        for i in range(count):
            api.request("POST", "/workflows/hundred/instances", {"instance_id": f"i-{i}"})
        _all_waiting(api, count)
        setup = time.perf_counter() - started
        out, err = io.StringIO(), io.StringIO()
        started = time.perf_counter()
        code = workflows_cli(["check-deploy", "--url", url], console=Console(out, err))
        took = time.perf_counter() - started
        history = api.request("GET", "/workflows/hundred/instances/i-0/history").body
    finally:
        server.shutdown()
        server.server_close()
        runtime.close()
    rows = len(out.getvalue().splitlines()) - 1
    assert code == 0 and rows == count, (code, rows, err.getvalue()[-500:])
    print(
        f"check-deploy: {count} instances of {STEPS} steps on lambda-workflows dev: {took:.2f} s, "
        f"{took / count * 1000:.1f} ms per instance history, of which replay "
        f"{_replay_seconds(history) * 1000:.1f} ms (set-up {setup:.0f} s)"
    )


def _replay_seconds(history: dict[str, Any], rounds: int = 20) -> float:
    """The best time of the local part: replaying one fetched history."""
    replayer = Replayer(load_workflows(SPEC))
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        assert replayer.replay(history).compatible
        best = min(best, time.perf_counter() - started)
    return best


if __name__ == "__main__":
    main()
