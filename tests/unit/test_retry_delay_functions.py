"""Dynamic retry delays: ``retries.delay`` as a function ``(ctx, error) -> duration``.

The function's result is multiplied by the backoff like a fixed delay, it is evaluated once per
failed attempt that is retried, its result is recorded with the attempt (a replay never calls
it again), and a delay function that fails makes the step fail for good.
"""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import (
    InvalidStepError,
    StepFailedError,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
)
from lambda_workflows.engine.config import RetryConfig, parse_config
from lambda_workflows.engine.model import EntryKind
from lambda_workflows.testing import Crash

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

# What the delay functions and callbacks below saw, reset by each test.
delay_calls: list[tuple[str, int, str, str]] = []
attempts: list[int] = []


def attempt_delays(inst: Any) -> list[float]:
    """The recorded retry delay of each failed attempt: its retry time minus its failure."""
    return [
        (entry.wake_at or 0.0) - entry.at
        for entry in inst.journal()
        if entry.kind is EntryKind.ATTEMPT
    ]


def test_a_delay_of_attempt_times_a_fifth_of_a_second_doubles_into_0_2_0_8_2_4() -> None:
    # GIVEN the default (exponential) backoff and a delay function returning attempt × 0.2 s
    retries = parse_config({"retries": {"delay": lambda ctx, error: ctx.attempt * 0.2}}).retries
    assert retries.backoff == "exponential"
    # THEN the gaps after attempts 1, 2, 3 are exactly 0.2·1, 0.4·2 and 0.6·4 seconds
    assert [retries.delay_before(n, n * 0.2) for n in (1, 2, 3)] == [0.2, 0.8, 2.4]


def test_a_delay_function_needs_its_computed_delay() -> None:
    with pytest.raises(ValueError, match="computed per attempt"):
        RetryConfig(delay=lambda ctx, error: 1).delay_before(1)


