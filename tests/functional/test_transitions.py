"""The instance state machine (lambda_workflows.engine.instances.transitions), one test per
transition, legal
and illegal, on both stores: the in-memory one and DynamoDB on moto."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import InstanceAlreadyExists, InvalidTransition
from lambda_workflows.engine.instances.transitions import (
    Finish,
    Pause,
    Settle,
    Transition,
    Wait,
    Yield,
)
from lambda_workflows.engine.model import (
    ErrorInfo,
    EventRecord,
    InstanceRef,
    InstanceStatus,
    event_id,
)
from lambda_workflows.testing import WorkflowTestEnv

S = InstanceStatus
HOUR = 3600.0
RETENTION = 86_400.0


class Idle(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return None


@pytest.fixture(params=["memory", "aws"])
def env(request: pytest.FixtureRequest, aws_env: Any) -> WorkflowTestEnv:
    if request.param == "aws":
        built: WorkflowTestEnv = aws_env({"idle": Idle})
        return built
    return WorkflowTestEnv({"idle": Idle})


def now(env: WorkflowTestEnv) -> float:
    return env.clock.time()


def runner_writes(env: WorkflowTestEnv, ref: InstanceRef, transition: Transition) -> Any:
    record = env.store.get(ref)
    change = transition.change(record, now(env))
    assert change is not None
    return env.store.update(ref, record.version, change)


def in_status(env: WorkflowTestEnv, status: InstanceStatus, name: str) -> InstanceRef:
    """A new instance brought to ``status`` through legal transitions only."""
    ref = InstanceRef("idle", name)
    env.create("idle", id=name)
    if status is S.QUEUED:
        return ref
    if status is S.PAUSED:
        env.service.pause(ref)
    elif status is S.TERMINATED:
        env.service.terminate(ref)
    else:
        assert env.store.acquire_lease(ref, "runner", now(env), now(env) + 960) is not None
        if status is S.WAITING_FOR_PAUSE:
            env.service.pause(ref)
        elif status is S.WAITING:
            runner_writes(env, ref, Wait(now(env) + HOUR))
        elif status is S.COMPLETE:
            runner_writes(env, ref, Finish(S.COMPLETE, RETENTION, output='"done"'))
        elif status is S.ERRORED:
            runner_writes(env, ref, Finish(S.ERRORED, RETENTION, error=ErrorInfo("E", "boom")))
    assert env.store.get(ref).status is status
    return ref


NOT_FINISHED = [S.QUEUED, S.RUNNING, S.WAITING, S.WAITING_FOR_PAUSE, S.PAUSED]
FINISHED = [S.COMPLETE, S.ERRORED, S.TERMINATED]
ALL = NOT_FINISHED + FINISHED


# --- creation and leases -------------------------------------------------------------------


def test_create_makes_a_queued_instance_due_and_a_taken_id_is_refused(env: WorkflowTestEnv) -> None:
    record = env.service.create("idle", id="c")
    assert record.status is S.QUEUED and record.due_at is not None
    with pytest.raises(InstanceAlreadyExists):
        env.service.create("idle", id="c")


@pytest.mark.parametrize("status", ALL)
def test_lease(env: WorkflowTestEnv, status: InstanceStatus) -> None:
    ref = in_status(env, status, "l")
    if status in (S.RUNNING, S.WAITING_FOR_PAUSE):  # leased by "runner" in in_status
        assert env.store.acquire_lease(ref, "other", now(env), now(env) + 960) is None
        # the same delivery of the same message (a copy SQS gave a second runner) is refused;
        # a later delivery of it takes the lease back
        assert env.store.acquire_lease(ref, "runner", now(env), now(env) + 960) is None
        taken_back = env.store.acquire_lease(ref, "runner", now(env), now(env) + 960, delivery=2)
        assert taken_back is not None and taken_back.status is status
        assert taken_back.held_by("runner", 2)
        assert env.store.renew_lease(ref, "runner", now(env) + 960) is None  # delivery 1 lost it
        return
    leased = env.store.acquire_lease(ref, "runner", now(env), now(env) + 960)
    if status in FINISHED or status is S.PAUSED:
        assert leased is None
    else:
        assert leased is not None
        assert leased.status is S.RUNNING
        assert leased.due_at == now(env) + 960


def test_an_expired_lease_may_be_taken_over(env: WorkflowTestEnv) -> None:
    ref = in_status(env, S.RUNNING, "exp")
    env.clock.advance(961)
    assert env.store.acquire_lease(ref, "other", now(env), now(env) + 960) is not None


def test_release_only_drops_the_owners_lease(env: WorkflowTestEnv) -> None:
    ref = in_status(env, S.RUNNING, "rel")
    env.store.release_lease(ref, "someone else", now(env))
    assert env.store.get(ref).lease_owner == "runner"
    env.store.release_lease(ref, "runner", now(env))
    record = env.store.get(ref)
    assert record.lease_owner is None and record.due_at == now(env)


@pytest.mark.parametrize("status", ALL)
def test_event(env: WorkflowTestEnv, status: InstanceStatus) -> None:
    ref = in_status(env, status, "e")
    if status in FINISHED:
        with pytest.raises(InvalidTransition):
            env.service.send_event(ref, "go", 1)
        return
    before = env.store.get(ref)
    env.service.send_event(ref, "go", 1)
    after = env.store.get(ref)
    assert after.status is status and after.version == before.version + 1
    assert [e.id for e in env.store.load(ref).events] == [event_id(before.version + 1)]


def test_an_event_on_a_stale_version_writes_nothing(env: WorkflowTestEnv) -> None:
    ref = in_status(env, S.QUEUED, "stale")
    record = env.store.get(ref)
    event = EventRecord(event_id(record.version), "go", "1", now(env))
    assert env.store.add_event(ref, event, record.version - 1, None) is None
    assert env.store.load(ref).events == []


# --- the runner's transitions --------------------------------------------------------------


@pytest.mark.parametrize("ending", [S.COMPLETE, S.ERRORED])
def test_finish(env: WorkflowTestEnv, ending: InstanceStatus) -> None:
    ref = in_status(env, S.RUNNING, "f")
    error = ErrorInfo("E", "boom") if ending is S.ERRORED else None
    record = runner_writes(env, ref, Finish(ending, RETENTION, output='"x"', error=error))
    assert record.status is ending
    assert record.lease_owner is None and record.due_at is None
    assert record.expires_at == now(env) + RETENTION


def test_finish_refuses_a_status_that_is_not_an_ending() -> None:
    with pytest.raises(ValueError, match="complete or errored"):
        Finish(S.WAITING, RETENTION).change(None, 0.0)  # type: ignore[arg-type]


def test_wait(env: WorkflowTestEnv) -> None:
    ref = in_status(env, S.RUNNING, "w")
    record = runner_writes(env, ref, Wait(now(env) + HOUR))
    assert record.status is S.WAITING
    assert record.wake_at == record.due_at == now(env) + HOUR
    assert record.lease_owner is None


def test_yield(env: WorkflowTestEnv) -> None:
    ref = in_status(env, S.RUNNING, "y")
    record = runner_writes(env, ref, Yield())
    assert record.status is S.RUNNING and record.lease_owner is None
    assert record.due_at is not None and record.due_at > now(env)


@pytest.mark.parametrize("status", [S.PAUSED, *FINISHED])
def test_settle(env: WorkflowTestEnv, status: InstanceStatus) -> None:
    ref = in_status(env, status, "s")
    record = runner_writes(env, ref, Settle())
    assert record.status is status and record.lease_owner is None


@pytest.mark.parametrize("status", [S.RUNNING, S.WAITING_FOR_PAUSE])
def test_the_runner_pauses(env: WorkflowTestEnv, status: InstanceStatus) -> None:
    ref = in_status(env, status, "rp")
    record = runner_writes(env, ref, Pause(by_runner=True))
    assert record.status is S.PAUSED and record.lease_owner is None and record.due_at is None


def test_a_runner_write_on_a_stale_version_writes_nothing(env: WorkflowTestEnv) -> None:
    ref = in_status(env, S.RUNNING, "v")
    record = env.store.get(ref)
    env.service.send_event(ref, "go", 1)  # a signal bumps the version
    change = Wait(now(env) + HOUR).change(record, now(env))
    assert change is not None
    assert env.store.update(ref, record.version, change) is None
    assert env.store.get(ref).status is S.RUNNING


# --- the instance service's transitions ----------------------------------------------------

PAUSE = {
    S.QUEUED: S.PAUSED,
    S.RUNNING: S.WAITING_FOR_PAUSE,  # a runner holds the lease
    S.WAITING: S.PAUSED,
    S.WAITING_FOR_PAUSE: S.WAITING_FOR_PAUSE,
    S.PAUSED: S.PAUSED,
}
RESUME = {
    S.QUEUED: S.QUEUED,
    S.RUNNING: S.RUNNING,
    S.WAITING: S.WAITING,
    S.WAITING_FOR_PAUSE: S.RUNNING,
    S.PAUSED: S.QUEUED,
}


def control(env: WorkflowTestEnv, action: str) -> Callable[[InstanceRef], Any]:
    return getattr(env.service, action)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("action", "table"), [("pause", PAUSE), ("resume", RESUME)])
@pytest.mark.parametrize("status", ALL)
def test_pause_and_resume(
    env: WorkflowTestEnv, action: str, table: dict[InstanceStatus, InstanceStatus], status: Any
) -> None:
    ref = in_status(env, status, "pr")
    if status in FINISHED:
        with pytest.raises(InvalidTransition, match="finished instances cannot be"):
            control(env, action)(ref)
        assert env.store.get(ref).status is status
        return
    assert control(env, action)(ref).status is table[status]
    assert env.store.get(ref).status is table[status]


def test_resume_shifts_sleeps_by_the_pause(env: WorkflowTestEnv) -> None:
    ref = in_status(env, S.PAUSED, "shift")
    env.clock.advance(600)
    record = env.service.resume(ref)
    assert record.pauses == ((now(env) - 600, now(env)),)
    assert record.paused_at is None and record.due_at is not None


@pytest.mark.parametrize("status", ALL)
def test_terminate(env: WorkflowTestEnv, status: InstanceStatus) -> None:
    ref = in_status(env, status, "t")
    if status in FINISHED:
        with pytest.raises(InvalidTransition):
            env.service.terminate(ref)
        assert env.store.get(ref).status is status
        return
    record = env.service.terminate(ref)
    assert record.status is S.TERMINATED and record.due_at is None and record.finished_at


@pytest.mark.parametrize("status", ALL)
def test_restart(env: WorkflowTestEnv, status: InstanceStatus) -> None:
    ref = in_status(env, status, "r")
    before = env.store.get(ref)
    record = env.service.restart(ref)
    assert record.status is S.QUEUED
    assert record.generation == before.generation + 1
    assert record.output is None and record.error is None and record.finished_at is None
    assert record.due_at is not None
