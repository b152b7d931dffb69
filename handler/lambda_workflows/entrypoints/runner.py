"""RunnerFunction: advances instances named by work-queue messages and by wake-up schedules.

Triggered by the work queue with ``ReportBatchItemFailures``: each message is one instance to
advance; a message whose instance fails for an infrastructure reason (an InfrastructureError:
throttled, unreachable, outcome unknown) is reported and redelivered, the others succeed. The lease
is taken in the name of the message and of its delivery (its receive count), so the same message
delivered again takes back the lease it held if giving it back failed, while a copy of one delivery
handed to a second runner at the same time is turned away (see
:mod:`lambda_workflows.engine.instances.advance`); and the message comes back after a short backoff
instead of the queue's long visibility timeout. A malformed message is logged and dropped (it can
never succeed, and redelivering it would only park it in the DLQ), and so is a message for an
instance that was deleted (maybe while this invocation advanced it).

A wake-up schedule invokes the function directly, its input as the event (see
:mod:`lambda_workflows.aws.wake_events`): the lease is taken in the wake-up's name
(``<aws.scheduler.execution-id>``) and attempt; an infrastructure failure fails the invocation,
so Lambda retries it, then sends it to the work queue (the function's OnFailure destination),
whose messages this handler unwraps. Work due now (a new instance, an event, a runner handing an
instance on) invokes the function the same way (:mod:`lambda_workflows.aws.runner_invoke`). The
first invocation tells the wake-ups and that direct work which function to target: this one
(``invoked_function_arn``).
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Any, cast

from aws_lambda_powertools.metrics import MetricUnit

from lambda_workflows.aws.runtime import AwsRuntime, get_runtime
from lambda_workflows.aws.wake_events import (
    LeaseHeldByThisWakeUp,
    WakeDelivery,
    direct_wake_up,
    is_direct_wake_up,
    queued_work,
)
from lambda_workflows.engine.errors import InfrastructureError, InstanceNotFound, InvalidInput
from lambda_workflows.engine.instances.advance import AdvanceResult
from lambda_workflows.observability import logger, metrics
from lambda_workflows.registry import load_workflows

from ._batch import SqsRecord, partial_batch_response
from ._wiring import LambdaHandler, RuntimeSource, runtime_of

load_workflows()  # a bad WORKFLOWS entry fails the cold start, naming it

_CONTEXT: ContextVar[Any] = ContextVar("lambda_context", default=None)


def remaining_seconds() -> float | None:
    """Seconds left in this invocation (None outside Lambda)."""
    context = _CONTEXT.get()
    if context is None or not hasattr(context, "get_remaining_time_in_millis"):
        return None
    return float(context.get_remaining_time_in_millis()) / 1000.0


def record_handler(record: SqsRecord, runtime: AwsRuntime) -> AdvanceResult | None:
    """Advance the instance named by one work message."""
    try:
        work = queued_work(record.body, record.message_id, record.receive_count)
    except InvalidInput as exc:
        logger().error("dropping malformed work message", extra={"error": str(exc)})
        return None
    try:
        return _advance(work, runtime)
    except InfrastructureError:
        runtime.queue.retry_later(record.receipt_handle, _backoff(record))
        raise


def wake_up_handler(event: dict[str, Any], runtime: AwsRuntime) -> AdvanceResult | None:
    """Advance the instance a wake-up schedule names (its direct, asynchronous invocation).

    Raises:
        InfrastructureError: the work is given back: Lambda retries the invocation, then
            sends it to the work queue.
        LeaseHeldByThisWakeUp: a retry of this wake-up that died holding the lease; likewise.
    """
    context = _CONTEXT.get()
    try:
        work = direct_wake_up(event, str(getattr(context, "aws_request_id", "") or "wake"))
    except InvalidInput as exc:
        logger().error("dropping malformed wake-up", extra={"error": str(exc)})
        return None
    result = _advance(work, runtime)
    if result is not None and result.skipped and _held_by(work, runtime):
        raise LeaseHeldByThisWakeUp(
            f"the lease of {work.ref} is held by this wake-up's delivery {work.delivery}: "
            "an invocation of it died holding it (or runs now); trying again later"
        )
    return result


def _held_by(work: WakeDelivery, runtime: AwsRuntime) -> bool:
    """True when ``work``'s own delivery holds the instance's lease (one read, on a skip)."""
    try:
        record = runtime.store.get(work.ref)
    except InstanceNotFound:
        return False
    return record.held_by(work.owner, work.delivery)


def _advance(work: WakeDelivery, runtime: AwsRuntime) -> AdvanceResult | None:
    """Advance ``work``'s instance in its delivery's name; None if it was deleted."""
    log = logger()
    ref = work.ref
    log.append_keys(workflow=ref.workflow, instance_id=ref.id)
    try:
        remaining = remaining_seconds()
        clock = (lambda: remaining_seconds() or 0.0) if remaining is not None else None
        result = asyncio.run(
            runtime.runner.advance(ref, clock, owner=work.owner, delivery=work.delivery)
        )
    except InstanceNotFound:
        # deleted (maybe while this invocation advanced it): nothing is left to do, and
        # nothing it wrote since is ever read
        log.info("instance was deleted; nothing to advance")
        return None
    except InfrastructureError as exc:
        log.warning("giving the work back for later", extra={"error": str(exc)})
        raise
    finally:
        log.remove_keys(["workflow", "instance_id"])
    _emit(result)
    log.info(
        "advanced instance",
        extra={
            "workflow": ref.workflow,
            "instance_id": ref.id,
            "status": result.status,
            "steps": result.steps,
            "retries": result.retries,
            "suspended": result.suspended,
            "skipped": result.skipped,
        },
    )
    return result


def _backoff(record: SqsRecord) -> int:
    """Seconds before a failed message comes back: 5 s, doubling per receive, at most 5 min."""
    return int(min(300, 5 * 2 ** max(0, min(record.receive_count - 1, 10))))


def _emit(result: AdvanceResult) -> None:
    m = metrics()
    if result.steps:
        m.add_metric(name="StepsRun", unit=MetricUnit.Count, value=result.steps)
    if result.retries:
        m.add_metric(name="StepRetries", unit=MetricUnit.Count, value=result.retries)
    if result.suspended:
        m.add_metric(name="Suspensions", unit=MetricUnit.Count, value=1)
    if result.status is not None and result.status.finished:
        m.add_metric(
            name=f"Instances{result.status.value.capitalize()}", unit=MetricUnit.Count, value=1
        )


def make_handler(runtime: RuntimeSource) -> LambdaHandler:
    """The Lambda entry point on ``runtime``: an SQS event (answered with a partial batch
    response) or a wake-up schedule's input (answered with the instance's status)."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        token = _CONTEXT.set(context)
        try:
            return _handle(event, context, runtime_of(runtime))
        finally:
            _CONTEXT.reset(token)

    return handler


def _handle(event: dict[str, Any], context: Any, runtime: AwsRuntime) -> dict[str, Any]:
    arn = getattr(context, "invoked_function_arn", None)
    if isinstance(arn, str) and arn:
        runtime.learn_runner_arn(arn)  # wake-ups and work due now invoke this function

    @metrics().log_metrics
    def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if is_direct_wake_up(event):
            result = wake_up_handler(event, runtime)
            status = None if result is None or result.status is None else result.status.value
            return {"status": status}
        # a batch whose every message failed is still a partial batch response (each
        # message comes back after its own backoff), not an invocation error
        return partial_batch_response(event, lambda record: record_handler(record, runtime))

    return cast(dict[str, Any], run(event, context))


handler = make_handler(get_runtime)
