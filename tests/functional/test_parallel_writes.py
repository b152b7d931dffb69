"""Steps that finish together record together: the journal writes of a gather are in flight at
once (see lambda_workflows.aws.journal_writes), and each is still the conditional put of the
exactly-once rule. Concurrency is proved by counts, never by timings: a hook holds every
journal write until K of them are in flight."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.dynamodb import DynamoStore
from lambda_workflows.engine import codec
from lambda_workflows.engine.model import EntryKind, InstanceRef, JournalEntry
from lambda_workflows.engine.replay.journal import step_key
from lambda_workflows.testing import Crash
from tests.aws_faults import Faults

from .test_faults import journal_put_of
from .workflows_under_test import calls, count

K = 8


class Fanned(WorkflowEntrypoint):
    """``K`` steps in one gather, each counting its runs; each caught failure is visible."""

    max_steps = 100

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        key = event.instance_id

        async def one(i: int) -> Any:
            async def body() -> str:
                return f"s{i} ok {count(f'{key} s{i}')}"

            try:
                return await step.do(f"s{i}", body)
            except Exception as exc:
                return f"caught {type(exc).__name__}"

        return await asyncio.gather(*(one(i) for i in range(int(event.payload["steps"]))))


class Limited(Fanned):
    max_steps = 5


class TwoWaits(WorkflowEntrypoint):
    """Two waits for the same event type, in one gather."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        got = await asyncio.gather(
            step.wait_for_event("first", type="go", timeout="1 hour"),
            step.wait_for_event("second", type="go", timeout="1 hour"),
        )
        return [e.payload["n"] for e in got]


def journal_sk(params: dict[str, Any]) -> str:
    """The sort key of the journal item a PutItem request writes ('' for other requests)."""
    try:
        item = json.loads(params.get("body") or b"{}").get("Item", {})
    except ValueError:
        return ""
    sk = str(item.get("sk", {}).get("S", ""))
    return sk if sk.startswith("J#") else ""


def hold_journal_writes(env: Any, hook: Any) -> None:
    """Call ``hook(sk)`` before every journal PutItem of the runner's store."""

    def before(model: Any, params: dict[str, Any], **_: Any) -> None:
        if model.name == "PutItem" and (sk := journal_sk(params)):
            hook(sk)

    env.aws.runtime.store.client.meta.events.register("before-call", before)


def recorded(inst: Any) -> list[str]:
    return sorted(e.name for e in inst.journal() if e.kind is EntryKind.STEP)


def test_the_writes_of_a_gather_are_in_flight_together(aws_env: Any) -> None:
    # GIVEN every journal write is held until K of them are in flight (one at a time would
    # never get there: the barrier breaks after its timeout and the write fails)
    env = aws_env({"fanned": Fanned})
    inst = env.create("fanned", id="together", params={"steps": K})
    barrier = threading.Barrier(K, timeout=10)
    held: list[str] = []

    def hold(sk: str) -> None:
        held.append(sk)
        barrier.wait()

    hold_journal_writes(env, hold)
    # WHEN the gather of K steps runs
    env.run_until_idle()
    # THEN all K writes met at the barrier and the instance completed in one invocation
    status = inst.status()
    assert status.status == "complete", status.error
    assert not barrier.broken
    assert len(held) == K
    assert env.invocations == 1
    assert recorded(inst) == sorted(f"s{i}" for i in range(K))


def test_a_write_that_loses_the_race_hands_back_the_winner_in_a_gather(aws_env: Any) -> None:
    # GIVEN the K writes of a gather are in flight together, and another runner records step
    # "s3" first while this runner's write of it is on its way
    env = aws_env({"fanned": Fanned})
    inst = env.create("fanned", id="race", params={"steps": K})
    other = DynamoStore(env.aws.session.client("dynamodb"), env.aws.settings.table_name, env.clock)
    ref = InstanceRef("fanned", "race")
    generation = env.store.get(ref).generation
    theirs = JournalEntry(
        key=step_key("s3", 1, None),
        kind=EntryKind.STEP,
        name="s3",
        count=1,
        at=env.clock.time(),
        position=4,
        result=codec.encode("theirs"),
        attempt=1,
    )
    barrier = threading.Barrier(K, timeout=10)

    def first(sk: str) -> None:
        barrier.wait()
        if "s3\x1f" in sk:
            other.record(ref, generation, theirs)

    hold_journal_writes(env, first)
    # WHEN the gather runs
    env.run_until_idle()
    # THEN run() continued with the winner's value, and the journal keeps the winner's
    status = inst.status()
    assert status.status == "complete", status.error
    assert not barrier.broken
    assert status.output[3] == "theirs"
    assert [s for s in status.output if s != "theirs"] == [f"s{i} ok 1" for i in range(K) if i != 3]
    assert {e.name: e.result for e in inst.journal()}["s3"] == codec.encode("theirs")


