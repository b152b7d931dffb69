"""SweepFunction: the recovery sweep, run on a schedule (every 5 minutes).

Re-enqueues runnable instances that nobody is advancing: an instance whose first work message
was lost (the process died between the create write and the send), or whose runner died and
whose lease expired. The lease makes a duplicate wake-up harmless, so the sweep can be
generous. (DynamoDB Streams would catch the first case sooner, at the cost of a stream and a
function per table write; a periodic sweep also catches dead runners, so it is the one
mechanism.)
"""

from __future__ import annotations

from typing import Any, cast

from aws_lambda_powertools.metrics import MetricUnit

from workflows.aws.runtime import get_runtime
from workflows.observability import logger, metrics
from workflows.registry import load_workflows

load_workflows()  # a bad WORKFLOWS entry fails the cold start, naming it

GRACE_SECONDS = 120.0  # leave just-created instances to their own first message


def sweep() -> int:
    """Re-enqueue stale instances; return how many."""
    runtime = get_runtime()
    stale = runtime.store.stale(
        list(runtime.workflows), runtime.clock.time(), GRACE_SECONDS, limit=1000
    )
    runtime.queue.send_many([record.ref for record in stale])
    return len(stale)


def handler(event: dict[str, Any], context: Any) -> dict[str, int]:
    """The Lambda entry point (EventBridge schedule)."""

    @metrics().log_metrics
    def run(event: dict[str, Any], context: Any) -> dict[str, int]:
        count = sweep()
        if count:
            metrics().add_metric(name="InstancesRecovered", unit=MetricUnit.Count, value=count)
        logger().info("recovery sweep", extra={"requeued": count})
        return {"requeued": count}

    return cast(dict[str, int], run(event, context))
