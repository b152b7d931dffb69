"""The test kit's mocks (as Cloudflare's ``introspectWorkflowInstance().modify()``): a test
decides what a step or an event wait of one instance does, on both backends."""

from __future__ import annotations

import asyncio
import warnings
from collections import Counter
from typing import Any

import pytest

from lambda_workflows import (
    NonRetryableError,
    StepFailedError,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
    WorkflowTimeoutError,
)
from lambda_workflows.engine.errors import InvalidStepError
from lambda_workflows.testing import WorkflowTestEnv

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

CALLS: Counter[str] = Counter()  # callback calls, by instance id


@pytest.fixture(autouse=True)
def _no_calls_yet() -> None:
    CALLS.clear()


def charge(instance_id: str) -> Any:
    def callback() -> dict[str, Any]:
        CALLS[instance_id] += 1
        return {"charged": "for real"}

    return callback


class Charge(WorkflowEntrypoint):
    """One step with two retries, 10 s apart; run() reports how the step ended."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        config = {"retries": {"limit": 2, "delay": "10 seconds", "backoff": "constant"}}
        try:
            return await step.do("charge", config, charge(event.instance_id))
        except StepFailedError as exc:
            return {"failed": exc.error_name, "message": exc.message, "attempts": exc.attempts}


class Approval(WorkflowEntrypoint):
    """Waits a day for an approval; run() reports what it received."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        try:
            got = await step.wait_for_event("approval", type="approved", timeout="1 day")
        except WorkflowTimeoutError as exc:
            return {"timed_out": str(exc)}
        return {"approved_by": got.payload["user"]}


def attempts_of(env: WorkflowTestEnv, id: str) -> list[tuple[int, str | None]]:
    """(attempt, error name) of every recorded attempt and outcome of the instance's steps."""
    return [
        (e.attempt, e.error.name if e.error else None)
        for e in env.get("charge", id).journal()
        if e.attempt
    ]


# --- mock_step_result -----------------------------------------------------------------------


def test_a_mocked_result_is_the_steps_result_and_the_callback_is_never_called(
    make_env: EnvFactory,
) -> None:
    # GIVEN a mocked result for one instance, registered by id before it exists
    env = make_env({"charge": Charge})
    env.mock_step_result("mocked", "charge", {"charged": "mock"})
    # WHEN it and an unmocked instance run
    mocked = env.create("charge", id="mocked")
    real = env.create("charge", id="real")
    env.run_until_idle()
    # THEN the mocked instance returns the value without calling the callback; the other calls it
    assert mocked.status().output == {"charged": "mock"}
    assert mocked.status().steps[0].output == {"charged": "mock"}
    assert CALLS["mocked"] == 0
    assert real.status().output == {"charged": "for real"}
    assert CALLS["real"] == 1


