"""RunnerFunction: advances instances named by work-queue messages.

Triggered by the work queue with ``ReportBatchItemFailures``: each message is one instance to
advance; a message whose instance fails for an infrastructure reason (an InfrastructureError:
throttled, unreachable, outcome unknown) is reported and redelivered, the others succeed. The
lease is taken in the name of the message and of its delivery (its receive count), so the same
message delivered again takes back the lease it held if giving it back failed, while a copy of
one delivery handed to a second runner at the same time is turned away (see
:mod:`lambda_workflows.engine.advance`); and the message comes back after a short backoff
instead of the queue's long visibility timeout. A malformed message is logged and dropped (it
can never succeed, and redelivering it would only park it in the DLQ), and so is a message for
an instance that was deleted (maybe while this invocation advanced it).
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Any, cast

from aws_lambda_powertools.metrics import MetricUnit

from lambda_workflows.aws.runtime import AwsRuntime, get_runtime
from lambda_workflows.aws.sqs import parse_work_message
from lambda_workflows.engine.advance import AdvanceResult
from lambda_workflows.engine.errors import InfrastructureError, InstanceNotFound, InvalidInput
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
    log = logger()
    try:
        ref = parse_work_message(record.body)
    except InvalidInput as exc:
        log.error("dropping malformed work message", extra={"error": str(exc)})
        return None
    log.append_keys(workflow=ref.workflow, instance_id=ref.id)
    try:
        remaining = remaining_seconds()
        clock = (lambda: remaining_seconds() or 0.0) if remaining is not None else None
        result = asyncio.run(
            runtime.runner.advance(
                ref, clock, owner=record.message_id, delivery=record.receive_count
            )
        )
    except InstanceNotFound:
        # deleted (maybe while this invocation advanced it): nothing is left to do, and
        # nothing it wrote since is ever read
        log.info("instance was deleted; nothing to advance")
        return None
    except InfrastructureError as exc:
        log.warning("giving the work back for later", extra={"error": str(exc)})
        runtime.queue.retry_later(record.receipt_handle, _backoff(record))
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
    """The Lambda entry point (SQS event, partial batch response), on ``runtime``."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        token = _CONTEXT.set(context)
        try:
            return _handle(event, context, runtime_of(runtime))
        finally:
            _CONTEXT.reset(token)

    return handler


def _handle(event: dict[str, Any], context: Any, runtime: AwsRuntime) -> dict[str, Any]:
    @metrics().log_metrics
    def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # a batch whose every message failed is still a partial batch response (each
        # message comes back after its own backoff), not an invocation error
        return partial_batch_response(event, lambda record: record_handler(record, runtime))

    return cast(dict[str, Any], run(event, context))


handler = make_handler(get_runtime)
