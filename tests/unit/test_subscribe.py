"""``instance.subscribe()`` on the test kit's handle: the history, then live events until the
instance finishes, in the same order every time; each event's cursor resumes after it.

The events are derived from what is stored (the instance item, the journal, the events sent): see
``lambda_workflows.engine.instances.instance_events``.
"""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import NonRetryableError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import InvalidInput
from lambda_workflows.engine.instances.instance_events import OUTPUT_CAP

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

flaky_calls: list[int] = []


class Order(WorkflowEntrypoint):
    """A step that fails once, a sleep, a wait for an approval, a step after it."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def flaky() -> str:
            flaky_calls.append(1)
            if len(flaky_calls) == 1:
                raise RuntimeError("card network down")
            return "charged"

        charged = await step.do("charge", {"retries": {"limit": 2, "delay": 30}}, flaky)
        await step.sleep("cool off", "1 hour")
        approval = await step.wait_for_event("approval", type="approved", timeout="1 day")
        return {"charged": charged, "by": approval.payload["by"]}


LIFE = [
    "instance.queued",
    "instance.started",
    "step.started",
    "step.retrying",
    "step.started",
    "step.completed",
    "sleep.started",
    "sleep.finished",
    "wait.started",
    "event.received",
    "wait.completed",
    "instance.complete",
]


def live(instance: Any, **options: Any) -> list[dict[str, Any]]:
    """Subscribe and answer the approval when the wait starts; every event seen."""
    seen = []
    for event in instance.subscribe(**options):
        seen.append(dict(event))
        if event.type == "wait.started":
            instance.send_event(type="approved", payload={"by": "ana"})
    return seen


@pytest.fixture(autouse=True)
def _reset() -> None:
    flaky_calls.clear()


def test_subscribe_yields_the_life_of_an_instance_until_it_finishes(
    make_env: EnvFactory,
) -> None:
    # GIVEN an instance nothing has run yet
    env = make_env({"orders": Order})
    instance = env.create("orders", id="o-1")

    # WHEN a subscriber follows it (the test env runs it while the subscriber waits)
    seen = live(instance)

    # THEN it sees every event, in order, and the iterator ends with the instance
    assert [e["type"] for e in seen] == LIFE
    assert instance.status().status == "complete"
    retrying = seen[3]
    assert retrying["error"]["message"] == "card network down"
    assert retrying["attempt"] == 1 and retrying["retry_at"]
    assert seen[5]["output"] == "charged" and seen[5]["attempt"] == 2
    assert seen[9]["event"] == {
        "id": seen[9]["event"]["id"],
        "type": "approved",
        "payload": {"by": "ana"},
    }
    assert seen[-1]["output"] == {"charged": "charged", "by": "ana"}
    assert all(
        e["step"] == {"name": "charge", "count": 1, "type": "do", "parent": None} for e in seen[2:6]
    )


def test_the_same_order_every_time_and_each_cursor_resumes_after_its_event(
    make_env: EnvFactory,
) -> None:
    env = make_env({"orders": Order})
    instance = env.create("orders", id="o-2")
    followed = live(instance)

    # a subscription after the fact replays the same events, cursors and all
    assert [dict(e) for e in instance.subscribe()] == followed
    assert [dict(e) for e in instance.subscribe()] == followed
    for index, event in enumerate(followed):
        resumed = [dict(e) for e in instance.subscribe(cursor=event["cursor"])]
        assert resumed == followed[index + 1 :]


def test_a_cursor_handed_out_live_resumes_exactly_where_it_was(make_env: EnvFactory) -> None:
    # GIVEN a subscriber that stopped after the wait started (its cursor then)
    env = make_env({"orders": Order})
    instance = env.create("orders", id="o-3")
    first = []
    for event in instance.subscribe():
        first.append(event)
        if event.type == "wait.started":
            break

    # WHEN the approval arrives and the instance finishes while nobody listens
    instance.send_event(type="approved", payload={"by": "bo"})
    env.run_until_idle()

    # THEN its cursor gives the rest, nothing twice, nothing lost
    rest = [e.type for e in instance.subscribe(cursor=first[-1].cursor)]
    assert rest == ["event.received", "wait.completed", "instance.complete"]


def test_types_keeps_only_those_events(make_env: EnvFactory) -> None:
    env = make_env({"orders": Order})
    instance = env.create("orders", id="o-4")

    seen = []
    for event in instance.subscribe(types=["step.completed", "wait.started", "instance.complete"]):
        seen.append(event.type)
        if event.type == "wait.started":
            instance.send_event(type="approved", payload={"by": "cy"})

    assert seen == ["step.completed", "wait.started", "instance.complete"]
    assert [e.type for e in instance.subscribe(types="instance.queued,instance.started")] == [
        "instance.queued",
        "instance.started",
    ]


class Fails(WorkflowEntrypoint):
    """A step with a rollback, then one that fails for good."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("reserve", lambda: "r-1", rollback=lambda ctx, out, err: None)

        def refuse() -> None:
            raise NonRetryableError("out of stock")

        await step.do("ship", refuse)


