"""SweepFunction: the recovery sweep, run on a schedule (every 5 minutes).

Re-enqueues instances that nobody advanced in time (see
:mod:`lambda_workflows.engine.instances.recovery`): an instance whose first work message was lost
(the process died between the create write and the send), whose runner died and whose lease expired,
whose wake-up schedule or delayed message was dropped, dead-lettered or never created, or that was
sent an event whose wake-up was lost. It asks the due-time index, one Query per shard, never a scan.
The lease makes a duplicate wake-up harmless, so the sweep can be generous. (DynamoDB Streams would
catch a lost first message sooner, at the cost of a stream and a function per table write; a
periodic sweep also catches dead runners and lost timers, so it is the one mechanism.)

It also deletes what an instance leaves behind once TTL removed its instance item (its journal,
events and chunks, see :mod:`lambda_workflows.aws.reaper`), from the records of the table's stream
that template.yaml's ExpiredInstances event lets through, a bounded amount per invocation (each
scheduled run goes on with the partitions left parked); it completes the deletes still owed a
cleanup (:mod:`lambda_workflows.aws.deletes`); and it reconciles the workflows' recurring schedules
(``schedules = [...]``) with EventBridge Scheduler (see :mod:`lambda_workflows.aws.recurring`, which
says why the sweep and not a CloudFormation custom resource): after a deploy, within one run. A
failed Scheduler call is logged and retried by the next run; it never stops the recovery. And it
starts the firings of those schedules that never started their instance (a delivery Scheduler gave
up on, a trigger message dead-lettered), exactly once each (see
:mod:`lambda_workflows.engine.instances.firing_recovery`).
"""

from __future__ import annotations

import os
from typing import Any, cast

from aws_lambda_powertools.metrics import MetricUnit

from lambda_workflows.aws.reaper import (
    REAP_BUDGET,
    ExpiredInstanceReaper,
    cut_of,
    expired_instance,
)
from lambda_workflows.aws.recurring import RecurringSchedules
from lambda_workflows.aws.runtime import AwsRuntime, get_runtime
from lambda_workflows.engine.errors import InfrastructureError
from lambda_workflows.engine.instances.recovery import QUEUE_GRACE, SWEEP_MARGIN
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.observability import logger, metrics
from lambda_workflows.registry import load_workflows

from ._wiring import LambdaHandler, RuntimeSource, runtime_of

load_workflows()  # a bad WORKFLOWS entry fails the cold start, naming it

GRACE_SECONDS = QUEUE_GRACE + SWEEP_MARGIN  # a just-created instance is left to its message
SWEEP_LIMIT = 1000  # instances re-enqueued per run at most; the next run takes the rest


def make_handler(runtime: RuntimeSource, trigger_queue_arn: str | None = None) -> LambdaHandler:
    """The Lambda entry point (EventBridge schedule), on ``runtime``.

    Args:
        runtime: the runtime, or what gives it.
        trigger_queue_arn: the target of recurring schedules (default: ``TRIGGER_QUEUE_ARN``,
            which template.yaml sets for SweepFunction).
    """

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        @metrics().log_metrics  # built on the first call: nothing at import time
        def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
            if "Records" in event:  # the table's stream: instance items TTL removed
                return reap_expired(runtime_of(runtime), event["Records"])
            # Every run uses the instance API: imported with this module, at init (Lambda
            # gives init its full CPU), though the runtime builds it on first use
            service: InstanceService = runtime_of(runtime).service
            count = service.recover(SWEEP_LIMIT)
            if count:
                metrics().add_metric(name="InstancesRecovered", unit=MetricUnit.Count, value=count)
            answer: dict[str, Any] = {"requeued": count}
            if reaped := resume_reaping(runtime_of(runtime)):
                answer["reaped"] = reaped
            schedules = reconcile_schedules(runtime_of(runtime), trigger_queue_arn)
            if schedules is not None:
                answer["schedules"] = schedules
            firings = recover_firings(runtime_of(runtime))
            if firings is not None:
                answer["firings"] = firings
            logger().info("recovery sweep", extra=answer)
            return answer

        return cast(dict[str, Any], run(event, context))

    return handler


