"""What a million steps, a million sleeping instance-days and a million instances waiting an hour
for an event cost, from counted usage.

A real workflow runs through the real runtime on moto (the RunnerFunction handler, DynamoStore,
SQS, EventBridge Scheduler adapters) with the deployed runner's pacing. Botocore hooks on the
runtime's clients count every AWS call and read its parameters and answer
(bench/cost_meter.py):

- DynamoDB write units from the size of each item written (1 KB a unit; 2 in a transaction;
  an update costs the larger of the item before and after), plus the index writes it causes
  (by_status and by_workflow project the whole instance item, by_due its keys: an index entry
  whose key changes is a delete and a put); read units from the size of what each read returns
  (4 KB a unit, strongly consistent).
- Lambda duration: each runner invocation is timed with 5 ms slept before every AWS call (as
  bench/latency_bench.py), minus the time moto itself spent answering in-process, which a real
  deployment does not pay; billed per 1 ms at the RunnerFunction's MemorySize (template.yaml).

What no hook can see is modelled, and said so: the SQS event source receives and deletes each
work message (2 requests, BatchSize 1); work due now (a creation, an event's wake-up) is an
asynchronous invoke of the runner (lambda_workflows.aws.runner_invoke): the runner's Lambda
request and no SQS request (the hook counts the Invoke; it is the invocation's request, not a
charge of its own); a wake-up schedule's firing is a Scheduler invocation and the runner's
Lambda request (its target is the RunnerFunction, asynchronous invoke: no SQS request), and one
made before that upgrade, still targeting the work queue, a SendMessage too; an instance is
created (and an event sent to it) through API Gateway and the ApiFunction (at its MemorySize;
its duration is the instance API's call, timed the same way), each request billed at the
price of the API template.yaml deploys by default (ApiType).
Prices: bench/prices.py.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.cost_meter import LATENCY, Meter
from bench.prices import price
from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.items import INSTANCE_SK
from lambda_workflows.aws.reaper import ExpiredInstanceReaper
from lambda_workflows.aws.runner_invoke import EXECUTION_PREFIX
from lambda_workflows.aws.runtime import LAMBDA_RUNNER
from lambda_workflows.aws.settings import RETENTION_DAYS
from lambda_workflows.infra.template import load_template
from lambda_workflows.testing import WorkflowTestEnv


def function_gb(function: str, template: dict[str, Any] | None = None) -> float:
    """The memory a function of template.yaml is billed at, in GB: its own ``MemorySize``, or
    the ``Globals`` one."""
    found = template or load_template()
    own = found["Resources"][function]["Properties"].get("MemorySize")
    return int(own or found["Globals"]["Function"]["MemorySize"]) / 1024


RUNNER_GB = function_gb("RunnerFunction")
API_GB = function_gb("ApiFunction")
SWEEP_GB = function_gb("SweepFunction")  # which reaps
REAP_BATCH = 100  # template.yaml: ExpiredInstances BatchSize (stream records an invocation)
STEPS = 100  # steps per instance of the step benchmark
RUNS = 3  # instances measured per scenario (their mean counts)
RESULT = "r" * 1000  # a step's result: about 1 KB of JSON
MILLION = 1_000_000
DAYS_PER_MONTH = 365.25 / 12


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


class Approval(WorkflowEntrypoint):
    """Waits for an approval (a day at most), then ends."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.wait_for_event("approval", type="approved", timeout=APPROVAL_TIMEOUT)


APPROVAL_TIMEOUT = "1 day"
APPROVED_AFTER = "1 hour"  # when the approval is sent, through the API


def api_price_key(template: dict[str, Any] | None = None) -> str:
    """The price of one request to the API template.yaml deploys by default (ApiType)."""
    parameters = (template or load_template())["Parameters"]
    kind = parameters.get("ApiType", {}).get("Default", "REST")
    return "apigateway.http_request" if kind == "HTTP" else "apigateway.rest_request"


@dataclass
class Run:
    """What one instance used, from creation to its end."""

    meter: Meter
    invocations: list[float] = field(default_factory=list)  # billed seconds of each
    direct: int = 0  # of them, invoked by a wake-up schedule (no SQS message)
    direct_work: int = 0  # of them, work due now invoked directly (no SQS message)
    api_calls: list[float] = field(default_factory=list)  # billed seconds of each API request
    reap_seconds: float = 0.0  # the reaper's work once the instance item expired


