"""What a waiting subscriber costs per minute (``GET …/subscribe?wait=20``, docs/cost.md).

A subscriber that has seen every event of an instance that does nothing (it waits for an
event) sends one long poll after another: each is held for its whole ``wait`` (20 s, as the
client, the CLI and the dashboard ask), so three a minute. Each one costs:

- an API Gateway request (the HTTP API, as the template deploys by default);
- a Lambda invocation of ApiFunction (256 MB, arm64) billed for its wall time, which is the
  wait: a waiting Lambda bills every millisecond it waits;
- the reads of the instance while it waits: one strongly consistent Query of its partition
  every second (:data:`~lambda_workflows.engine.instances.subscription.POLL_INTERVAL`), each costing
  one read request unit per 4 KB of the partition (items, journal, events).

Measured here, through the real ApiFunction handler on moto: the DynamoDB calls one long poll
makes (counted with a botocore hook: only Query, no write), and the partition's size, for an
instance of 3 steps and one of 100 steps of 1 KB results. The Lambda's time is the wait plus a
modelled :data:`QUERY_LATENCY` per read (moto's in-process answers are no measure of
DynamoDB's). Prices: bench/prices.py.

Run: ``python -m bench.subscribe_bench`` (a few seconds).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Any

from bench.prices import price
from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.instances.clients import SUBSCRIBE_WAIT
from lambda_workflows.engine.instances.subscription import POLL_INTERVAL
from lambda_workflows.entrypoints import api as api_function
from lambda_workflows.testing import WorkflowTestEnv

FUNCTION_GB = 0.25  # template.yaml: Globals MemorySize 256 (ApiFunction)
QUERY_LATENCY = 0.010  # seconds a Query of a small partition takes from Lambda (modelled)
READ_UNIT_BYTES = 4096  # a strongly consistent read: one unit per 4 KB read
POLLS_PER_MINUTE = 60 / SUBSCRIBE_WAIT


class Waits(WorkflowEntrypoint):
    """``steps`` steps of 1 KB results, then a wait for an approval that does not come."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for i in range(event.payload["steps"]):
            await step.do(f"step {i}", lambda: "r" * 1000)
        await step.wait_for_event("approval", type="approved", timeout="7 days")


@dataclass
class LongPoll:
    """What one long poll of an idle instance did."""

    steps: int
    calls: dict[str, int]
    partition_bytes: int

    @property
    def queries(self) -> int:
        return self.calls.get("Query", 0)

    @property
    def read_units(self) -> int:
        return self.queries * math.ceil(self.partition_bytes / READ_UNIT_BYTES)

    @property
    def seconds(self) -> float:
        return SUBSCRIBE_WAIT + self.queries * QUERY_LATENCY

    def usd_per_minute(self) -> dict[str, float]:
        per_poll = {
            "api": price("apigateway.http_request").each,
            "lambda": price("lambda.request").each
            + self.seconds * FUNCTION_GB * price("lambda.arm64_gb_second").each,
            "dynamodb": self.read_units * price("dynamodb.read_request_unit").each,
        }
        return {key: usd * POLLS_PER_MINUTE for key, usd in per_poll.items()}


def measure(steps: int) -> LongPoll:
    """One long poll (wait=20) of an instance of ``steps`` steps that waits for an event."""
    with WorkflowTestEnv({"w": Waits}, backend="aws") as env:
        assert env.aws is not None
        env.create("w", id="idle", params={"steps": steps})
        env.run_until_idle()
        runtime = dataclasses.replace(env.aws.runtime, poll_pause=lambda seconds: None)
        handler = api_function.make_handler(runtime)
        path = "/workflows/w/instances/idle/subscribe"
        first = json.loads(handler(_event(path, {}), None)["body"])
        calls: dict[str, int] = {}

        def count(model: Any, **_: Any) -> None:
            calls[model.name] = calls.get(model.name, 0) + 1

        runtime.store.client.meta.events.register("after-call", count)
        answer = handler(_event(path, {"cursor": first["cursor"], "wait": "20"}), None)
        assert json.loads(answer["body"])["events"] == [], answer
        return LongPoll(steps, calls, _partition_bytes(env))


def _event(path: str, query: dict[str, str]) -> dict[str, Any]:
    return {
        "httpMethod": "GET",
        "path": path,
        "resource": "/{proxy+}",
        "headers": {"Accept": "application/json"},
        "queryStringParameters": query or None,
        "requestContext": {"stage": "v1", "path": path},
        "body": None,
        "isBase64Encoded": False,
    }


def _partition_bytes(env: WorkflowTestEnv) -> int:
    """The bytes of the instance's partition, as DynamoDB sizes items (moto's own sizing)."""
    from moto.core import DEFAULT_ACCOUNT_ID  # type: ignore[attr-defined]
    from moto.dynamodb.models import dynamodb_backends

    assert env.aws is not None
    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][env.aws.session.region_name]
    table = backend.get_table(env.aws.settings.table_name)
    return sum(item.size() for item in table.all_items())


def main() -> None:
    print(
        f"A waiting subscriber: long polls of {SUBSCRIBE_WAIT:g} s ({POLLS_PER_MINUTE:g} a "
        f"minute), the instance read every {POLL_INTERVAL:g} s"
    )
    print("| instance | calls a poll | KB read a poll | API | Lambda | DynamoDB | per minute |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for steps in (3, 100):
        poll = measure(steps)
        usd = poll.usd_per_minute()
        calls = ", ".join(f"{n} {name}" for name, n in sorted(poll.calls.items()))
        kilobytes = poll.read_units * READ_UNIT_BYTES / 1024
        print(
            f"| {steps} steps | {calls} | {kilobytes:,.0f} | ${usd['api']:.7f} "
            f"| ${usd['lambda']:.7f} | ${usd['dynamodb']:.7f} | ${sum(usd.values()):.7f} |"
        )


if __name__ == "__main__":
    main()
