"""Retries: Cloudflare's defaults, exact backoff delays in virtual time, NonRetryableError."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import (
    NonRetryableError,
    StepFailedError,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
)
from lambda_workflows.engine.config import DEFAULT_CONFIG, RetryConfig, parse_config

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

attempt_times: list[float] = []


def failing_workflow(config: dict[str, Any], fail_until: int) -> type[WorkflowEntrypoint]:
    class Flaky(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            env_clock = event.payload["clock"]

            def attempt(ctx: Any) -> int:
                attempt_times.append(CLOCKS[env_clock].time())
                if ctx.attempt < fail_until:
                    raise ValueError(f"attempt {ctx.attempt} failed")
                return int(ctx.attempt)

            return await step.do("flaky", config, attempt)

    return Flaky


CLOCKS: dict[str, Any] = {}


def run_flaky(
    make_env: EnvFactory, config: dict[str, Any], fail_until: int
) -> tuple[Any, list[float]]:
    attempt_times.clear()
    env = make_env({"flaky": failing_workflow(config, fail_until)})
    CLOCKS["c"] = env.clock
    start = env.clock.time()
    inst = env.create("flaky", id="f", params={"clock": "c"})
    env.run_until_idle()
    return inst.status(), [t - start for t in attempt_times]


@pytest.mark.parametrize(
    ("backoff", "expected"),
    [
        ("constant", [0, 10, 20, 30]),  # delay each time
        ("linear", [0, 10, 30, 60]),  # delay·n after attempt n
        ("exponential", [0, 10, 30, 70]),  # delay·2^(n-1) after attempt n
    ],
)
def test_backoff_delays_are_exact_in_virtual_time(
    backoff: str, expected: list[int], make_env: EnvFactory
) -> None:
    config = {"retries": {"limit": 5, "delay": "10 seconds", "backoff": backoff}}
    status, times = run_flaky(make_env, config, fail_until=4)
    assert status.status == "complete"
    assert status.output == 4
    assert times == expected


def test_exhausted_retries_error_the_instance_with_the_original_name_and_message(
    make_env: EnvFactory,
) -> None:
    status, times = run_flaky(
        make_env, {"retries": {"limit": 2, "delay": 1, "backoff": "constant"}}, 99
    )
    assert len(times) == 3  # limit + 1 attempts
    assert status.status == "errored"
    assert status.error == {"name": "ValueError", "message": "attempt 3 failed"}
    assert status.error.name == "ValueError"


def test_defaults_are_cloudflares(make_env: EnvFactory) -> None:
    assert DEFAULT_CONFIG.retries == RetryConfig(limit=5, delay=10.0, backoff="exponential")
    assert DEFAULT_CONFIG.timeout == 600.0
    status, times = run_flaky(make_env, {}, fail_until=99)
    assert status.status == "errored"
    assert times == [0, 10, 30, 70, 150, 310]  # 6 attempts, exponential from 10 s


class NonRetryable(WorkflowEntrypoint):
    attempts = 0

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def fail() -> None:
            NonRetryable.attempts += 1
            raise NonRetryableError("card declined")

        return await step.do("charge", fail)


def test_non_retryable_error_stops_retries_at_once(make_env: EnvFactory) -> None:
    NonRetryable.attempts = 0
    env = make_env({"nr": NonRetryable})
    inst = env.create("nr", id="n")
    env.run_until_idle()
    assert NonRetryable.attempts == 1
    assert inst.status().error == {"name": "NonRetryableError", "message": "card declined"}


class CatchesFailure(WorkflowEntrypoint):
    runs = 0

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def fail() -> None:
            CatchesFailure.runs += 1
            raise ConnectionError("payment service down")

        try:
            await step.do("charge", {"retries": {"limit": 1, "delay": 5}}, fail)
        except StepFailedError as exc:
            failed = exc.error_name
            handled = await step.do("compensate", lambda: f"refund after {failed}")
            await step.sleep("let it settle", "1 hour")
            return {"handled": handled, "message": exc.message, "attempts": exc.attempts}
        return "unreachable"


def test_exhausted_step_raises_in_run_where_it_can_be_caught_and_replays_the_same(
    make_env: EnvFactory,
) -> None:
    CatchesFailure.runs = 0
    env = make_env({"c": CatchesFailure})
    inst = env.create("c", id="c")
    env.run_until_idle()
    status = inst.status()
    assert status.status == "complete"
    assert status.output == {
        "handled": "refund after ConnectionError",
        "message": "payment service down",
        "attempts": 2,
    }
    # the replay after the sleep raised the recorded failure without calling the callback
    assert CatchesFailure.runs == 2
    assert env.invocations >= 3


class SlowStep(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        import asyncio

        async def slow(ctx: Any) -> int:
            if ctx.attempt == 1:
                await asyncio.sleep(5)
            return int(ctx.attempt)

        return await step.do("slow", {"timeout": 0.05, "retries": {"limit": 1, "delay": 0}}, slow)


def test_an_attempt_past_its_timeout_fails_and_is_retried(make_env: EnvFactory) -> None:
    env = make_env({"slow": SlowStep})
    inst = env.create("slow", id="s")
    env.run_until_idle()
    status = inst.status()
    assert status.output == 2
    assert status.steps[0].attempts == 2


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"retry": {}}, "unknown key(s) 'retry'"),
        ({"retries": {"limits": 3}}, "unknown key(s) 'limits'"),
        ({"retries": {"limit": -1}}, "retries.limit"),
        ({"retries": {"limit": 10_001}}, "retries.limit"),
        ({"retries": {"backoff": "fibonacci"}}, "retries.backoff"),
        ({"retries": {"delay": "soon"}}, "not a duration"),
        ({"timeout": 0}, "greater than zero"),
        ("fast", "step config must be a dict"),
    ],
)
def test_bad_step_config_is_rejected_with_a_clear_message(config: Any, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_config(config)
    assert fragment in str(info.value)


class RaisesItsOwnTimeout(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def call_a_slow_service() -> None:
            raise TimeoutError("the payment service did not answer in 3 s")

        try:
            await step.do("pay", {"retries": {"limit": 0}}, call_a_slow_service)
        except StepFailedError as exc:
            return [exc.error_name, exc.message]
        return None


def test_a_timeout_error_the_callback_raises_itself_is_not_the_steps_timeout(
    make_env: EnvFactory,
) -> None:
    env = make_env({"own": RaisesItsOwnTimeout})
    inst = env.create("own", id="t")
    env.run_until_idle()
    assert inst.status().output == ["TimeoutError", "the payment service did not answer in 3 s"]