def billed(seconds: float) -> float:
    """Lambda bills duration per millisecond, rounded up."""
    return math.ceil(seconds * 1000) / 1000


def measure(
    workflow: type[WorkflowEntrypoint], instance_id: str, *, approved_after: str | None = None
) -> Run:
    """Run one instance of ``workflow`` to its end and meter it.

    With ``approved_after``, the instance waits for an approval sent through the API that long
    after it was created; then its wait's timeout passes too (its schedule was deleted when the
    event came: nothing fires).
    """
    with WorkflowTestEnv({"w": workflow}, backend="aws", settings=LAMBDA_RUNNER) as env:
        aws = env.aws
        meter = Meter(aws.session.client("dynamodb"), aws.settings.table_name)
        meter.attach(aws.runtime)
        run = Run(meter)
        _time_the_runner(aws, run)

        def through_the_api(call: Callable[[], Any]) -> None:
            start = meter.spent()
            call()
            run.api_calls.append(billed(meter.spent() - start))

        through_the_api(lambda: env.create("w", id=instance_id))
        env.run_until_idle()
        if approved_after is not None:
            env.clock.advance(approved_after)
            instance = env.get("w", instance_id)
            through_the_api(lambda: instance.send_event(type="approved", payload={"by": "ana"}))
            env.run_until_idle()
            env.clock.advance(APPROVAL_TIMEOUT)  # a day on: the timeout's schedule is gone
            env.run_until_idle()
        meter.counting = False
        assert env.get("w", instance_id).status().status == "complete"
        _reap(aws, run, instance_id)
        return run


def _time_the_runner(aws: Any, run: Run) -> None:
    """Time each invocation of the real RunnerFunction handler."""
    handler = aws._runner_handler

    def timed(event: Any, context: Any) -> Any:
        if "Records" not in event:  # a direct invocation: work due now, or a wake-up's
            execution = str(event.get("wake", {}).get("execution", ""))
            if execution.startswith(EXECUTION_PREFIX):
                run.direct_work += 1
            else:
                run.direct += 1
        start = run.meter.spent()
        try:
            return handler(event, context)
        finally:
            run.invocations.append(billed(run.meter.spent() - start))

    aws._runner_handler = timed


def _reap(aws: Any, run: Run, instance_id: str) -> None:
    """RetentionDays later TTL removes the instance item, and SweepFunction's reaper deletes
    what the instance left (lambda_workflows.aws.reaper): metered apart."""
    meter = run.meter
    key = {"pk": {"S": f"I#w#{instance_id}"}, "sk": {"S": INSTANCE_SK}}
    table = aws.settings.table_name
    expired = meter.peek.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
    meter.peek.delete_item(TableName=table, Key=key)
    meter.counting = meter.reaping = True
    start = meter.spent()
    reaper = ExpiredInstanceReaper(aws.runtime.store.client, table)
    reaper.reap(key["pk"]["S"], float(expired["expires_at"]["N"]))
    run.reap_seconds = billed(meter.spent() - start)
    meter.counting = meter.reaping = False


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
    direct = sum(r.direct for r in runs) / n  # wake-up schedules' invocations: no message
    direct_work = sum(r.direct_work for r in runs) / n  # work due now invoked: no message
    runner_seconds = sum(sum(r.invocations) for r in runs) / n
    api_requests = sum(len(r.api_calls) for r in runs) / n
    api_seconds = sum(sum(r.api_calls) for r in runs) / n
    # a schedule fires unless it was deleted before it was due
    schedules = mean.get("scheduler.CreateSchedule", 0.0) - mean.get("scheduler.DeleteSchedule", 0)
    usage = {
        "write units": sum(r.meter.write_units for r in runs) / n,
        "index write units": sum(r.meter.index_write_units for r in runs) / n,
        "read units": sum(r.meter.read_units for r in runs) / n,
        "API requests": api_requests,
        "runner invocations": invocations,
        "runner seconds": runner_seconds,
        "SQS requests": sum(v for k, v in mean.items() if k.startswith("sqs.")),
        "schedules": schedules,
        "direct wake-ups": direct,
        "direct work": direct_work,
    }
    b = Bill()
    b.add(
        "DynamoDB writes",
        (usage["write units"] + usage["index write units"]) * _each("dynamodb.write_request_unit"),
    )
    b.add("DynamoDB reads", usage["read units"] * _each("dynamodb.read_request_unit"))
    b.add("Lambda requests", (invocations + api_requests) * _each("lambda.request"))
    gb_seconds = runner_seconds * RUNNER_GB + api_seconds * API_GB
    b.add("Lambda duration", gb_seconds * _each("lambda.arm64_gb_second"))
    # counted sends, plus (modelled) the event source's receive and delete of each message
    # it delivered, and the scheduler's send for a schedule that targets the queue (one made
    # before the direct wake-up); a schedule targeting the runner, and work invoked directly,
    # cost no SQS request
    queued = invocations - direct - direct_work
    sqs = usage["SQS requests"] + 2 * queued + max(0.0, schedules - direct)
    b.add("SQS requests", sqs * _each("sqs.request"))
    b.add("Scheduler invocations", schedules * _each("scheduler.invocation"))
    b.add("API Gateway requests", api_requests * _each(api_price_key()))
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
    approvals = [
        measure(Approval, f"approval-{i}", approved_after=APPROVED_AFTER) for i in range(RUNS)
    ]
    per_steps, steps_usage = bill(steps)
    per_nap, nap_usage = bill(naps, sleep_days=1.0)
    per_approval, approval_usage = bill(approvals, sleep_days=1 / 24)
    instances = MILLION / STEPS
    api = "an HTTP API" if api_price_key() == "apigateway.http_request" else "a REST API"
    print(f"ours: counted on moto, {LATENCY * 1000:.0f} ms before every AWS call, us-east-1,")
    print(f"every request through {api} (template.yaml's ApiType)")
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
    report(
        "1,000,000 instances waiting for an event (created, wait_for_event with a 1-day\n"
        "timeout, the event sent through the API an hour later, end)",
        per_approval,
        approval_usage,
        MILLION,
    )
    compare(per_steps.total * instances, per_nap.total * MILLION, per_approval.total * MILLION)


