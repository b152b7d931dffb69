"""Property: whatever clients send `lambda-workflows dev` — requests generated from its OpenAPI
document and the malformed families of :mod:`.http_requests` — no answer is a 5xx, every 4xx is
JSON ``{"error": {"code", "message"}}``, a rejected request wrote nothing, and, with clients
sending at once, every answer is the answer to its own request.

Two phases, each on a fresh server with the bundled examples registered (moto's transactions
copy every table, so a small table keeps the run short):

1. serial, the worker idle: around every rejected request the embedded AWS is read (every
   item's key, every instance's status and version, every item of the instances the request
   names, the work queue, the schedules): a 4xx that changed anything is a failure;
2. concurrent, the worker running: 8 clients, each creating instances under its own ids, whose
   answers must name them.

After each phase every workflow's listing must hold exactly the instances that 2xx answers
reported created (``another-workflow`` also gets the ones a step creates). Failures are
collected and reported together, grouped by request family.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from lambda_workflows.demo import DEMO_INSTANCES

from . import embedded_state
from .http_requests import Generator, Probe, World, deleted_by, operations
from .wire import Connection, DevHttp, Reply, dev_http

SERIAL_REQUESTS = 3_600
CLIENTS = 8
REQUESTS_PER_CLIENT = 175
SPAWNED_BY_STEPS = {"another-workflow"}  # deterministic-side-effects creates these in a step
_CREATE = re.compile(r"/workflows/([^/?]+)/instances(/batch)?")


@dataclass
class Findings:
    """What every answer was, and what was wrong with any."""

    statuses: Counter[int] = field(default_factory=Counter)
    families: Counter[str] = field(default_factory=Counter)
    operations: Counter[str] = field(default_factory=Counter)  # "METHOD /template", drawn
    failures: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    created: set[tuple[str, str]] = field(default_factory=set)
    deleted: set[tuple[str, str]] = field(default_factory=set)  # a 2xx delete named them
    write_checked: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, probe: Probe, why: str) -> None:
        with self.lock:
            self.failures[probe.family].append(f"{why}: {probe.shown()}")

    def record(self, probe: Probe, reply: Reply) -> None:
        with self.lock:
            self.statuses[reply.status] += 1
            self.families[probe.family] += 1
            if probe.operation is not None:
                self.operations[probe.operation] += 1
            self.created |= _created(probe, reply)
            if 200 <= reply.status < 300:
                self.deleted |= deleted_by(probe)

    def report(self) -> str:
        lines = []
        for family, found in sorted(self.failures.items()):
            lines.append(f"{family}: {len(found)} of {self.families[family]} failed, e.g.")
            lines += [f"    {example[:400]}" for example in found[:3]]
        return "\n".join(lines)


def judge(probe: Probe, reply: Reply, findings: Findings) -> None:
    """Check one answer against what is known of its request."""
    findings.record(probe, reply)
    if reply.status >= 500:
        findings.fail(probe, f"{reply.status} {reply.body[:200]!r}")
        return
    error: dict[str, Any] | None = None
    if reply.status >= 400:
        try:
            error = reply.error
        except (AssertionError, ValueError):
            findings.fail(probe, f"{reply.status} not in the error shape: {reply.body[:200]!r}")
            return
        if reply.headers.get("content-type") != "application/json":
            findings.fail(probe, f"{reply.status} as {reply.headers.get('content-type')}")
    if probe.expect is not None and reply.status not in probe.expect:
        shown = error or repr(reply.body[:200])
        findings.fail(probe, f"{reply.status} (expected {sorted(probe.expect)}) {shown}")
        return
    if probe.documented is not None and reply.status not in probe.documented | {404}:
        findings.fail(probe, f"{reply.status} not documented for the operation: {error}")
    if error is not None and probe.says is not None and probe.says not in error["message"]:
        findings.fail(probe, f"{reply.status} message does not name {probe.says!r}: {error}")
    if probe.names is not None and 200 <= reply.status < 300:
        body = reply.json()
        named = body.get("id", body.get("instance_id"))
        if named != probe.names[1]:
            findings.fail(probe, f"{reply.status} names {named!r}, not {probe.names[1]!r}")


def _created(probe: Probe, reply: Reply) -> set[tuple[str, str]]:
    """The instances a 2xx answer to a create reports created."""
    match = _CREATE.fullmatch(probe.target.split("?", 1)[0])
    if probe.method != "POST" or match is None or not 200 <= reply.status < 300:
        return set()
    body = reply.json()
    ids = body["created"] if match.group(2) else [body["id"]]
    return {(match.group(1), i) for i in ids}


# --- the servers and what they hold --------------------------------------------------------


def shared_instances(dev: DevHttp, *, run: bool) -> tuple[World, set[tuple[str, str]]]:
    """Two instances of every example: ``shared-1`` (run to wherever it stops when ``run``:
    complete, waiting for an event, errored) and ``shared-2``, terminated; so requests meet
    every state. Returns what the generator needs to know, and the instances created."""
    client = dev.connect()
    openapi = client.request("GET", "/openapi.json").json()
    workflows = client.request("GET", "/workflows").json()["workflows"]
    created: set[tuple[str, str]] = set()
    cursors: dict[str, str] = {}
    for workflow in workflows:
        params = DEMO_INSTANCES.get(workflow, ("", None))[1]
        for instance_id in ("shared-1", "shared-2"):
            body = {"instance_id": instance_id, "params": params}
            reply = client.request("POST", f"/workflows/{workflow}/instances", body)
            assert reply.status == 201, reply
            created.add((workflow, instance_id))
        path = f"/workflows/{workflow}/instances/shared-2/status"
        # 409 once it has finished (the worker may have run it already)
        assert client.request("PATCH", path, {"status": "terminate"}).status in (200, 409)
        page = client.request("GET", f"/workflows/{workflow}/instances?limit=1").json()
        cursors[workflow] = page["cursor"]
    if run:
        dev.runtime.run_until_idle()
    shared = {w: ("shared-1", "shared-2", "shared-3") for w in workflows}
    return World(openapi, workflows, shared, cursors), created


def named(probe: Probe) -> set[tuple[str, str]]:
    """The instances a request names: in its path, or as ids in its body."""
    found: set[tuple[str, str]] = set()
    segments = probe.target.split("?", 1)[0].split("/")
    if len(segments) < 4 or segments[1:4:2] != ["workflows", "instances"]:
        return found
    workflow = segments[2]
    if len(segments) > 4 and segments[4] != "batch":
        found.add((workflow, segments[4]))
    try:
        body = json.loads(probe.body or b"".join(probe.chunks or ()) or b"null")
    except ValueError:
        return found
    for item in body if isinstance(body, list) else [body]:
        if isinstance(item, dict):
            listed = item.get("ids")
            ids = [item.get("instance_id"), item.get("id")]
            ids += listed if isinstance(listed, list) else []
            found |= {(workflow, i) for i in ids if isinstance(i, str)}
    return found


def listed(connection: Connection, workflow: str) -> set[str]:
    """Every instance id of ``workflow``, through the API's paginated listing."""
    ids: set[str] = set()
    cursor = ""
    while True:
        page = connection.request("GET", f"/workflows/{workflow}/instances?limit=1000{cursor}")
        assert page.status == 200, page
        body = page.json()
        ids |= {row["id"] for row in body["instances"]}
        if not body["cursor"]:
            return ids
        cursor = f"&cursor={body['cursor']}"