class FifthOfASecond(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def delay(ctx: Any, error: Exception) -> float:
            delay_calls.append((ctx.step.name, ctx.attempt, type(error).__name__, str(error)))
            return float(ctx.attempt * 0.2)

        def flaky(ctx: Any) -> int:
            attempts.append(ctx.attempt)
            if ctx.attempt < 4:
                raise ConnectionError(f"attempt {ctx.attempt} failed")
            return int(ctx.attempt)

        return await step.do("flaky", {"retries": {"limit": 5, "delay": delay}}, flaky)


def test_gaps_follow_the_delay_function_times_the_exponential_backoff(
    make_env: EnvFactory,
) -> None:
    # GIVEN a step failing three times, retried after attempt × 0.2 s (exponential backoff)
    delay_calls.clear()
    attempts.clear()
    env = make_env({"fifth": FifthOfASecond})
    inst = env.create("fifth", id="f")
    # WHEN it runs
    env.run_until_idle()
    # THEN it completes on attempt 4, after recorded gaps of 0.2, 0.8 and 2.4 seconds
    assert inst.status().output == 4
    assert attempts == [1, 2, 3, 4]
    assert attempt_delays(inst) == pytest.approx([0.2, 0.8, 2.4], abs=1e-6)
    # AND the function saw each failed attempt's context and exception, once each
    assert delay_calls == [
        ("flaky", 1, "ConnectionError", "attempt 1 failed"),
        ("flaky", 2, "ConnectionError", "attempt 2 failed"),
        ("flaky", 3, "ConnectionError", "attempt 3 failed"),
    ]


class ConstantFromTheError(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def retry_after(ctx: Any, error: Exception) -> str:  # async works too
            return str(error)  # the service says how long to back off

        def throttled(ctx: Any) -> str:
            if ctx.attempt == 1:
                raise RuntimeError("90 seconds")
            if ctx.attempt == 2:
                raise RuntimeError("2 minutes")
            return "done"

        config = {"retries": {"limit": 2, "delay": retry_after, "backoff": "constant"}}
        return await step.do("call", config, throttled)


def test_an_async_delay_function_can_read_the_delay_from_the_error(make_env: EnvFactory) -> None:
    env = make_env({"c": ConstantFromTheError})
    inst = env.create("c", id="c")
    env.run_until_idle()
    assert inst.status().output == "done"
    assert attempt_delays(inst) == pytest.approx([90.0, 120.0], abs=1e-6)


class DelayFails(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def delay(ctx: Any, error: Exception) -> Any:
            delay_calls.append((ctx.step.name, ctx.attempt, type(error).__name__, str(error)))
            return {"seconds": 5}["minutes"]  # a bug in the delay function

        def charge() -> str:
            attempts.append(1)
            raise ConnectionError("bank unreachable")

        try:
            await step.do("charge", {"retries": {"limit": 5, "delay": delay}}, charge)
        except StepFailedError as exc:
            return {"error": exc.error_name, "attempts": exc.attempts, "message": exc.message}
        return "unreachable"


def test_a_delay_function_that_raises_fails_the_step_at_once(make_env: EnvFactory) -> None:
    # GIVEN a retried step whose delay function raises KeyError
    delay_calls.clear()
    attempts.clear()
    env = make_env({"d": DelayFails})
    inst = env.create("d", id="d")
    # WHEN its first attempt fails
    env.run_until_idle()
    # THEN the step failed for good after one attempt, with no retry scheduled
    assert attempts == [1]
    assert len(delay_calls) == 1
    assert attempt_delays(inst) == []
    status = inst.status()
    assert status.steps[0].status == "errored"
    assert status.steps[0].attempts == 1
    # AND the error is Cloudflare's NonRetryableDelayError, whose message names the delay
    # function's exception and message and the attempt's failure
    output = status.output
    assert output["error"] == "NonRetryableDelayError"
    assert "raised KeyError: 'minutes'" in output["message"]
    assert output["attempts"] == 1
    assert "retries.delay function of step 'charge' raised KeyError" in output["message"]
    assert "ConnectionError: bank unreachable" in output["message"]
    assert status.steps[0].error is not None
    assert status.steps[0].error.name == "NonRetryableDelayError"


class DelayNotADuration(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def fail() -> None:
            raise ValueError("nope")

        await step.do("s", {"retries": {"delay": lambda ctx, error: "soon"}}, fail)


def test_a_delay_function_returning_no_duration_fails_the_step_at_once(
    make_env: EnvFactory,
) -> None:
    env = make_env({"n": DelayNotADuration})
    inst = env.create("n", id="n")
    env.run_until_idle()
    status = inst.status()
    assert status.status == "errored"
    assert status.steps[0].attempts == 1
    assert status.error is not None
    assert status.error.name == "NonRetryableDelayError"
    assert "raised InvalidStepError" in status.error.message
    assert "'soon' is not a duration" in status.error.message


class CrashAfterARetry(WorkflowEntrypoint):
    crashed = False

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def delay(ctx: Any, error: Exception) -> str:
            delay_calls.append((ctx.step.name, ctx.attempt, type(error).__name__, str(error)))
            return "1 hour"

        def charge(ctx: Any) -> str:
            attempts.append(ctx.attempt)
            if ctx.attempt == 1:
                raise ConnectionError("bank down")
            if not CrashAfterARetry.crashed:
                CrashAfterARetry.crashed = True
                raise Crash()  # the invocation dies during attempt 2
            return "charged"

        charged = await step.do("charge", {"retries": {"limit": 3, "delay": delay}}, charge)
        await step.sleep("settle", "1 day")
        return charged


def test_a_replay_never_calls_the_delay_function_again(make_env: EnvFactory) -> None:
    # GIVEN a step whose first attempt fails (delay function: 1 hour), whose second attempt
    # crashes the invocation once, followed by a sleep (more replays)
    delay_calls.clear()
    attempts.clear()
    CrashAfterARetry.crashed = False
    env = make_env({"c": CrashAfterARetry})
    inst = env.create("c", id="c")
    # WHEN it runs to the end, replaying after the retry delay, the crash and the sleep
    env.run_until_idle()
    # THEN the delay function ran once, for attempt 1: every replay read the recorded delay
    assert inst.status().output == "charged"
    assert env.crashes == 1
    assert env.invocations >= 4
    assert attempts == [1, 2, 2]
    assert delay_calls == [("charge", 1, "ConnectionError", "bank down")]
    assert attempt_delays(inst) == pytest.approx([3600.0], abs=1e-6)


def test_a_callable_delay_is_accepted_by_config_parsing() -> None:
    def delay(ctx: Any, error: Exception) -> str:
        return "1 second"

    config = parse_config({"retries": {"limit": 2, "delay": delay}})
    assert config.retries.delay is delay
    assert config.to_dict()["retries"]["delay"] is delay


@pytest.mark.parametrize("delay", [[10], {"seconds": 10}, None, object()])
def test_a_delay_neither_duration_nor_function_is_an_invalid_step(delay: Any) -> None:
    with pytest.raises(InvalidStepError) as info:
        parse_config({"retries": {"delay": delay}})
    message = str(info.value)
    assert "retries.delay must be a duration" in message
    assert "or a function (ctx, error) -> duration" in message
    assert type(delay).__name__ in message
