"""``GET …/instances/{id}/subscribe``: an instance's events, then a long poll for new ones,
through the real ApiFunction handler on moto (both request paths, byte for byte: see
``check_paths_agree``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.instances.subscription import EVENT_TYPES, POLL_INTERVAL
from lambda_workflows.entrypoints import api as api_function
from lambda_workflows.testing import WorkflowTestEnv

from .conftest import Api, build_event

PATH = "/workflows/approvals/instances/{id}/subscribe"


class Approval(WorkflowEntrypoint):
    """A step, a wait for an approval, a step after it."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        amount = await step.do("quote", lambda: 42)
        decision = await step.wait_for_event("approval", type="approved", timeout="1 hour")
        return {"amount": amount, "by": decision.payload["by"]}


class Pauses:
    """Stands in for ``time.sleep`` between a long poll's reads: counts the pauses, and can
    make something happen during one (an event sent while a subscriber waits)."""

    def __init__(self) -> None:
        self.taken: list[float] = []
        self.during: list[Any] = []

    def __call__(self, seconds: float) -> None:
        self.taken.append(seconds)
        if self.during:
            self.during.pop(0)()


@pytest.fixture
def env() -> Iterator[WorkflowTestEnv]:
    with WorkflowTestEnv({"approvals": Approval}, backend="aws") as test_env:
        yield test_env


@pytest.fixture
def pauses() -> Pauses:
    return Pauses()


@pytest.fixture
def api(env: WorkflowTestEnv, pauses: Pauses) -> Api:
    assert env.aws is not None
    client = Api(env)
    runtime = dataclasses.replace(env.aws.runtime, poll_pause=pauses)
    client._api = api_function.make_handler(runtime)
    client.aws.runtime = runtime  # the resolver's second answer (check_paths_agree) too
    return client


def subscribe(api: Api, id: str, **query: Any) -> Any:
    answer = api.request("GET", PATH.format(id=id), query={k: str(v) for k, v in query.items()})
    assert answer.status == 200, answer.body
    return answer.body


def types(body: Any) -> list[str]:
    return [event["type"] for event in body["events"]]


def test_the_first_answer_is_the_whole_history_in_order(env: WorkflowTestEnv, api: Api) -> None:
    # GIVEN an instance that ran its first step and waits for an approval
    env.create("approvals", id="a-1")
    env.run_until_idle()

    # WHEN a subscriber asks without a cursor
    body = subscribe(api, "a-1")

    # THEN it gets every event so far, each with type, timestamp and its own cursor
    assert types(body) == [
        "instance.queued",
        "instance.started",
        "step.started",
        "step.completed",
        "wait.started",
    ]
    assert all({"type", "timestamp", "cursor"} <= set(e) for e in body["events"])
    assert body["events"][3]["output"] == 42
    assert body["events"][4]["event_type"] == "approved"
    assert body["cursor"] == body["events"][-1]["cursor"]
    assert body["finished"] is False
    assert body["status"] == "waiting"


def test_the_cursor_resumes_after_its_event_and_nothing_new_is_an_empty_page(
    env: WorkflowTestEnv, api: Api, pauses: Pauses
) -> None:
    env.create("approvals", id="a-2")
    env.run_until_idle()
    first = subscribe(api, "a-2")

    # an event's own cursor: the events after it
    after_second = subscribe(api, "a-2", cursor=first["events"][1]["cursor"])
    assert after_second["events"] == first["events"][2:]

    # the answer's cursor, nothing new, no wait: at once, events [] and a cursor to pass next
    nothing = subscribe(api, "a-2", cursor=first["cursor"])
    assert nothing["events"] == []
    assert nothing["cursor"]
    assert pauses.taken == []


def test_a_long_poll_answers_with_the_first_new_event_when_it_comes(
    env: WorkflowTestEnv, api: Api, pauses: Pauses
) -> None:
    # GIVEN a subscriber that has seen everything so far
    instance = env.create("approvals", id="a-3")
    env.run_until_idle()
    cursor = subscribe(api, "a-3")["cursor"]

    # WHEN the approval arrives during its wait (after the second pause)
    approve = lambda: instance.send_event(type="approved", payload={"by": "ana"})  # noqa: E731
    pauses.during = [lambda: None, approve]
    body = subscribe(api, "a-3", cursor=cursor, wait=20)

    # THEN the answer comes then, with the event, not after 20 seconds
    assert types(body) == ["event.received"]
    assert body["events"][0]["event"]["payload"] == {"by": "ana"}
    assert pauses.taken == [POLL_INTERVAL, POLL_INTERVAL]  # the second answer: at once

    # and the rest follows once the instance ran
    env.run_until_idle()
    rest = subscribe(api, "a-3", cursor=body["cursor"])
    assert types(rest) == ["wait.completed", "instance.complete"]
    assert rest["finished"] is True
    assert rest["events"][-1]["output"] == {"amount": 42, "by": "ana"}