# --- the property ---------------------------------------------------------------------------


def test_no_request_gets_a_5xx_and_rejected_requests_write_nothing() -> None:
    findings = Findings()
    started = time.monotonic()
    with dev_http(worker=False) as dev:
        world, created = shared_instances(dev, run=True)
        findings.created = created

        # WHEN one client sends requests one at a time, the worker idle
        connection = dev.connect()
        generator = Generator(world, "serial", "s")
        for probe in islice(generator, SERIAL_REQUESTS):
            touched = named(probe)
            before = embedded_state.read(dev.runtime, touched)
            reply = send(connection, probe, findings)
            if reply is None:
                continue
            judge(probe, reply, findings)
            generator.saw(probe, reply.status)
            # THEN a rejected request left every item, message and schedule as it was
            if 400 <= reply.status < 500:
                findings.write_checked += 1
                after = embedded_state.read(dev.runtime, touched)
                if after != before:
                    findings.fail(probe, f"{reply.status} and wrote: {before.changes(after)}")
        # ... and the listings hold exactly the instances that 2xx answers created
        reconcile(dev, world, findings)
    serial_seconds = time.monotonic() - started

    with dev_http(worker=True) as dev:
        world, created = shared_instances(dev, run=False)
        findings.created = created

        # WHEN 8 clients send at once, the worker running
        def client(number: int) -> None:
            connection = dev.connect()
            generator = Generator(world, f"client-{number}", f"c{number}")
            for probe in islice(generator, REQUESTS_PER_CLIENT):
                reply = send(connection, probe, findings)
                if reply is not None:
                    judge(probe, reply, findings)
                    generator.saw(probe, reply.status)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        # THEN each answer was its own request's (judged above), and the listings hold exactly
        # the instances that 2xx answers created
        reconcile(dev, world, findings)

    total = sum(findings.statuses.values())
    summary = (
        f"{total} requests ({findings.write_checked} rejections checked for writes) in "
        f"{time.monotonic() - started:.0f} s (serial part {serial_seconds:.0f} s); statuses "
        f"{dict(sorted(findings.statuses.items()))}"
    )
    print(summary)
    assert not findings.failures, f"{summary}\n{findings.report()}"
    assert total == SERIAL_REQUESTS + CLIENTS * REQUESTS_PER_CLIENT >= 5_000
    assert findings.write_checked >= 1_500
    # the generator reached every documented operation (14 since the subscribe route; each
    # 45 times or more), successes and the whole range of rejections
    documented = {f"{m} {t}" for t, m, _ in operations(world.openapi)}
    assert len(documented) == 14 and min(findings.operations[o] for o in documented) >= 45
    assert {200, 201, 202, 400, 404, 405, 409, 413, 415, 422} <= set(findings.statuses)


def send(connection: Connection, probe: Probe, findings: Findings) -> Reply | None:
    """Send ``probe``; no answer at all is a failure, as bad as a 5xx."""
    try:
        return connection.send(probe.wire(), probe.method)
    except OSError as exc:
        findings.fail(probe, f"no answer ({exc!r})")
        connection.close()
        return None


def reconcile(dev: DevHttp, world: World, findings: Findings) -> None:
    """Every workflow lists exactly the instances 2xx answers reported created (and
    ``another-workflow`` also those its steps create), but for the ids a delete answered for,
    which may be listed or not (a create of the same id may have come after it, or before);
    the server printed no traceback."""
    for line in dev.lines:
        if "dev server error" in line:
            findings.failures["server output"].append(line[-400:])
    for workflow in world.workflows:
        expected = {i for w, i in findings.created if w == workflow}
        found = listed(dev.connect(), workflow)
        undecided = {i for w, i in findings.deleted if w == workflow}
        missing, extra = expected - found - undecided, found - expected - undecided
        if workflow in SPAWNED_BY_STEPS:
            extra = set()
        if missing or extra:
            findings.failures["listing"].append(
                f"{workflow}: created but not listed {sorted(missing)[:5]}, listed but no "
                f"request was answered as creating it {sorted(extra)[:5]}"
            )