def test_a_mocked_result_is_recorded_so_a_replay_returns_it(make_env: EnvFactory) -> None:
    class ChargeThenSleep(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            receipt = await step.do("charge", charge(event.instance_id))
            await step.sleep("cool down", "1 hour")  # run() is replayed after this
            return receipt

    env = make_env({"charge": ChargeThenSleep})
    inst = env.create("charge", id="c")
    env.mock_step_result(inst, "charge", "mocked receipt")
    env.run_until_idle()
    assert inst.status().output == "mocked receipt"
    assert CALLS["c"] == 0
    assert env.invocations >= 2  # the sleep ended one invocation, the replay ran in the next


# --- mock_step_error ------------------------------------------------------------------------


def test_a_mocked_error_fails_every_attempt_with_retries_and_backoff_as_usual(
    make_env: EnvFactory,
) -> None:
    # GIVEN every attempt of the step mocked to raise
    env = make_env({"charge": Charge})
    inst = env.create("charge", id="c")
    env.mock_step_error(inst, "charge", ConnectionError("card network down"))
    start = env.clock.time()
    # WHEN it runs
    env.run_until_idle()
    # THEN the three attempts failed with that error, 10 s apart, and the callback never ran
    assert inst.status().output == {
        "failed": "ConnectionError",
        "message": "card network down",
        "attempts": 3,
    }
    assert attempts_of(env, "c") == [
        (1, "ConnectionError"),
        (2, "ConnectionError"),
        (3, "ConnectionError"),
    ]
    assert env.clock.time() - start == 20.0
    assert CALLS["c"] == 0


def test_a_mocked_error_for_the_first_times_attempts_then_the_callback_runs(
    make_env: EnvFactory,
) -> None:
    env = make_env({"charge": Charge})
    env.mock_step_error("c", "charge", ConnectionError("flaky"), times=2)
    inst = env.create("charge", id="c")
    env.run_until_idle()
    # THEN two attempts failed, the third called the callback once and succeeded
    assert inst.status().output == {"charged": "for real"}
    assert CALLS["c"] == 1
    assert attempts_of(env, "c") == [(1, "ConnectionError"), (2, "ConnectionError"), (3, None)]


def test_a_mocked_non_retryable_error_fails_the_step_at_once(make_env: EnvFactory) -> None:
    env = make_env({"charge": Charge})
    inst = env.create("charge", id="c")
    env.mock_step_error(inst, "charge", NonRetryableError("card declined"))
    env.run_until_idle()
    assert inst.status().output == {
        "failed": "NonRetryableError",
        "message": "card declined",
        "attempts": 1,
    }
    assert CALLS["c"] == 0


# --- force_step_timeout ---------------------------------------------------------------------


class Slow(WorkflowEntrypoint):
    """A step whose callback takes 2 s of real time against a 0.2 s timeout."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def slow() -> str:
            CALLS[event.instance_id] += 1
            if not event.payload.get("fast"):
                await asyncio.sleep(2)
            return "done"

        config = {"retries": {"limit": 1, "delay": "1 second"}, "timeout": 0.2}
        try:
            return await step.do("slow call", config, slow)
        except StepFailedError as exc:
            return {"failed": exc.error_name, "message": exc.message, "attempts": exc.attempts}


def test_a_forced_step_timeout_fails_with_the_engines_timeout_error_without_calling_back(
    make_env: EnvFactory,
) -> None:
    # GIVEN one instance that really times out and one whose timeout is forced
    env = make_env({"slow": Slow})
    real = env.create("slow", id="real")
    forced = env.create("slow", id="forced", params={"fast": True})
    env.force_step_timeout(forced, "slow call")
    # WHEN both run
    env.run_until_idle()
    # THEN the forced one fails exactly as the real one does, and its callback never ran
    expected = real.status().output
    assert expected["failed"] == "WorkflowTimeoutError"
    assert "timed out after 0.2 seconds" in expected["message"]
    assert forced.status().output == expected
    assert CALLS["forced"] == 0
    assert CALLS["real"] == 2


def test_a_forced_step_timeout_for_the_first_times_attempts_then_the_callback_runs(
    make_env: EnvFactory,
) -> None:
    env = make_env({"slow": Slow})
    env.force_step_timeout("s", "slow call", times=1)
    inst = env.create("slow", id="s", params={"fast": True})
    env.run_until_idle()
    assert inst.status().output == "done"
    assert CALLS["s"] == 1


# --- mock_event / force_event_timeout -------------------------------------------------------


def test_a_mocked_event_registered_before_the_instance_exists_is_received(
    make_env: EnvFactory,
) -> None:
    env = make_env({"approval": Approval})
    env.mock_event("a", "approved", {"user": "ana"})
    inst = env.create("approval", id="a")
    env.run_until_idle()
    assert inst.status().output == {"approved_by": "ana"}


def test_a_mocked_event_reaches_an_instance_already_waiting(make_env: EnvFactory) -> None:
    # GIVEN an instance waiting for its approval
    env = make_env({"approval": Approval})
    inst = env.create("approval", id="a")
    env.run_until_idle()
    assert inst.status().status == "waiting"
    # WHEN the event is mocked
    env.mock_event(inst, "approved", {"user": "bo"})
    env.run_until_idle()
    # THEN the wait received it, as if it had been sent, with no time passing
    assert inst.status().output == {"approved_by": "bo"}


def test_a_mocked_event_reaches_an_instance_a_workflow_creates(make_env: EnvFactory) -> None:
    class Parent(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            await step.do("start child", lambda: self.env.workflow("approval").create(id="kid"))

    env = make_env({"parent": Parent, "approval": Approval})
    env.mock_event("kid", "approved", {"user": "cy"}, workflow="approval")
    env.create("parent", id="p")
    env.run_until_idle()
    assert env.get("approval", "kid").status().output == {"approved_by": "cy"}


def test_a_forced_event_timeout_times_the_wait_out_at_once(make_env: EnvFactory) -> None:
    # GIVEN a forced timeout on the wait, and even an approval already sent
    env = make_env({"approval": Approval})
    inst = env.create("approval", id="a")
    env.force_event_timeout(inst, "approval")
    inst.send_event(type="approved", payload={"user": "ana"})
    start = env.clock.time()
    # WHEN it runs
    env.run_until_idle()
    # THEN the wait raised the engine's timeout error without waiting its day
    assert inst.status().output == {
        "timed_out": "step.wait_for_event('approval') timed out: no 'approved' event arrived "
        "within its timeout"
    }
    assert env.clock.time() == start


def test_a_forced_event_timeout_reaches_an_instance_already_waiting(make_env: EnvFactory) -> None:
    env = make_env({"approval": Approval})
    inst = env.create("approval", id="a")
    env.run_until_idle()
    assert inst.status().status == "waiting"
    start = env.clock.time()
    env.force_event_timeout("a", "approval")
    env.run_until_idle()
    assert "timed_out" in inst.status().output
    assert env.clock.time() == start


# --- which instance -------------------------------------------------------------------------


def test_an_id_needs_the_workflow_when_the_env_registers_several(make_env: EnvFactory) -> None:
    env = make_env({"charge": Charge, "approval": Approval})
    with pytest.raises(ValueError, match=r"pass workflow=\"name\""):
        env.mock_step_result("c", "charge", 1)
    env.mock_step_result("c", "charge", "by name", workflow="charge")
    inst = env.create("charge", id="c")
    env.run_until_idle()
    assert inst.status().output == "by name"


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda env: env.mock_step_error("c", "charge", ValueError), TypeError),
        (lambda env: env.mock_step_error("c", "charge", ValueError("x"), times=0), ValueError),
        (lambda env: env.force_step_timeout("c", "", times=None), InvalidStepError),
        (lambda env: env.mock_event("c", "bad type!", {}), InvalidStepError),
        (lambda env: env.mock_step_result("c", "charge", object()), Exception),
    ],
)
def test_a_bad_mock_is_refused_when_registered(
    make_env: EnvFactory, call: Any, error: type[Exception]
) -> None:
    env = make_env({"charge": Charge})
    with pytest.raises(error):
        call(env)


# --- listing, and no noise ------------------------------------------------------------------


def test_test_workflow_list_pages_newest_first_like_the_client(make_env: EnvFactory) -> None:
    # GIVEN five instances created a second apart, two of them finished
    env = make_env({"approval": Approval})
    approvals = env.workflow("approval")
    for n in range(5):
        approvals.create(id=f"a{n}")
        env.clock.advance(1)
    for n in (1, 3):
        env.mock_event(f"a{n}", "approved", {"user": "ana"})
    env.run_until_idle()
    # WHEN the list is read two at a time
    ids: list[str] = []
    page = approvals.list(limit=2)
    while True:
        assert len(page.records) <= 2
        ids += [r.id for r in page.records]
        if page.cursor is None:
            break
        page = approvals.list(cursor=page.cursor, limit=2)
    # THEN every instance comes once, newest first; a status filters
    assert ids == ["a4", "a3", "a2", "a1", "a0"]
    assert [r.id for r in approvals.list(status="complete").records] == ["a3", "a1"]


def test_no_powertools_empty_metrics_warning_over_a_run(
    make_env: EnvFactory, recwarn: pytest.WarningsRecorder
) -> None:
    # GIVEN an invocation that advances nothing: the event sent before the first run wakes
    # an instance the first invocation already finished
    env = make_env({"approval": Approval})
    warnings.simplefilter("always")
    inst = env.create("approval", id="a")
    inst.send_event(type="approved", payload={"user": "ana"})
    # WHEN it runs
    env.run_until_idle()
    # THEN no warning about unpublished metrics was emitted
    assert inst.status().output == {"approved_by": "ana"}
    assert env.invocations == 2
    assert [str(w.message) for w in recwarn if "metrics" in str(w.message)] == []
