"""What a million steps and a million sleeping instance-days cost, from counted usage.

A real workflow runs through the real runtime on moto (the RunnerFunction handler, DynamoStore,
SQS, EventBridge Scheduler adapters) with the deployed runner's pacing. Botocore hooks on the
runtime's clients count every AWS call and read its parameters and answer:

- DynamoDB write units from the size of each item written (1 KB a unit; 2 in a transaction;
  an update costs the larger of the item before and after), plus the index writes it causes
  (by_status and by_workflow project the whole instance item, by_due its keys: an index entry
  whose key changes is a delete and a put); read units from the size of what each read returns
  (4 KB a unit, strongly consistent).
- Lambda duration: each runner invocation is timed with 5 ms slept before every AWS call (as
  bench/latency_bench.py), minus the time moto itself spent answering in-process, which a real
  deployment does not pay; billed per 1 ms at the RunnerFunction's 512 MB (template.yaml).

What no hook can see is modelled, and said so: the SQS event source receives and deletes each
work message (2 requests, BatchSize 1), a schedule firing is a Scheduler invocation and a
SendMessage, an instance is created through API Gateway and the ApiFunction (256 MB; its
duration is the instance API's create, timed the same way). Prices: bench/prices.py.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.prices import price
from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.items import INSTANCE_SK
from lambda_workflows.aws.reaper import ExpiredInstanceReaper
from lambda_workflows.aws.runtime import LAMBDA_RUNNER
from lambda_workflows.aws.settings import RETENTION_DAYS
from lambda_workflows.testing import WorkflowTestEnv

LATENCY = 0.005  # seconds slept before every AWS call: about one DynamoDB request from Lambda
RUNNER_GB = 0.5  # template.yaml: RunnerFunction MemorySize 512
API_GB = 0.25  # template.yaml: Globals MemorySize 256 (the ApiFunction)
SWEEP_GB = 0.25  # template.yaml: Globals MemorySize 256 (SweepFunction, which reaps)
REAP_BATCH = 100  # template.yaml: ExpiredInstances BatchSize (stream records an invocation)
STEPS = 100  # steps per instance of the step benchmark
RUNS = 3  # instances measured per scenario (their mean counts)
RESULT = "r" * 1000  # a step's result: about 1 KB of JSON
MILLION = 1_000_000
DAYS_PER_MONTH = 365.25 / 12
# (index, its key attributes, whole item projected?) as template.yaml declares them
INDEXES = (
    ("by_status", ("gsi1pk", "gsi1sk"), True),
    ("by_workflow", ("gsi2pk", "gsi2sk"), True),
    ("by_due", ("due_shard", "due_at"), False),
)


class KilobyteSteps(WorkflowEntrypoint):
    """``STEPS`` sequential steps, each returning about 1 KB."""

    max_steps = 25_000

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for i in range(STEPS):
            await step.do(f"step {i}", lambda: RESULT)


class Nap(WorkflowEntrypoint):
    """Sleeps a day, then ends."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", "1 day")


def attribute_size(value: dict[str, Any]) -> int:
    """Bytes DynamoDB counts for one attribute value (its published item-size rules)."""
    kind, inner = next(iter(value.items()))
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        digits = inner.lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + attribute_size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(attribute_size(v) + 1 for v in inner)
    return sum(attribute_size({kind[0]: v}) for v in inner)  # SS, NS, BS


def item_size(item: dict[str, Any]) -> int:
    """Bytes of an item: its attribute names and values."""
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


def write_units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