def reap_expired(runtime: AwsRuntime, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Delete what each expired instance left behind, :data:`REAP_BUDGET` deletes at most in
    all: a partition not done by then is parked for the scheduled sweeps. The records neither
    done nor parked are reported as batch item failures (by sequence number), for the event
    source mapping to retry."""
    reaper = ExpiredInstanceReaper(runtime.store.client, runtime.settings.table_name)
    failures: list[dict[str, str]] = []
    deleted = 0
    for record in records:
        expired = expired_instance(record)
        if expired is None:
            continue
        pk, cut = expired[0], cut_of(expired[1])
        try:
            turn = reaper.reap_some(pk, cut, budget=REAP_BUDGET - deleted)
            deleted += turn.deleted
            if turn.after is not None:
                reaper.park(pk, cut, turn.after, runtime.clock.time())
        except InfrastructureError as exc:  # AWS said no: retried by the event source mapping
            logger().warning(
                "reaping an expired instance failed", extra={"pk": pk, "error": repr(exc)}
            )
            failures.append({"itemIdentifier": str(record["dynamodb"]["SequenceNumber"])})
    if deleted:
        metrics().add_metric(name="ExpiredItemsDeleted", unit=MetricUnit.Count, value=deleted)
    if failures:
        metrics().add_metric(name="ReapFailures", unit=MetricUnit.Count, value=len(failures))
    return {"batchItemFailures": failures}


def resume_reaping(runtime: AwsRuntime) -> int:
    """Go on with the partitions earlier invocations parked (see
    :mod:`lambda_workflows.aws.reaper`); how many items were deleted. A failure is logged:
    what is not done stays parked for the next run."""
    reaper = ExpiredInstanceReaper(runtime.store.client, runtime.settings.table_name)
    try:
        deleted = reaper.resume(runtime.clock.time(), REAP_BUDGET)
    except InfrastructureError as exc:
        logger().warning("parked reaping failed; the next run goes on", extra={"error": repr(exc)})
        return 0
    if deleted:
        metrics().add_metric(name="ExpiredItemsDeleted", unit=MetricUnit.Count, value=deleted)
    return deleted


def reconcile_schedules(
    runtime: AwsRuntime, trigger_queue_arn: str | None
) -> dict[str, int] | None:
    """Bring the group's recurring schedules in line with the registered workflows; the
    counts of what was created, deleted, kept and failed (None: no target is configured)."""
    target = trigger_queue_arn or os.environ.get("TRIGGER_QUEUE_ARN", "")
    if not target:
        logger().warning("TRIGGER_QUEUE_ARN is not set: recurring schedules are not reconciled")
        return None
    recurring = RecurringSchedules(
        runtime.wakeups.client,
        runtime.settings.schedule_group,
        target,
        runtime.settings.scheduler_role_arn,
        runtime.clock,
    )
    done = recurring.reconcile(runtime.workflows)
    if done.failed:
        metrics().add_metric(
            name="ScheduleReconcileFailures", unit=MetricUnit.Count, value=len(done.failed)
        )
    return done.summary()


def recover_firings(runtime: AwsRuntime) -> dict[str, int] | None:
    """Start the firings of recurring schedules that started no instance (see
    :mod:`lambda_workflows.engine.instances.firing_recovery`): the counts started and failed (None
    when no workflow declares schedules). Runs whether or not any does, so that the ledger forgets
    the schedules removed. An AWS error is logged and counted, never raised: the next run goes
    on from the watermarks."""
    from lambda_workflows.engine.instances.firing_recovery import FiringRecovery, declared_series

    retention = runtime.settings.retention_days * 86_400
    firings = FiringRecovery(runtime.workflows, runtime.schedule_store, runtime.service, retention)
    try:
        counts = firings.recover(runtime.clock.time()).summary()
    except InfrastructureError as exc:
        logger().warning(
            "recovering lost firings failed; the next sweep retries", extra={"error": repr(exc)}
        )
        counts = {"started": 0, "failed": 1}
    if counts["started"]:
        metrics().add_metric(
            name="FiringsRecovered", unit=MetricUnit.Count, value=counts["started"]
        )
    if counts["failed"]:
        metrics().add_metric(
            name="FiringRecoveryFailures", unit=MetricUnit.Count, value=counts["failed"]
        )
    return counts if declared_series(runtime.workflows) else None


handler = make_handler(get_runtime)
