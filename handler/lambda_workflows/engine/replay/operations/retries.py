"""Retrying a failed attempt: one decision for ``step.do`` (:mod:`.do`) and for rollbacks
(:mod:`.rollback`), each under its own retry config.

An attempt that failed is retried unless it raised
:class:`~lambda_workflows.engine.errors.NonRetryableError` or used up ``retries.limit``; the next
attempt waits ``retries.delay`` (a duration, or a function of the attempt's context and error)
times the backoff. A delay function that raises, or returns no duration, ends the step (or
rollback) for good with :data:`DELAY_ERROR`, as Cloudflare's engine does.
"""

from __future__ import annotations

from lambda_workflows.engine.config import StepConfig
from lambda_workflows.engine.durations import parse_duration
from lambda_workflows.engine.errors import NonRetryableError, error_message, error_name
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import ErrorInfo
from lambda_workflows.engine.replay.callbacks import call_with_timeout
from lambda_workflows.engine.step import StepContext
from lambda_workflows.engine.tracebacks import user_traceback

__all__ = ["DELAY_ERROR", "Retry", "delay_error", "next_retry", "retry_delay"]

DELAY_ERROR = "NonRetryableDelayError"
"""The name of a step's final error when its delay function raised, as on Cloudflare."""


@immutable
class Retry:
    """What follows a failed attempt: ``error`` is what it records; ``delay`` the seconds until
    the next attempt, or None when there is none (the step or rollback fails for good)."""

    error: ErrorInfo
    delay: float | None


async def next_retry(
    config: StepConfig, exc: Exception, error: ErrorInfo, ctx: StepContext, what: str
) -> Retry:
    """Decide whether the attempt ``ctx.attempt`` of ``what`` (``step 'charge'``, ``the
    rollback of step 'charge'``), which raised ``exc`` (recorded as ``error``), is retried.

    Called while handling ``exc``, so a delay function's own exception chains it."""
    attempt = ctx.attempt
    if isinstance(exc, NonRetryableError) or attempt > config.retries.limit:
        return Retry(error, None)
    label = f"retries.delay function of {what} after attempt {attempt}"
    try:
        return Retry(error, await retry_delay(config, attempt, ctx, exc, label))
    except Exception as delay_exc:
        return Retry(delay_error(delay_exc, what, attempt, error), None)


async def retry_delay(
    config: StepConfig, attempt: int, ctx: StepContext, exc: Exception, label: str
) -> float:
    """Seconds until the attempt after failed ``attempt``: the fixed delay, or the delay
    function's result, times the backoff.

    Raises:
        Exception: whatever the delay function raised, or InvalidStepError for a result
            that is not a duration.
    """
    retries = config.retries
    if not callable(retries.delay):
        return retries.delay_before(attempt)
    # The step's timeout bounds it too: a hung delay function must not hold the pass.
    computed = await call_with_timeout(retries.delay, (ctx, exc), config.timeout, label)
    base = parse_duration(computed, what=f"the result of the {label}")
    return retries.delay_before(attempt, base)


def delay_error(exc: Exception, what: str, attempt: int, failure: ErrorInfo) -> ErrorInfo:
    """The final error of ``what`` (``step 'charge'``) when its delay function failed:
    :data:`DELAY_ERROR`, as Cloudflare names it, whose message keeps the function's own
    exception and message, with its traceback (which chains the attempt's own failure)."""
    return ErrorInfo(
        DELAY_ERROR,
        f"the retries.delay function of {what} raised {error_name(exc)}: "
        f"{error_message(exc)} (after attempt {attempt} failed with {failure.name}: "
        f"{failure.message}); it is not retried. Fix the delay function so that it "
        "returns a duration",
        user_traceback(exc),
    )
