"""Benchmark of the ApiFunction's memory: an instance of 25,000 steps that each failed once.

Run with ``python -m bench.api_memory_bench``. The instance is written to a DynamoDB table on a
moto server in a process of its own (so the table's memory is not counted), built in seconds
as the API tests build it (``tests/functional/api/many_steps.py``), then written with
BatchWriteItem. Each route is then read in a fresh process, as a cold Lambda would: the real
ApiFunction handler over the real DynamoDB adapter, twice (the second as a warm container's
next request), and the process reports its peak resident memory (``VmHWM``, what Lambda's
MemorySize caps; not ``ru_maxrss``, which a process inherits across exec from the one that
forked it) and, in a second run, the peak of Python's own allocations (``tracemalloc``,
which slows the run and inflates its resident memory, so it is measured apart).

Each route reads the instance's whole partition (see
:mod:`lambda_workflows.engine.instances.pages`): the status (first page of the timeline), a page of
the timeline, a page of the history.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for `python bench/...`

STEPS = 25_000
INSTANCE = "/workflows/flaky/instances/big"
ROUTES = {
    "status": (INSTANCE, None),
    "steps page": (f"{INSTANCE}/steps", {"limit": "100"}),
    "history page": (f"{INSTANCE}/history", {"limit": "100"}),
}
MEMORY_SIZE_KEY = "MemorySize"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_instance(environment: dict[str, str]) -> None:
    """The 25,000-step instance, built in memory, written to the table as the store lays it."""
    import boto3
    from tests.functional.api.many_steps import FlakySteps, record_many_steps

    from lambda_workflows.aws import items as it
    from lambda_workflows.aws.dynamodb import DynamoStore
    from lambda_workflows.engine.clock import SystemClock
    from lambda_workflows.engine.model import InstanceRef
    from lambda_workflows.testing import WorkflowTestEnv

    env = WorkflowTestEnv({"flaky": FlakySteps})
    record_many_steps(env, "flaky", "big", STEPS)
    state = env.store.load(InstanceRef("flaky", "big"))
    client = boto3.client("dynamodb")
    table = environment["TABLE_NAME"]
    DynamoStore(client, table, SystemClock()).create(state.record)
    pk = it.instance_pk("flaky", "big")
    puts: list[dict[str, Any]] = []
    for entry in state.entries:
        item, chunks = it.entry_item(pk, state.record.generation, entry, time.time())
        puts += [{"PutRequest": {"Item": i}} for i in (item, *chunks)]
    for start in range(0, len(puts), 25):
        left: Any = {table: puts[start : start + 25]}
        while left:
            left = client.batch_write_item(RequestItems=left).get("UnprocessedItems")


def _read(route: str, traced: bool) -> None:
    """In a fresh process: read ``route`` twice through the API handler; print the peaks."""
    import tracemalloc

    from tests.functional.api.conftest import build_event
    from tests.functional.api.many_steps import FlakySteps

    from lambda_workflows.aws.runtime import build_runtime
    from lambda_workflows.aws.settings import AwsSettings
    from lambda_workflows.entrypoints import api

    runtime = build_runtime(AwsSettings.from_env(), {"flaky": FlakySteps})
    handler = api.make_handler(lambda: runtime)  # type: ignore[arg-type, return-value]
    path, query = ROUTES[route]
    before = _resident("VmHWM")
    if traced:
        tracemalloc.start()
    sizes = []
    for _ in range(2):
        response = handler(build_event("GET", path, query=query), None)
        assert response["statusCode"] == 200, response["body"][:500]
        sizes.append(len(response["body"]))
    peak = tracemalloc.get_traced_memory()[1] / 2**20 if traced else None
    after = _resident("VmHWM")
    print(json.dumps({"before_mb": before, "max_rss_mb": after, "traced_mb": peak, "body": sizes}))


def _resident(field: str) -> float:
    """A memory figure of this process from /proc (Linux), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _api_memory_size() -> int:
    from lambda_workflows.infra.template import load_template

    template = load_template()
    own = template["Resources"]["ApiFunction"]["Properties"].get(MEMORY_SIZE_KEY)
    return int(own or template["Globals"]["Function"][MEMORY_SIZE_KEY])


def main() -> None:
    if len(sys.argv) == 3:  # a reading process
        _read(sys.argv[1], sys.argv[2] == "traced")
        return
    port = _free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(2)
        environment = _provision(port)
        started = time.perf_counter()
        _write_instance(environment)
        print(f"{STEPS} steps written in {time.perf_counter() - started:.0f} s")
        limit = _api_memory_size()
        print(f"ApiFunction MemorySize (template.yaml): {limit} MB")
        for route in ROUTES:
            for mode in ("rss", "traced"):
                _report(route, mode, environment)
    finally:
        server.terminate()
        server.wait()


def _provision(port: int) -> dict[str, str]:
    import boto3

    from lambda_workflows.infra.provision import provision

    os.environ.update(
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
    )
    environment = provision(boto3.session.Session(region_name="us-east-1")).environment()
    os.environ.update(environment)
    return environment


def _report(route: str, mode: str, environment: dict[str, str]) -> None:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.api_memory_bench", route, mode],
        env=os.environ | environment,
        capture_output=True,
        text=True,
        check=True,
    )
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    took = time.perf_counter() - started
    if mode == "rss":
        print(
            f"{route:>13}: peak RSS {shown['max_rss_mb']:.0f} MB "
            f"(after imports and wiring {shown['before_mb']:.0f} MB); "
            f"answers {shown['body']} bytes; {took:.0f} s on moto"
        )
    else:
        print(f"{route:>13}: peak of Python's allocations {shown['traced_mb']:.0f} MB")


if __name__ == "__main__":
    main()