def test_errors_and_rollbacks_are_events(make_env: EnvFactory) -> None:
    env = make_env({"fails": Fails})
    instance = env.create("fails", id="f-1")

    seen = [dict(e) for e in instance.subscribe()]

    assert [e["type"] for e in seen] == [
        "instance.queued",
        "instance.started",
        "step.started",
        "step.completed",
        "step.started",
        "step.failed",
        "rollback.started",
        "rollback.completed",
        "instance.errored",
    ]
    assert seen[5]["error"]["message"] == "out of stock"
    assert seen[5]["error"]["name"] == "NonRetryableError"
    assert "traceback" in seen[5]["error"]
    assert seen[6]["step"]["name"] == "reserve" and seen[6]["step"]["type"] == "rollback"
    assert seen[-1]["error"] == {"name": "NonRetryableError", "message": "out of stock"}


class Sleeper(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", "1 hour")
        return await step.do("big", lambda: "x" * (OUTPUT_CAP + 1))


def test_pauses_show_and_a_large_output_is_left_out(make_env: EnvFactory) -> None:
    env = make_env({"sleepers": Sleeper})
    instance = env.create("sleepers", id="s-1")
    env.run_once("sleepers", "s-1")
    instance.pause()
    env.clock.advance("10 minutes")
    instance.resume()

    seen = [dict(e) for e in instance.subscribe()]

    assert [e["type"] for e in seen] == [
        "instance.queued",
        "instance.started",
        "sleep.started",
        "instance.paused",
        "instance.resumed",
        "sleep.finished",
        "step.started",
        "step.completed",
        "instance.complete",
    ]
    assert seen[2]["wake_at"] == "2025-01-01T01:00:00.000Z"
    assert seen[5]["timestamp"] == "2025-01-01T01:10:00.000Z"  # the pause moved it
    assert seen[7]["output"] is None and seen[7]["output_truncated"] is True


def test_bad_types_or_cursor_are_refused(make_env: EnvFactory) -> None:
    env = make_env({"orders": Order})
    instance = env.create("orders", id="o-5")
    other = env.create("orders", id="o-6")
    cursor = next(iter(instance.subscribe())).cursor

    with pytest.raises(InvalidInput, match=r"unknown event type 'step\.done'"):
        next(iter(instance.subscribe(types=["step.done"])))
    with pytest.raises(InvalidInput, match="not one of instance 'o-6'"):
        next(iter(other.subscribe(cursor=cursor)))
    with pytest.raises(InvalidInput, match="cursor is not valid"):
        next(iter(instance.subscribe(cursor=cursor[:-2] + "xx")))


def test_a_subscriber_of_an_instance_nothing_will_move_is_told_so(make_env: EnvFactory) -> None:
    env = make_env({"orders": Order})
    instance = env.create("orders", id="o-7")
    instance.pause()

    with pytest.raises(RuntimeError, match="is paused and nothing in the test env"):
        list(instance.subscribe())


class Quick(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("only", lambda: 1)


def test_after_a_restart_an_older_cursor_starts_at_the_new_runs_first_event(
    make_env: EnvFactory,
) -> None:
    env = make_env({"quick": Quick})
    instance = env.create("quick", id="q-1")
    old = list(instance.subscribe())
    instance.restart()

    again = [e.type for e in instance.subscribe(cursor=old[-1].cursor)]

    assert again[0] == "instance.queued" and again[-1] == "instance.complete"
    assert again == [e.type for e in instance.subscribe()]


def test_pages_of_a_limit_chain_into_the_whole_history(make_env: EnvFactory) -> None:
    env = make_env({"orders": Order})
    instance = env.create("orders", id="o-8")
    whole = live(instance)

    served: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = env.service.subscribe(instance.ref, cursor, limit=5)
        assert len(page.events) <= 5
        served.extend(dict(e) for e in page.events)
        cursor = page.cursor
        if page.finished:
            break

    assert served == whole