@pytest.mark.parametrize("kind", ["throttle", "unreachable", "timeout"])
def test_a_failed_write_in_a_gather_is_not_a_step_failure_and_the_writes_beside_it_land(
    aws_env: Any, kind: str
) -> None:
    # GIVEN the journal write of "s3" fails once while the others are in flight
    calls.clear()
    env = aws_env({"fanned": Fanned})
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.PutItem", kind, match=journal_put_of("s3"))
    inst = env.create("fanned", id=f"g-{kind}", params={"steps": K})
    # WHEN it runs to the end
    env.run_until_idle()
    # THEN no step saw the AWS error, every step is recorded once, and only the write that
    # did not happen had its callback run again (the others were in flight beside it and
    # landed)
    assert faults.fired("dynamodb.PutItem") == 1
    status = inst.status()
    assert status.status == "complete", status.error
    assert not any(value.startswith("caught") for value in status.output), status.output
    assert recorded(inst) == sorted(f"s{i}" for i in range(K))
    assert calls[f"g-{kind} s3"] == (1 if kind == "timeout" else 2)
    assert all(calls[f"g-{kind} s{i}"] == 1 for i in range(K) if i != 3)


def test_a_crash_on_one_write_of_a_gather_keeps_the_writes_beside_it(aws_env: Any) -> None:
    # GIVEN the invocation dies on the journal write of "s3" (the others are in flight)
    calls.clear()
    env = aws_env({"fanned": Fanned})
    inst = env.create("fanned", id="crash", params={"steps": K})
    died = threading.Event()

    def crash(sk: str) -> None:
        if "s3\x1f" in sk and not died.is_set():
            died.set()
            raise Crash("the Lambda died mid-write")

    hold_journal_writes(env, crash)
    # WHEN it runs
    env.run_once("fanned", "crash")
    # THEN the invocation died, and the writes in flight beside the lost one landed
    assert env.crashes == 1
    assert recorded(inst) == sorted(f"s{i}" for i in range(K) if i != 3)
    # AND once the message is delivered again, the instance completed, each step recorded
    # once; only "s3" ran twice
    env.run_until_idle()
    status = inst.status()
    assert status.status == "complete", status.error
    assert recorded(inst) == sorted(f"s{i}" for i in range(K))
    assert calls["crash s3"] == 2
    assert all(calls[f"crash s{i}"] == 1 for i in range(K) if i != 3)


def test_steps_whose_writes_are_in_flight_count_towards_the_step_limit(aws_env: Any) -> None:
    # GIVEN a workflow limited to 5 steps gathers 8, and every write is held until 5 are in
    # flight (so no step is recorded before the sixth one starts)
    env = aws_env({"limited": Limited})
    inst = env.create("limited", id="limit", params={"steps": K})
    barrier = threading.Barrier(Limited.max_steps, timeout=10)
    hold_journal_writes(env, lambda sk: barrier.wait())
    # WHEN it runs
    env.run_until_idle()
    # THEN the sixth step broke the limit, and no more than 5 steps were recorded
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None and status.error["name"] == "StepLimitExceeded"
    assert len(recorded(inst)) <= Limited.max_steps


def test_two_waits_of_a_gather_never_take_the_same_event(aws_env: Any) -> None:
    # GIVEN two events of one type are buffered before two waits for that type run together
    env = aws_env({"waits": TwoWaits})
    inst = env.create("waits", id="waits")
    inst.send_event(type="go", payload={"n": 1})
    inst.send_event(type="go", payload={"n": 2})
    # WHEN the gather of both waits runs (their deliveries' writes in flight together)
    env.run_until_idle()
    # THEN each wait got its own event, oldest first
    status = inst.status()
    assert status.status == "complete", status.error
    assert status.output == [1, 2]
