"""The decision after a failed attempt, shared by ``step.do`` and rollbacks (operations.retries):
retry after the delay times the backoff, or fail for good."""

from __future__ import annotations

import asyncio

import pytest

from lambda_workflows.engine.config import StepConfig, parse_config, parse_rollback_config
from lambda_workflows.engine.errors import NonRetryableError
from lambda_workflows.engine.model import ErrorInfo
from lambda_workflows.engine.replay.operations.retries import DELAY_ERROR, Retry, next_retry
from lambda_workflows.engine.step import StepContext, StepIdentity

FAILURE = ErrorInfo("ValueError", "boom")
CONFIGS = [
    pytest.param(lambda raw: parse_config(raw), id="step.do"),
    pytest.param(lambda raw: parse_rollback_config(raw, "charge"), id="rollback"),
]


def decide(config: StepConfig, exc: Exception, attempt: int) -> Retry:
    ctx = StepContext(StepIdentity("charge", 1), attempt, config.to_dict())
    return asyncio.run(next_retry(config, exc, FAILURE, ctx, "step 'charge'"))


@pytest.mark.parametrize("parse", CONFIGS)
def test_a_retryable_failure_within_the_limit_waits_the_delay_times_the_backoff(parse) -> None:
    config = parse({"retries": {"limit": 3, "delay": 2, "backoff": "exponential"}})
    assert decide(config, ValueError("boom"), attempt=3) == Retry(FAILURE, 8.0)


@pytest.mark.parametrize("parse", CONFIGS)
def test_the_attempt_after_the_limit_fails_for_good(parse) -> None:
    config = parse({"retries": {"limit": 3, "delay": 2}})
    assert decide(config, ValueError("boom"), attempt=4) == Retry(FAILURE, None)


@pytest.mark.parametrize("parse", CONFIGS)
def test_a_non_retryable_error_fails_for_good_on_its_first_attempt(parse) -> None:
    config = parse({"retries": {"limit": 3, "delay": 2}})
    assert decide(config, NonRetryableError("no"), attempt=1) == Retry(FAILURE, None)


@pytest.mark.parametrize("parse", CONFIGS)
def test_a_delay_function_that_raises_fails_for_good_with_the_delay_error(parse) -> None:
    def delay(ctx: StepContext, exc: Exception) -> float:
        raise RuntimeError("no delay")

    config = parse({"retries": {"limit": 3, "delay": delay}})
    retry = decide(config, ValueError("boom"), attempt=1)
    assert retry.delay is None
    assert retry.error.name == DELAY_ERROR
    assert "RuntimeError: no delay" in retry.error.message
    assert "after attempt 1 failed with ValueError: boom" in retry.error.message
