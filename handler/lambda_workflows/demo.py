"""`make demo`: the example workflows end to end through the local runtime.

Starts `lambda-workflows dev` in-process on a free port (embedded AWS: moto, provisioned from
template.yaml; the real API, runner and scheduler-emulator paths), then drives it only over
HTTP: creates an instance of every registered example, sends the event one of them waits for,
and prints each instance's step timeline and output. Idle sleeps and retry delays are skipped,
and the screen says so. Exits 0 when every instance ends as expected, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from typing import Any

# Instance id and params of each bundled example (the good pattern of each rule, the showcase).
DEMO_INSTANCES: dict[str, tuple[str, Any]] = {
    "subscription": ("sub-42", {"customer_id": 42}),
    "flaky-fetch": ("flaky-1", None),
    "crash-resume": ("order-7", None),
    "idempotent-charge": ("charge-123456", {"customer_id": 123456}),
    "granular-steps": ("granular-1", None),
    "no-state-outside-steps": ("cats-1", None),
    "deterministic-side-effects": ("side-effects-1", None),
    "dont-mutate-event": ("user-alice", {"user": "alice"}),
    "deterministic-step-names": ("names-1", {"user": "alice"}),
    "race-inside-step": ("race-1", None),
    "await-steps": ("issues-1", {"repo_name": "cloudflare/workflows"}),
    "conditional-logic": ("premium-1", {"user_type": "premium"}),
    "large-results": ("dataset-1", None),
}
FINISHED = {"complete", "errored", "terminated"}


class Api:
    """A tiny HTTP client for the local API."""

    def __init__(self, base: str) -> None:
        self.base = base

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")


def main() -> int:
    """Run the demo; return the process exit code."""
    # set when the demo runs, not when it is imported: the tests import DEMO_INSTANCES, and
    # a WARNING level in the environment would silence every later test's log lines
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # no EMF lines on the screen
    from lambda_workflows.examples import EXAMPLES
    from lambda_workflows.examples._fakes import example_env
    from lambda_workflows.examples.showcase import CrashResumeWorkflow

    from .dev_server import make_server
    from .http_server import serve_in_background
    from .local.runtime import LocalRuntime
    from .registry import load_workflows
    from .testing import Crash

    CrashResumeWorkflow.crash = Crash  # the crash-resume example dies once in its third step
    workflows = load_workflows(EXAMPLES)  # the bundled examples, with their local fakes
    lines: list[str] = []
    runtime = LocalRuntime(workflows, env_values=example_env(), out=lines.append)
    server = make_server(runtime, "127.0.0.1", 0)
    serve_in_background(server)
    runtime.start()
    api = Api(f"http://127.0.0.1:{server.server_address[1]}")
    print("Durable workflows demo: the local runtime (embedded AWS = moto, provisioned from")
    print("template.yaml) driven over HTTP at", api.base)
    print("NOTE: idle sleeps and retry delays are SKIPPED (the clock jumps), so a 3-hour sleep")
    print("takes no real time; event-wait timeouts are never skipped.\n")
    try:
        results = _drive(api, [name for name in DEMO_INSTANCES if name in workflows])
    finally:
        server.shutdown()
        runtime.close()
    ok = _report(lines, results.values(), runtime.crashes)
    print("\nDEMO OK: every instance completed as expected" if ok else "\nDEMO FAILED")
    return 0 if ok else 1


def _drive(api: Api, names: list[str]) -> dict[str, Any]:
    """Create an instance of each workflow in ``names``, send the subscription its approval,
    and return each instance's final status (its HTTP JSON) by workflow name."""
    status, listing = api.call("GET", "/workflows")
    print(f"GET /workflows -> {status}: {listing}")
    for name in names:
        instance_id, params = DEMO_INSTANCES[name]
        status, body = api.call(
            "POST",
            f"/workflows/{name}/instances",
            {"instance_id": instance_id, "params": params},
        )
        print(f"POST /workflows/{name}/instances -> {status} {body}")
    _wait_for_event_wait(api, "subscription", "sub-42", seconds=60)
    status, _ = api.call(
        "POST", "/workflows/subscription/instances/sub-42/events/approved", {"user": "manager"}
    )
    print(f"POST .../sub-42/events/approved -> {status}")
    return {
        name: _wait(api, name, DEMO_INSTANCES[name][0], FINISHED, seconds=120) for name in names
    }


def _report(lines: list[str], results: Iterable[Any], crashes: int) -> bool:
    """Print what the runtime did, each timeline and the demo's checks; True if all passed."""
    from lambda_workflows.examples.showcase import attempts

    from .text_timeline import render

    print("\n--- what the local runtime did (status polls left out) " + "-" * 16)
    print("\n".join(line for line in lines if not line.startswith("GET /workflows/")))
    print("\n--- step timelines " + "-" * 52)
    ok = True
    for view in results:
        print()
        print(render(view))
        ok &= view.get("status") == "complete"
    checks = {
        "the subscription charged exactly once": attempts["charge 42"] == 1,
        "the flaky fetch succeeded on its third attempt": attempts["fetch flaky-1"] == 3,
        "the crash re-ran only the step it died in": attempts["order-7 reserve stock"] == 1
        and attempts["order-7 ship parcel"] == 2,
        "a crash was survived": crashes == 1,
    }
    print()
    for label, passed in checks.items():
        print(f"{'ok  ' if passed else 'FAIL'} {label}")
        ok &= passed
    return ok


def _wait_for_event_wait(api: Api, name: str, instance_id: str, seconds: float) -> None:
    """Until the instance's step timeline shows a wait_for_event still waiting."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        _, body = api.call("GET", f"/workflows/{name}/instances/{instance_id}")
        steps = body.get("steps", []) if isinstance(body, dict) else []
        if any(s["type"] == "waitForEvent" and s["status"] == "waiting" for s in steps):
            print(f"{name}/{instance_id} slept (skipped) and now waits for its event")
            return
        time.sleep(0.05)


def _wait(api: Api, name: str, instance_id: str, wanted: set[str], seconds: float) -> Any:
    deadline = time.monotonic() + seconds
    body: Any = None
    while time.monotonic() < deadline:
        _, body = api.call("GET", f"/workflows/{name}/instances/{instance_id}")
        if isinstance(body, dict) and body.get("status") in wanted:
            return body
        time.sleep(0.05)
    return body if isinstance(body, dict) else {"status": "unknown", "id": instance_id}


if __name__ == "__main__":
    sys.exit(main())
