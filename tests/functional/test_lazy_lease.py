"""The lazy lease on moto: a runner loads and replays without the instance's lease, takes it
only before new work that runs code, and otherwise writes where the instance goes in one
update conditional on the loaded version and on no live lease (engine.lazy_lease).

Counted on the real DynamoStore's client (botocore hooks), raced by a second runner or a
signal started from a hook right before the lazy write, and faulted on that write (throttled,
or a timeout after it happened)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.items import INSTANCE_SK
from lambda_workflows.engine.model import EntryKind, InstanceRef
from tests.aws_faults import AwsCall, Faults, attach

from .workflows_under_test import calls, count


class Nap(WorkflowEntrypoint):
    """Sleeps a day, then ends."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", "1 day")
        return "rested"


class Approval(WorkflowEntrypoint):
    """Waits a day at most for an approval, then ends with who approved."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        approved = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return approved.payload


class NapThenWork(WorkflowEntrypoint):
    """Sleeps an hour, then runs a counted step."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", "1 hour")
        return await step.do("work", lambda: count(f"{event.instance_id} work"))


def _is_lazy_write(payload: dict[str, Any]) -> bool:
    """A runner's write without a lease: the update conditional on no live lease."""
    return ":free_at" in payload.get("ExpressionAttributeValues", {})


