"""What lifecycle events cost per million transitions (LifecycleEventsFunction, docs/events.md).

Two workloads run through the real runtime on moto, with the deployed runner's pacing and the
table's stream on, as template.yaml declares it: instances of ten 1 KB steps (queued, started,
complete) and instances sleeping a day (queued, started, waiting, started, complete). The
stream's records are filtered as the event source mapping's FilterCriteria filter them
(instance items' inserts and changes; with step events, the step outcomes inserted in
journals), and handed to the real handler:

- one record an invocation (a quiet stack: each write alone in its batching window, the most
  invocations a record can cost), and 100 records an invocation (a busy one: BatchSize);
- each invocation timed with :data:`PUT_LATENCY` slept before every PutEvents call (modelled:
  a PutEvents round trip from Lambda), less the time moto spent answering in-process; billed per
  1 ms at the function's 256 MB.

Counted: the records that invoke the function, the events published (one EventBridge custom
event each: every detail is under 64 KB). Not included: CloudWatch logs and metrics, the
consumer's own rules and targets (delivery to a target of the same account is free; see
docs/cost.md). Lambda's reads of the stream cost nothing. Prices: bench/prices.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.prices import price
from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.eventbridge import EventBridgePublisher
from lambda_workflows.aws.runtime import LAMBDA_RUNNER
from lambda_workflows.aws.table_stream import VIEW_TYPE
from lambda_workflows.entrypoints.lifecycle import make_handler
from lambda_workflows.local.embedded import LambdaContext
from lambda_workflows.testing import WorkflowTestEnv

PUT_LATENCY = 0.02  # seconds slept before every PutEvents call (modelled, not measured)
FUNCTION_GB = 0.25  # template.yaml: Globals MemorySize 256 (LifecycleEventsFunction)
BATCH = 100  # template.yaml: InstanceChanges BatchSize
INSTANCES = 20  # instances per workload
MILLION = 1_000_000
Record = dict[str, Any]


class TenSteps(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for i in range(10):
            await step.do(f"step {i}", lambda: "r" * 1000)


class Nap(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", "1 day")


def stream_records(workflow: type[WorkflowEntrypoint]) -> list[Record]:
    """Every record of the table's stream while ``INSTANCES`` instances run to their end."""
    with WorkflowTestEnv({"w": workflow}, backend="aws", settings=LAMBDA_RUNNER) as env:
        session, table = env.aws.session, env.aws.settings.table_name
        dynamodb, streams = session.client("dynamodb"), session.client("dynamodbstreams")
        spec = {"StreamEnabled": True, "StreamViewType": VIEW_TYPE}
        dynamodb.update_table(TableName=table, StreamSpecification=spec)
        for i in range(INSTANCES):
            env.create("w", id=f"i-{i}")
        env.run_until_idle()
        arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        return list(streams.get_records(ShardIterator=iterator, Limit=10_000)["Records"])


def passes_filter(record: Record, steps: bool) -> bool:
    """template.yaml's FilterCriteria of InstanceChanges, on one record."""
    change, name = record["dynamodb"], record["eventName"]
    sk = change["Keys"]["sk"]["S"]
    if sk == "I":
        return name in ("INSERT", "MODIFY")
    kind = change.get("NewImage", {}).get("kind", {}).get("S")
    return steps and name == "INSERT" and sk.startswith("J#") and kind == "step"


@dataclass
class Publishing:
    """What publishing one workload's records took."""

    records: int = 0
    events: int = 0
    invocations: int = 0
    seconds: float = 0.0

    def per_million_events(self) -> dict[str, float]:
        """USD per million events published, by line."""
        scale = MILLION / self.events
        gb_seconds = self.seconds * FUNCTION_GB
        return {
            "events": self.events * scale * price("events.custom_event").each,
            "lambda requests": self.invocations * scale * price("lambda.request").each,
            "lambda duration": gb_seconds * scale * price("lambda.arm64_gb_second").each,
        }


def publish(records: list[Record], batch: int, steps: bool) -> Publishing:
    """Hand the filtered records to the handler, ``batch`` an invocation; time each."""
    with WorkflowTestEnv({}, backend="aws") as env:
        client = env.aws.session.client("events")
        client.create_event_bus(Name="lifecycle")
        done = Publishing()
        moto = _moto_time(client, done)
        handler = make_handler(EventBridgePublisher(client, "lifecycle"), steps=steps)
        chosen = [record for record in records if passes_filter(record, steps)]
        for start in range(0, len(chosen), batch):
            moto[0] = 0.0
            began = time.perf_counter()
            answer = handler({"Records": chosen[start : start + batch]}, LambdaContext("L"))
            assert answer == {"batchItemFailures": []}, answer
            done.seconds += _billed(time.perf_counter() - began - moto[0])
            done.invocations += 1
        done.records = len(chosen)
        return done


def _moto_time(client: Any, done: Publishing) -> list[float]:
    """Hooks that count the events put and sleep PUT_LATENCY before each call; the returned
    cell holds the seconds moto spent answering since it was last zeroed."""
    cell, started = [0.0], [0.0]

    def before(params: dict[str, Any], **_: Any) -> None:
        done.events += len(params["Entries"])
        time.sleep(PUT_LATENCY)
        started[0] = time.perf_counter()

    def after(**_: Any) -> None:
        cell[0] += time.perf_counter() - started[0]

    client.meta.events.register("provide-client-params.events.PutEvents", before)
    client.meta.events.register("after-call.events.PutEvents", after)
    return cell


def _billed(seconds: float) -> float:
    return max(0.001, round(seconds, 3))


def main() -> None:
    workloads: list[tuple[str, Callable[[], list[Record]], bool]] = [
        ("10-step instances", lambda: stream_records(TenSteps), False),
        ("10-step instances, step events", lambda: stream_records(TenSteps), True),
        ("instances sleeping a day", lambda: stream_records(Nap), False),
    ]
    print(f"USD per million events published ({INSTANCES} instances a workload, on moto)")
    print(f"{'workload':34} {'batch':>5} {'records/event':>13} {'events':>7} {'lambda':>7} total")
    for title, records_of, steps in workloads:
        records = records_of()
        for batch in (1, BATCH):
            done = publish(records, batch, steps)
            lines = done.per_million_events()
            lambda_usd = lines["lambda requests"] + lines["lambda duration"]
            print(
                f"{title:34} {batch:>5} {done.records / done.events:>13.2f} "
                f"{lines['events']:>7.2f} {lambda_usd:>7.2f} {sum(lines.values()):.2f}"
            )


if __name__ == "__main__":
    main()