@dataclass
class Meter:
    """Counts the calls of a runtime's clients and what DynamoDB bills for them."""

    peek: Any  # an unhooked DynamoDB client: reads the item an update left, for the indexes
    table: str
    calls: Counter[str] = field(default_factory=Counter)
    write_units: float = 0.0
    index_write_units: float = 0.0
    read_units: float = 0.0
    moto_seconds: float = 0.0  # spent answering in-process: a real deployment pays none
    slept_over: float = 0.0  # injected sleeps beyond LATENCY (a busy machine oversleeps)
    sleeping_bytes: int = 0  # stored when the instance went to sleep
    counting: bool = True  # False: the bench's own reads (its final status check)
    reaping: bool = False  # True: the reaper's calls, once the instance item expired
    reap_calls: Counter[str] = field(default_factory=Counter)
    reap_write_units: float = 0.0
    reap_read_units: float = 0.0
    images: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, runtime: Any) -> None:
        clients = {
            "dynamodb": runtime.store.client,
            "sqs": runtime.queue.client,
            "scheduler": runtime.wakeups.client,
        }
        for service, client in clients.items():
            events = client.meta.events
            events.register(f"before-parameter-build.{service}", self._asked)
            events.register(f"before-call.{service}", self._before)
            events.register(f"after-call.{service}", self._after(service))

    def _asked(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["cost_params"] = params

    def _before(self, context: dict[str, Any], **_: Any) -> None:
        if not self.counting:
            return
        started = time.perf_counter()
        time.sleep(LATENCY)
        context["cost_started"] = now = time.perf_counter()
        with self.lock:
            self.slept_over += now - started - LATENCY

    def _after(self, service: str) -> Callable[..., None]:
        def after(model: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
            if not self.counting:
                return
            elapsed = time.perf_counter() - context.get("cost_started", time.perf_counter())
            with self.lock:
                self.moto_seconds += elapsed
                if self.reaping:
                    self.reap_calls[f"{service}.{model.name}"] += 1
                    self._bill_reaping(model.name, context.get("cost_params", {}), parsed)
                    return
                self.calls[f"{service}.{model.name}"] += 1
                if service == "dynamodb":
                    self._bill(model.name, context.get("cost_params", {}), parsed)

        return after

    # --- what DynamoDB bills ----------------------------------------------------------

    def _bill(self, operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        if operation in ("Query", "GetItem"):
            found = parsed.get("Items") or ([parsed["Item"]] if "Item" in parsed else [])
            self.read_units += max(1, math.ceil(sum(map(item_size, found)) / 4096))
        elif operation == "PutItem":
            self._written(params["Item"], 1)
        elif operation == "UpdateItem":
            self._updated(params["Key"], 1)
        elif operation == "TransactWriteItems":
            for action in params["TransactItems"]:
                if "Put" in action:
                    self._written(action["Put"]["Item"], 2)
                elif "Update" in action:
                    self._updated(action["Update"]["Key"], 2)
        elif operation == "BatchWriteItem":
            for request in next(iter(params["RequestItems"].values())):
                self._written(request.get("PutRequest", {}).get("Item", {}), 1)

    def _bill_reaping(self, operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        """The reaper's reads, and its deletes: a write unit per KB of the item deleted."""
        if operation == "Query":
            found = parsed.get("Items") or []
            # the read units of the items whole: a projection does not make a read cheaper
            pk = params["ExpressionAttributeValues"][":pk"]["S"]
            whole = [self.images.get((pk, i["sk"]["S"]), i) for i in found]
            self.reap_read_units += max(1, math.ceil(sum(map(item_size, whole)) / 4096))
        elif operation == "DeleteItem":
            key = (params["Key"]["pk"]["S"], params["Key"]["sk"]["S"])
            self.reap_write_units += write_units(item_size(self.images.get(key) or params["Key"]))

    def _written(self, item: dict[str, Any], factor: int) -> None:
        if not item:
            self.write_units += factor
            return
        key = (item["pk"]["S"], item["sk"]["S"])
        self.write_units += factor * write_units(item_size(item))
        self._index(self.images.get(key), item)
        self.images[key] = item

    def _updated(self, key: dict[str, Any], factor: int) -> None:
        ident = (key["pk"]["S"], key["sk"]["S"])
        old = self.images.get(ident, {})
        new = self.peek.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
        new = new or {}
        self.write_units += factor * write_units(max(item_size(old), item_size(new)))
        self._index(old or None, new)
        self.images[ident] = new
        if new.get("status") == {"S": "waiting"}:
            self.sleeping_bytes = self.stored_bytes()

    def _index(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """Index writes of one item changing from ``old`` to ``new``."""
        for _, keys, whole in INDEXES:
            before = _entry(old, keys, whole)
            after = _entry(new, keys, whole)
            if before == after:
                continue
            moved = before and after and any(before[k] != after[k] for k in keys)
            if before and (moved or not after):
                self.index_write_units += write_units(item_size(before))
            if after:
                self.index_write_units += write_units(item_size(after))

    def spent(self) -> float:
        """A clock of what a deployment would be billed for: wall time, less moto's answers
        and less what the injected sleeps overslept (each call waits LATENCY exactly)."""
        return time.perf_counter() - self.moto_seconds - self.slept_over

    def stored_bytes(self, prefix: str = "") -> int:
        """Bytes stored now for the items written (whose sort key starts with ``prefix``):
        table and index copies, 100 bytes of overhead each (what storage is billed on)."""
        total = 0
        for (_, sk), item in self.images.items():
            if not item or not sk.startswith(prefix):
                continue
            total += item_size(item) + 100
            for _, keys, whole in INDEXES:
                entry = _entry(item, keys, whole)
                total += item_size(entry) + 100 if entry else 0
        return total


def _entry(item: dict[str, Any] | None, keys: tuple[str, ...], whole: bool) -> dict[str, Any]:
    """The index entry an item has (empty when it lacks the index's keys)."""
    if not item or any(k not in item for k in keys):
        return {}
    if whole:
        return item
    return {k: item[k] for k in ("pk", "sk", *keys)}


@dataclass
class Run:
    """What one instance used, from creation to its end."""

    meter: Meter
    invocations: list[float] = field(default_factory=list)  # billed seconds of each
    create_seconds: float = 0.0
    reap_seconds: float = 0.0  # the reaper's work once the instance item expired


def measure(workflow: type[WorkflowEntrypoint], instance_id: str) -> Run:
    """Run one instance of ``workflow`` to its end and meter it."""
    with WorkflowTestEnv({"w": workflow}, backend="aws", settings=LAMBDA_RUNNER) as env:
        aws = env.aws
        meter = Meter(aws.session.client("dynamodb"), aws.settings.table_name)
        meter.attach(aws.runtime)
        run = Run(meter)
        handler = aws._runner_handler  # the real RunnerFunction handler, timed around

        def timed(event: Any, context: Any) -> Any:
            start = meter.spent()
            try:
                return handler(event, context)
            finally:
                run.invocations.append(math.ceil((meter.spent() - start) * 1000) / 1000)

        aws._runner_handler = timed
        start = meter.spent()
        env.create("w", id=instance_id)
        run.create_seconds = meter.spent() - start
        env.run_until_idle()
        meter.counting = False
        assert env.get("w", instance_id).status().status == "complete"
        # RetentionDays later TTL removes the instance item, and SweepFunction's reaper deletes
        # what the instance left (lambda_workflows.aws.reaper)
        key = {"pk": {"S": f"I#w#{instance_id}"}, "sk": {"S": INSTANCE_SK}}
        table = aws.settings.table_name
        expired = meter.peek.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
        meter.peek.delete_item(TableName=table, Key=key)
        meter.counting = meter.reaping = True
        start = meter.spent()
        reaper = ExpiredInstanceReaper(aws.runtime.store.client, table)
        reaper.reap(key["pk"]["S"], float(expired["expires_at"]["N"]))
        run.reap_seconds = math.ceil((meter.spent() - start) * 1000) / 1000
        meter.counting = meter.reaping = False
        return run


@dataclass
class Bill:
    """USD per instance, by line, from the mean of the runs."""

    lines: dict[str, float] = field(default_factory=dict)

    def add(self, line: str, amount: float) -> None:
        self.lines[line] = self.lines.get(line, 0.0) + amount

    @property
    def total(self) -> float:
        return sum(self.lines.values())


def bill(runs: list[Run], sleep_days: float = 0.0) -> tuple[Bill, dict[str, float]]:
    """What one instance costs (mean of ``runs``) and the usage behind it."""
    n = len(runs)
    calls: Counter[str] = Counter()
    for run in runs:
        calls.update(run.meter.calls)
    mean = {op: count / n for op, count in calls.items()}
    invocations = sum(len(r.invocations) for r in runs) / n
    runner_seconds = sum(sum(r.invocations) for r in runs) / n
    create_seconds = sum(r.create_seconds for r in runs) / n
    schedules = mean.get("scheduler.CreateSchedule", 0.0)
    usage = {
        "write units": sum(r.meter.write_units for r in runs) / n,
        "index write units": sum(r.meter.index_write_units for r in runs) / n,
        "read units": sum(r.meter.read_units for r in runs) / n,
        "runner invocations": invocations,
        "runner seconds": runner_seconds,
        "SQS requests": sum(v for k, v in mean.items() if k.startswith("sqs.")),
        "schedules": schedules,
    }
    b = Bill()
    b.add(
        "DynamoDB writes",
        (usage["write units"] + usage["index write units"]) * _each("dynamodb.write_request_unit"),
    )
    b.add("DynamoDB reads", usage["read units"] * _each("dynamodb.read_request_unit"))
    b.add("Lambda requests", (invocations + 1) * _each("lambda.request"))  # +1: the API's
    gb_seconds = runner_seconds * RUNNER_GB + math.ceil(create_seconds * 1000) / 1000 * API_GB
    b.add("Lambda duration", gb_seconds * _each("lambda.arm64_gb_second"))
    # counted sends, plus (modelled) the event source's receive and delete of each message
    # and the scheduler's send when a schedule fires
    sqs = usage["SQS requests"] + 2 * invocations + schedules
    b.add("SQS requests", sqs * _each("sqs.request"))
    b.add("Scheduler invocations", schedules * _each("scheduler.invocation"))
    b.add("API Gateway request", _each("apigateway.rest_request"))
    if sleep_days:
        stored = sum(r.meter.sleeping_bytes for r in runs) / n
        months = sleep_days / DAYS_PER_MONTH
        b.add("DynamoDB storage", stored / 1e9 * months * _each("dynamodb.storage"))
    usage["retention USD"] = sum(map(retention, runs)) / n
    return b, usage


def retention(run: Run) -> float:
    """USD once the instance ended: every item it left (the instance item with its index
    copies, its journal, events and chunks) stored for its retention (the stack's RetentionDays
    default), then the reaper's reads, deletes and run when TTL removed the instance item."""
    stored = run.meter.stored_bytes() / 1e9 * RETENTION_DAYS / DAYS_PER_MONTH
    meter = run.meter
    return (
        stored * _each("dynamodb.storage")
        + meter.reap_write_units * _each("dynamodb.write_request_unit")
        + meter.reap_read_units * _each("dynamodb.read_request_unit")
        + _each("lambda.request") / REAP_BATCH
        + run.reap_seconds * SWEEP_GB * _each("lambda.arm64_gb_second")
    )


def _usd(amount: float) -> str:
    """Dollars and cents, or a tenth of a cent for less than a cent."""
    return f"${amount:,.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.3f}"


def _each(key: str) -> float:
    return price(key).each


def main() -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    steps = [measure(KilobyteSteps, f"steps-{i}") for i in range(RUNS)]
    naps = [measure(Nap, f"nap-{i}") for i in range(RUNS)]
    per_steps, steps_usage = bill(steps)
    per_nap, nap_usage = bill(naps, sleep_days=1.0)
    instances = MILLION / STEPS
    print(f"ours: counted on moto, {LATENCY * 1000:.0f} ms before every AWS call, us-east-1")
    report(
        f"1,000,000 steps ({STEPS:,} sequential 1 KB steps an instance)",
        per_steps,
        steps_usage,
        instances,
    )
    report(
        "1,000,000 instances sleeping a day (created, sleep 1 day, end)",
        per_nap,
        nap_usage,
        MILLION,
    )
    compare(per_steps.total * instances, per_nap.total * MILLION)


def report(title: str, per: Bill, usage: dict[str, float], times: float) -> None:
    kept = usage.pop("retention USD") * times
    print(f"\n{title}: ${per.total * times:,.2f}")
    shown = ", ".join(f"{name} {value:,.3g}" for name, value in usage.items())
    print(f"  per instance: {shown}")
    for line, amount in per.lines.items():
        print(f"  {line:<24} ${amount * times:>10,.2f}")
    print(f"  then kept {RETENTION_DAYS:.0f} days after the end (RetentionDays) and deleted:")
    print(f"  ${kept:,.2f} of DynamoDB storage and the reaper's reads and deletes")


def compare(ours_steps: float, ours_naps: float) -> None:
    """The same two workloads at the other engines' published prices (orchestration only)."""
    steps, instances = MILLION, MILLION / STEPS
    rows = [
        ("this project (above)", ours_steps, ours_naps),
        (
            "Cloudflare Workflows, per step",
            steps * _each("cloudflare.step"),
            MILLION * _each("cloudflare.step"),  # the sleep is its one step
        ),
        (
            "Cloudflare Workflows, Workers Standard rows",
            instances * _each("cloudflare.request"),  # + CPU ms: not measurable here
            MILLION * _each("cloudflare.request"),
        ),
        (
            "AWS Step Functions Standard",
            steps * _each("stepfunctions.standard_transition"),
            2 * MILLION * _each("stepfunctions.standard_transition"),  # Wait + Succeed
        ),
        (
            "AWS Lambda durable functions",
            (steps + instances) * _each("lambda_durable.operation"),  # steps + each start
            2 * MILLION * _each("lambda_durable.operation"),  # start + the wait
        ),
    ]
    print("\nbeside the others, at their published prices (bench/prices.py):")
    print(f"  {'':<44} {'1M steps':>12} {'1M sleeping days':>18}")
    for name, a, b in rows:
        print(f"  {name:<44} {_usd(a):>12} {_usd(b):>18}")
    print(
        "  (the others: orchestration charges only. Cloudflare's CPU time, Step Functions'\n"
        "  and durable functions' Lambda compute, durable functions' data written and\n"
        "  retained (no published price found) are not in their rows.)"
    )


if __name__ == "__main__":
    main()