def report(title: str, per: Bill, usage: dict[str, float], times: float) -> None:
    kept = usage.pop("retention USD") * times
    print(f"\n{title}: ${per.total * times:,.2f}")
    shown = ", ".join(f"{name} {value:,.3g}" for name, value in usage.items())
    print(f"  per instance: {shown}")
    for line, amount in per.lines.items():
        print(f"  {line:<24} ${amount * times:>10,.2f}")
    print(f"  then kept {RETENTION_DAYS:.0f} days after the end (RetentionDays) and deleted:")
    print(f"  ${kept:,.2f} of DynamoDB storage and the reaper's reads and deletes")


def peers() -> list[tuple[str, float, float, float]]:
    """The three workloads at the other engines' published prices (orchestration only):
    1M steps, 1M sleeping instances, 1M instances waiting for an event."""
    steps, instances = MILLION, MILLION / STEPS
    step, request = _each("cloudflare.step"), _each("cloudflare.request")
    transition = _each("stepfunctions.standard_transition")
    operation = _each("lambda_durable.operation")
    return [
        # a step.do, a sleep and a waitForEvent are a step each
        ("Cloudflare Workflows, per step", steps * step, MILLION * step, MILLION * step),
        # requests: each instance's creation, and the event's send (+ CPU ms: not measured)
        ("Cloudflare Workflows, Workers Standard rows", instances * request,
         MILLION * request, 2 * MILLION * request),
        # a Task per step; a Wait state, or a Task with .waitForTaskToken, and the end
        ("AWS Step Functions Standard", steps * transition, 2 * MILLION * transition,
         2 * MILLION * transition),
        # an operation per step, per wait or callback, and per execution's start
        ("AWS Lambda durable functions", (steps + instances) * operation,
         2 * MILLION * operation, 2 * MILLION * operation),
    ]  # fmt: skip


def compare(ours_steps: float, ours_naps: float, ours_approvals: float) -> None:
    """This project beside the others, for the three workloads."""
    rows = [("this project (above)", ours_steps, ours_naps, ours_approvals), *peers()]
    print("\nbeside the others, at their published prices (bench/prices.py):")
    print(f"  {'':<44} {'1M steps':>12} {'1M sleeping days':>18} {'1M event waits':>16}")
    for name, a, b, c in rows:
        print(f"  {name:<44} {_usd(a):>12} {_usd(b):>18} {_usd(c):>16}")
    print(
        "  (the others: orchestration charges only. Cloudflare's CPU time, Step Functions'\n"
        "  and durable functions' Lambda compute, the call that delivers the event or the\n"
        "  task token, durable functions' data written and retained (no published price\n"
        "  found) are not in their rows.)"
    )


if __name__ == "__main__":
    main()