def test_a_long_poll_with_nothing_new_waits_its_time_then_answers_empty(
    env: WorkflowTestEnv, api: Api, pauses: Pauses
) -> None:
    env.create("approvals", id="a-4")
    env.run_until_idle()
    cursor = subscribe(api, "a-4")["cursor"]
    api.check_paths = False  # count one request's pauses

    body = subscribe(api, "a-4", cursor=cursor, wait=5)

    assert body["events"] == []
    assert body["finished"] is False
    assert sum(pauses.taken) == 5


def test_a_finished_instance_answers_at_once_without_waiting(
    env: WorkflowTestEnv, api: Api, pauses: Pauses
) -> None:
    instance = env.create("approvals", id="a-5")
    env.run_until_idle()
    instance.send_event(type="approved", payload={"by": "bo"})
    env.run_until_idle()
    body = subscribe(api, "a-5")
    assert body["finished"] is True

    again = subscribe(api, "a-5", cursor=body["cursor"], wait=25)

    assert again == {"events": [], "cursor": body["cursor"], "finished": True, "status": "complete"}
    assert pauses.taken == []


def test_a_long_poll_answers_when_the_status_moves_without_an_event(
    env: WorkflowTestEnv, api: Api, pauses: Pauses
) -> None:
    # GIVEN a waiting instance, paused and resumed (queued again), seen to its last event
    instance = env.create("approvals", id="a-10")
    env.run_until_idle()
    instance.pause()
    instance.resume()
    cursor = subscribe(api, "a-10")["cursor"]

    # WHEN the runner takes it back to waiting (no event: its wait was recorded) meanwhile
    pauses.during = [env.run_until_idle]
    api.check_paths = False  # count one request's pauses
    body = subscribe(api, "a-10", cursor=cursor, wait=20)

    # THEN the poll answers then, with the status it moved to
    assert (body["events"], body["status"]) == ([], "waiting")
    assert len(pauses.taken) == 1


def test_types_filters_and_the_cursor_still_moves_past_the_others(
    env: WorkflowTestEnv, api: Api
) -> None:
    instance = env.create("approvals", id="a-6")
    env.run_until_idle()
    instance.send_event(type="approved", payload={"by": "cy"})
    env.run_until_idle()

    body = subscribe(api, "a-6", types="step.completed,instance.complete")

    assert types(body) == ["step.completed", "instance.complete"]
    assert body["finished"] is True
    assert "step.completed" in EVENT_TYPES


def test_types_may_also_be_repeated(env: WorkflowTestEnv, api: Api) -> None:
    env.create("approvals", id="a-11")
    env.run_until_idle()
    event = build_event("GET", PATH.format(id="a-11"))
    event["multiValueQueryStringParameters"] = {"types": ["step.completed", "wait.started"]}
    event["queryStringParameters"] = {"types": "wait.started"}

    answer = api.send(event)

    assert answer.status == 200
    assert types(answer.body) == ["step.completed", "wait.started"]


@pytest.mark.parametrize(
    ("query", "status", "says"),
    [
        ({"wait": "26"}, 422, "wait"),
        ({"wait": "-1"}, 422, "wait"),
        ({"types": "step.done"}, 400, "unknown event type 'step.done'"),
        ({"cursor": "not-a-cursor"}, 400, "cursor is not valid"),
        ({"limit": "0"}, 422, "limit"),
    ],
)
def test_bad_input_is_a_clear_4xx(
    env: WorkflowTestEnv, api: Api, query: dict[str, str], status: int, says: str
) -> None:
    env.create("approvals", id="a-7")
    before = api.snapshot()

    answer = api.request("GET", PATH.format(id="a-7"), query=query)

    assert answer.status == status
    assert says in str(answer.body)
    assert api.snapshot() == before  # nothing written


def test_a_tampered_cursor_or_one_of_another_instance_is_a_400(
    env: WorkflowTestEnv, api: Api
) -> None:
    env.create("approvals", id="a-8")
    env.create("approvals", id="a-9")
    env.run_until_idle()
    cursor = subscribe(api, "a-8")["events"][0]["cursor"]
    flipped = cursor[:-3] + ("A" if cursor[-3] != "A" else "B") + cursor[-2:]

    tampered = api.request("GET", PATH.format(id="a-8"), query={"cursor": flipped})
    foreign = api.request("GET", PATH.format(id="a-9"), query={"cursor": cursor})
    steps_cursor = api.request("GET", PATH.format(id="a-8"), query={"cursor": "x.y"})

    assert (tampered.status, tampered.code) == (400, "invalid_input")
    assert (foreign.status, foreign.code) == (400, "invalid_input")
    assert "not one of instance 'a-9'" in foreign.message
    assert steps_cursor.status == 400


def test_an_unknown_instance_is_a_404(api: Api) -> None:
    answer = api.request("GET", PATH.format(id="nobody"))
    assert (answer.status, answer.code) == (404, "instance_not_found")