@dataclass
class ItemWrites:
    """The calls that write an instance item (``#instance``), from the store client's hooks,
    with a hook run once right before the next lazy write."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    before_lazy_write: list[Callable[[], None]] = field(default_factory=list)

    @classmethod
    def on(cls, env: Any) -> ItemWrites:
        writes = cls()
        attach(env.aws.runtime.store.client, writes._seen, lambda call, status: None)
        return writes

    def _seen(self, call: AwsCall) -> None:
        payload = call.payload
        key = payload.get("Key") or payload.get("Item") or {}
        if (
            call.operation in ("UpdateItem", "PutItem")
            and key.get("sk", {}).get("S") == INSTANCE_SK
        ):
            self.calls.append((call.operation, payload))
        if _is_lazy_write(payload) and self.before_lazy_write:
            _in_another_thread(self.before_lazy_write.pop())

    def leases(self) -> int:
        """Lease writes among them (the update that sets lease_owner)."""
        return sum("lease_owner = :owner" in p.get("UpdateExpression", "") for _, p in self.calls)


def _in_another_thread(call: Callable[[], None]) -> None:
    """Run ``call`` to its end in its own thread (its own event loop, as another Lambda's)."""
    thread = threading.Thread(target=call)
    thread.start()
    thread.join()


def test_a_sleeping_instance_writes_its_item_three_times_and_takes_no_lease(aws_env: Any) -> None:
    # GIVEN an instance that sleeps a day and ends
    env = aws_env({"nap": Nap})
    writes = ItemWrites.on(env)
    # WHEN it is created, sleeps and wakes up (run_until_idle skips the day)
    inst = env.create("nap", id="n1")
    env.run_until_idle()
    # THEN its item was written three times: created, waiting (lease + park in one write),
    # complete (lease + end in one write); no lease was ever taken
    assert inst.status().status == "complete"
    assert inst.status().output == "rested"
    assert [name for name, _ in writes.calls] == ["PutItem", "UpdateItem", "UpdateItem"]
    assert writes.leases() == 0
    # AND what the lease used to write is still there: the invocations counted, the start
    record = env.store.get(InstanceRef("nap", "n1"))
    assert record.invocations == 2
    assert record.started_at is not None
    assert record.item_writes == 3


def test_an_instance_waiting_for_an_event_is_written_without_a_lease(aws_env: Any) -> None:
    # GIVEN an instance waiting for an approval, sent an hour later
    env = aws_env({"approval": Approval})
    writes = ItemWrites.on(env)
    inst = env.create("approval", id="a1")
    env.run_until_idle()  # it waits: an event wait's timeout is not skipped
    assert inst.status().status == "waiting"
    env.clock.advance("1 hour")
    inst.send_event(type="approved", payload={"by": "ana"})
    env.run_until_idle()
    # THEN it ended with the event, and its item was written by create, wait, end only (the
    # event's own write is a transaction, not counted here)
    assert inst.status().output == {"by": "ana"}
    assert [name for name, _ in writes.calls] == ["PutItem", "UpdateItem", "UpdateItem"]
    assert writes.leases() == 0


def test_a_step_after_the_sleep_runs_under_the_lease_taken_right_before_it(aws_env: Any) -> None:
    # GIVEN an instance that sleeps, then runs a step
    calls.clear()
    env = aws_env({"w": NapThenWork})
    writes = ItemWrites.on(env)
    inst = env.create("w", id="s1")
    env.run_until_idle()
    # THEN the step ran once, under one lease taken on the wake-up's pass; the end let it go
    # in the same write: create, park, lease, end
    assert inst.status().status == "complete"
    assert calls["s1 work"] == 1
    assert writes.leases() == 1
    assert [name for name, _ in writes.calls] == ["PutItem"] + ["UpdateItem"] * 3


def test_two_runners_of_one_delivery_without_a_lease_park_the_instance_once(
    aws_env: Any,
) -> None:
    # GIVEN a sleeping instance's first message, delivered twice at once; the copy's runner
    # runs (and parks the instance) right before the first one's lazy write
    env = aws_env({"nap": Nap})
    writes = ItemWrites.on(env)
    inst = env.create("nap", id="twice")
    ref = InstanceRef("nap", "twice")
    env.aws.receive()  # the create message: both runners are driven by hand
    copy = []
    writes.before_lazy_write.append(
        lambda: copy.append(asyncio.run(env.runner.advance(ref, owner="m", delivery=1)))
    )
    # WHEN both advance it
    first = asyncio.run(env.runner.advance(ref, owner="m", delivery=1))
    # THEN the copy parked it; the first one's write lost (the version moved), and it looked
    # again under the lease: the instance waits once, on one sleep entry
    assert copy[0].status == "waiting"
    assert first.status == "waiting"
    sleeps = [e for e in inst.journal() if e.kind is EntryKind.SLEEP]
    assert len(sleeps) == 1
    assert inst.status().status == "waiting"
    # AND it wakes up and ends as if it was delivered once
    env.run_until_idle()
    assert inst.status().output == "rested"


def test_a_copy_of_the_delivery_is_turned_away_at_the_lazy_lease(aws_env: Any) -> None:
    # GIVEN an instance that slept and wakes up to run a step; a copy of its wake-up's
    # delivery runs while the first runner holds the lease it took before the step
    calls.clear()
    env = aws_env({"w": NapThenWork})
    inst = env.create("w", id="copy")
    ref = InstanceRef("w", "copy")
    env.aws.receive()  # the create message: the runners are driven by hand
    asyncio.run(env.runner.advance(ref))  # it sleeps
    env.clock.advance("1 hour")
    answers = []
    original = NapThenWork.run

    async def run_with_copy(self: Any, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", "1 hour")

        def work() -> int:
            _in_another_thread(
                lambda: answers.append(asyncio.run(env.runner.advance(ref, owner="w", delivery=1)))
            )
            return count("copy work")

        return await step.do("work", work)

    NapThenWork.run = run_with_copy  # type: ignore[method-assign]
    try:
        result = asyncio.run(env.runner.advance(ref, owner="w", delivery=1))
    finally:
        NapThenWork.run = original  # type: ignore[method-assign]
    # THEN the copy advanced nothing: the lease it asked for before the step was held
    assert answers[0].status is None
    assert calls["copy work"] == 1
    assert result.status == "complete"
    assert inst.status().output == 1


def _signal_before_the_lazy_write(env: Any, signal: Callable[[], None]) -> ItemWrites:
    writes = ItemWrites.on(env)
    writes.before_lazy_write.append(signal)
    return writes


def test_an_event_sent_between_the_load_and_the_lazy_park_is_delivered(aws_env: Any) -> None:
    # GIVEN an instance about to park on its event wait, when the event arrives
    env = aws_env({"approval": Approval})
    inst = env.create("approval", id="race")
    _signal_before_the_lazy_write(
        env, lambda: inst.send_event(type="approved", payload={"by": "bo"})
    )
    # WHEN its runner goes on
    env.run_until_idle()
    # THEN the park lost (the version moved), the runner replayed with the event and ended
    assert inst.status().status == "complete"
    assert inst.status().output == {"by": "bo"}


def test_a_terminate_between_the_load_and_the_lazy_park_wins(aws_env: Any) -> None:
    env = aws_env({"nap": Nap})
    inst = env.create("nap", id="stop")
    _signal_before_the_lazy_write(env, inst.terminate)
    env.run_until_idle()
    assert inst.status().status == "terminated"
    assert not [e for e in inst.journal() if e.kind is EntryKind.STEP]


def test_a_pause_between_the_load_and_the_lazy_park_wins(aws_env: Any) -> None:
    env = aws_env({"nap": Nap})
    inst = env.create("nap", id="hold")
    _signal_before_the_lazy_write(env, inst.pause)
    env.run_until_idle()
    assert inst.status().status == "paused"
    inst.resume()
    env.run_until_idle()
    assert inst.status().output == "rested"


def test_a_lazy_park_whose_answer_is_lost_is_written_again_and_wakes_up(aws_env: Any) -> None:
    # GIVEN the park write happens, then its answer times out (outcome unknown)
    env = aws_env({"nap": Nap})
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.UpdateItem", "timeout", match=_is_lazy_write)
    inst = env.create("nap", id="unknown")
    # WHEN the runner fails the message and its next delivery runs
    env.run_until_idle()
    # THEN the next delivery parked it again, and it woke up once due: no wake-up lost
    assert faults.fired("dynamodb.UpdateItem") == 1
    assert inst.status().output == "rested"


def test_a_throttled_lazy_park_is_tried_again_by_the_next_delivery(aws_env: Any) -> None:
    env = aws_env({"nap": Nap})
    faults = Faults.on(env.aws.runtime)
    faults.arm("dynamodb.UpdateItem", "throttle", match=_is_lazy_write)
    inst = env.create("nap", id="throttled")
    env.run_until_idle()
    assert faults.fired("dynamodb.UpdateItem") == 1
    assert inst.status().output == "rested"
