"""Rules the engine enforces at run time: determinism, awaited steps, frozen event, limits."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from dataclasses import dataclass
from typing import Any, ClassVar

import pydantic
import pytest

from lambda_workflows import (
    EventMutationError,
    InstanceAlreadyExists,
    InvalidInput,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
)

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")


class BranchesOnRandom(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        if BranchesOnRandom.coin():
            await step.do("heads", lambda: "h")
        else:
            await step.do("tails", lambda: "t")
        await step.sleep("nap", "1 hour")
        return "done"

    flips = iter([True, False])

    @staticmethod
    def coin() -> bool:
        return next(BranchesOnRandom.flips)


def test_a_different_step_on_replay_raises_non_determinism_error_naming_both(
    make_env: EnvFactory,
) -> None:
    BranchesOnRandom.flips = iter([True, False])
    env = make_env({"r": BranchesOnRandom})
    inst = env.create("r", id="r")
    env.run_until_idle()
    status = inst.status()
    assert status.status == "errored"
    assert status.error.name == "NonDeterminismError"
    assert "'tails'" in status.error.message and "'heads'" in status.error.message


class SwallowsEverything(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        name = f"step at {SwallowsEverything.names.pop(0)}"
        with contextlib.suppress(Exception):  # a user's except cannot hide a violation
            await step.do(name, lambda: 1)
        await step.sleep("nap", "1 hour")
        return "done"

    names: ClassVar[list[str]] = []


def test_non_determinism_cannot_be_swallowed_by_except_exception(make_env: EnvFactory) -> None:
    SwallowsEverything.names = ["10:00", "13:00"]  # like a name built from the time
    env = make_env({"s": SwallowsEverything})
    inst = env.create("s", id="s")
    env.run_until_idle()
    assert inst.status().error.name == "NonDeterminismError"


class ForgetsAwait(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        step.do("fetch issues from GitHub", lambda: ["issue"])  # not awaited
        return "returned early"


def test_a_step_never_awaited_is_reported_naming_the_step(make_env: EnvFactory) -> None:
    env = make_env({"f": ForgetsAwait})
    inst = env.create("f", id="f")
    env.run_until_idle()
    status = inst.status()
    assert status.status == "errored"
    assert status.error.name == "UnawaitedStepError"
    assert "'fetch issues from GitHub'" in status.error.message
    assert status.steps == []


class TaskNotAwaited(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        async def slow() -> int:
            await asyncio.sleep(0.05)
            return 1

        asyncio.ensure_future(step.do("background", slow))  # noqa: RUF006
        await asyncio.sleep(0)
        return "returned early"


def test_a_step_task_still_running_when_run_returns_is_reported(make_env: EnvFactory) -> None:
    env = make_env({"t": TaskNotAwaited})
    inst = env.create("t", id="t")
    env.run_until_idle()
    assert inst.status().error.name == "UnawaitedStepError"
    assert "'background'" in inst.status().error.message


class MutatesEvent(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def mutate() -> None:
            event.payload["user"] = "someone else"

        await step.do("bad step that mutates the incoming event", mutate)


def test_mutating_the_event_fails_with_an_error_naming_the_rule(make_env: EnvFactory) -> None:
    env = make_env({"m": MutatesEvent})
    inst = env.create("m", id="m", params={"user": "ana"})
    env.run_until_idle()
    error = inst.status().error
    assert error.name == "EventMutationError"
    assert "don't mutate your incoming events" in error.message
    assert inst.status().steps[0].attempts == 1  # a programming error is not retried


def test_the_event_is_deep_immutable_but_copyable() -> None:
    from datetime import UTC, datetime

    event = WorkflowEvent({"a": {"b": [1, 2]}}, datetime.now(UTC), "i")
    with pytest.raises(EventMutationError):
        event.payload = {}
    with pytest.raises(EventMutationError):
        event.payload["a"]["b"].append(3)
    with pytest.raises(EventMutationError):
        event.payload["a"].update(c=1)
    mutable = copy.deepcopy(dict(event.payload))
    mutable["a"] = 1
    assert event.payload == {"a": {"b": [1, 2]}}
    assert isinstance(event.payload, dict)


@dataclass
class Receipt:
    id: str
    amount: float


class User(pydantic.BaseModel):
    name: str
    tags: list[str]


class TypedResults(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def make_user() -> User:
            return User(name="ana", tags=["x"])

        def make_receipt() -> Receipt:
            return Receipt("r-1", 9.5)

        user = await step.do("user", make_user)
        receipt = await step.do("receipt", make_receipt)
        plain = await step.do("plain", lambda: (1, 2))
        await step.sleep("nap", "1 minute")
        assert isinstance(user, User) and isinstance(receipt, Receipt)
        return {"user": user, "receipt": receipt, "plain": plain}


def test_pydantic_models_and_dataclasses_round_trip_with_the_same_type_on_replay(
    make_env: EnvFactory,
) -> None:
    env = make_env({"t": TypedResults})
    inst = env.create("t", id="t")
    env.run_until_idle()
    assert inst.status().status == "complete", inst.status().error
    assert inst.status().output == {
        "user": {"name": "ana", "tags": ["x"]},
        "receipt": {"id": "r-1", "amount": 9.5},
        "plain": [1, 2],  # a tuple comes back as a list: the decoded value, first run too
    }


class HugeResult(WorkflowEntrypoint):
    attempts = 0

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def fetch() -> str:
            HugeResult.attempts += 1
            return "x" * (1024 * 1024 + 1)

        return await step.do("fetch large dataset", fetch)


def test_a_result_over_one_mebibyte_fails_the_step_without_retries(make_env: EnvFactory) -> None:
    HugeResult.attempts = 0
    env = make_env({"h": HugeResult})
    inst = env.create("h", id="h")
    env.run_until_idle()
    error = inst.status().error
    assert error.name == "ResultTooLarge"
    assert "1 MiB" in error.message and "reference" in error.message
    assert HugeResult.attempts == 1


class NotJson(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("socket", lambda: object())


def test_a_result_that_is_not_json_fails_clearly(make_env: EnvFactory) -> None:
    env = make_env({"n": NotJson})
    inst = env.create("n", id="n")
    env.run_until_idle()
    assert inst.status().error.name == "NotSerializable"


class ManySteps(WorkflowEntrypoint):
    max_steps = 5

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for i in range(10):
            await step.do(f"step {i}", lambda: None)


def test_the_step_limit_is_enforced(make_env: EnvFactory) -> None:
    env = make_env({"m": ManySteps})
    inst = env.create("m", id="m")
    env.run_until_idle()
    error = inst.status().error
    assert error.name == "StepLimitExceeded"
    assert "limit of 5 steps" in error.message
    assert len(inst.status().steps) == 5


@pytest.mark.parametrize(
    ("name", "fragment"),
    [("", "must not be empty"), ("x" * 257, "256-character"), ("a\nb", "control characters")],
)
def test_bad_step_names_are_rejected(name: str, fragment: str, make_env: EnvFactory) -> None:
    class BadName(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            await step.do(name, lambda: 1)

    env = make_env({"b": BadName})
    inst = env.create("b", id="b")
    env.run_until_idle()
    assert inst.status().error.name == "InvalidStepError"
    assert fragment in inst.status().error.message


def test_create_validates_the_id_and_refuses_a_duplicate(make_env: EnvFactory) -> None:
    env = make_env({"m": ManySteps})
    env.create("m", id="order-1")
    with pytest.raises(InstanceAlreadyExists, match="already exists"):
        env.create("m", id="order-1")
    for bad in ["", "-starts-with-dash", "has space", "x" * 101, "ünicode"]:
        with pytest.raises(InvalidInput):
            env.create("m", id=bad)
    with pytest.raises(InvalidInput, match="1 MiB"):
        env.create("m", id="big", params={"blob": "x" * (1024 * 1024)})
    assert len(env.store.list_instances("m").records) == 1


def test_create_batch_skips_and_reports_existing_ids(make_env: EnvFactory) -> None:
    env = make_env({"m": ManySteps})
    env.create("m", id="a")
    result = env.create_batch("m", [{"id": "a"}, {"id": "b", "params": {"n": 1}}, {"id": "c"}])
    assert result.created == ["b", "c"]
    assert result.errors == [
        {
            "index": 0,
            "id": "a",
            "code": "instance_exists",
            "message": "instance 'a' already exists; it was not created again",
        }
    ]
    again = env.create_batch("m", [{"id": "b"}, {"id": "c"}])
    assert again.created == [] and again["created"] == []
    assert [e["id"] for e in again["errors"]] == ["b", "c"]


def test_a_user_except_exception_cannot_swallow_a_suspension(make_env: EnvFactory) -> None:
    class Greedy(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            try:
                await step.sleep("nap", "1 hour")
            except Exception:
                return "swallowed"
            return "slept"

    env = make_env({"g": Greedy})
    inst = env.create("g", id="g")
    env.run_until_idle()
    assert inst.status().output == "slept"
