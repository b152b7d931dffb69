"""The rollback transitions of the instance state machine
(lambda_workflows.engine.instances.transitions): StartRollback, EndRollback and
TerminateWithRollback, legal and illegal, on both stores, and
the instance's rollback persisted as written."""

from __future__ import annotations

import pytest

from lambda_workflows.engine.errors import InvalidTransition
from lambda_workflows.engine.instances.transitions import (
    EndRollback,
    StartRollback,
    TerminateWithRollback,
)
from lambda_workflows.engine.model import (
    ErrorInfo,
    FailedStep,
    InstanceStatus,
    RollbackInfo,
    RollbackStatus,
)
from lambda_workflows.testing import WorkflowTestEnv

from .test_transitions import ALL, FINISHED, RETENTION, S, env, in_status, now
from .test_transitions import runner_writes as write

__all__ = ["env"]  # the fixture, shared with test_transitions

BOOM = ErrorInfo("RuntimeError", "boom")


def test_start_rollback_records_the_failure_and_keeps_the_lease(env: WorkflowTestEnv) -> None:
    ref = in_status(env, S.RUNNING, "start")
    record = write(env, ref, StartRollback(BOOM))
    # THEN the instance is still running, still leased by its runner, with its rollback set
    assert record.status is S.RUNNING and record.lease_owner == "runner"
    assert record.rollback == RollbackInfo(BOOM, S.ERRORED, RollbackStatus.RUNNING)
    assert record.error is None and record.finished_at is None
    assert env.store.get(ref).rollback == record.rollback


@pytest.mark.parametrize("status", [s for s in ALL if s is not S.RUNNING])
def test_only_a_running_instance_starts_rolling_back(
    env: WorkflowTestEnv, status: InstanceStatus
) -> None:
    ref = in_status(env, status, "not-running")
    with pytest.raises(InvalidTransition, match="only a running instance"):
        StartRollback(BOOM).change(env.store.get(ref), now(env))


def test_an_instance_starts_rolling_back_once(env: WorkflowTestEnv) -> None:
    ref = in_status(env, S.RUNNING, "twice")
    write(env, ref, StartRollback(BOOM))
    with pytest.raises(InvalidTransition, match="already rolling back"):
        StartRollback(BOOM).change(env.store.get(ref), now(env))


def test_end_rollback_ends_errored_with_the_failure_and_the_chains_outcome(
    env: WorkflowTestEnv,
) -> None:
    ref = in_status(env, S.RUNNING, "end-errored")
    started = write(env, ref, StartRollback(BOOM))
    failed = ErrorInfo("PermissionError", "refund refused", "Traceback ...\nPermissionError")
    outcome = RollbackInfo(BOOM, S.ERRORED, RollbackStatus.FAILED, FailedStep("charge", 2), failed)
    assert started.rollback is not None
    record = write(env, ref, EndRollback(outcome, RETENTION))
    assert record.status is S.ERRORED and record.error == BOOM
    assert record.lease_owner is None and record.due_at is None
    assert record.expires_at == now(env) + RETENTION
    # AND both stores keep every part of the rollback, the error's traceback too
    stored = env.store.get(ref).rollback
    assert stored == outcome
    assert stored is not None and stored.error is not None
    assert stored.error.traceback == "Traceback ...\nPermissionError"


def test_end_rollback_of_a_terminate_ends_terminated_without_an_error(
    env: WorkflowTestEnv,
) -> None:
    ref = in_status(env, S.WAITING, "end-terminated")
    asked = env.service.terminate(ref, rollback=True)
    assert asked.rollback is not None
    env.store.acquire_lease(ref, "runner", now(env), now(env) + 960)
    done = RollbackInfo(asked.rollback.cause, S.TERMINATED, RollbackStatus.COMPLETE)
    record = write(env, ref, EndRollback(done, RETENTION))
    assert record.status is S.TERMINATED and record.error is None
    assert record.rollback == done


def test_end_rollback_refuses_an_ending_that_is_not_errored_or_terminated() -> None:
    ending = RollbackInfo(BOOM, S.COMPLETE)
    with pytest.raises(ValueError, match="errored or terminated"):
        EndRollback(ending, RETENTION).change(None, 0.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("status", ALL)
def test_terminate_with_rollback(env: WorkflowTestEnv, status: InstanceStatus) -> None:
    ref = in_status(env, status, "twr")
    if status in FINISHED:
        with pytest.raises(InvalidTransition, match="finished instances cannot be"):
            env.service.terminate(ref, rollback=True)
        assert env.store.get(ref).rollback is None
        return
    record = env.service.terminate(ref, rollback=True)
    # THEN it runs (a runner is posted) until its rollbacks are over; their error names the
    # termination; a pause or a wake-up it had is undone
    assert record.status is S.RUNNING
    assert record.rollback == RollbackInfo(
        ErrorInfo("Terminated", "Instance terminated during rollback"), S.TERMINATED
    )
    assert record.wake_at is None and record.paused_at is None
    assert record.due_at is not None and record.finished_at is None


def test_terminate_with_rollback_of_a_paused_instance_counts_the_pause(
    env: WorkflowTestEnv,
) -> None:
    ref = in_status(env, S.PAUSED, "paused")
    env.clock.advance(600)
    record = env.service.terminate(ref, rollback=True)
    assert record.pauses == ((now(env) - 600, now(env)),)


def test_terminate_with_rollback_of_an_instance_rolling_back_changes_nothing(
    env: WorkflowTestEnv,
) -> None:
    ref = in_status(env, S.RUNNING, "rolling")
    before = write(env, ref, StartRollback(BOOM))
    assert TerminateWithRollback().change(before, now(env)) is None
    after = env.service.terminate(ref, rollback=True)
    assert after.version == before.version and after.rollback == before.rollback


def test_a_plain_terminate_stops_an_instance_rolling_back(env: WorkflowTestEnv) -> None:
    ref = in_status(env, S.RUNNING, "cut")
    write(env, ref, StartRollback(BOOM))
    record = env.service.terminate(ref)
    assert record.status is S.TERMINATED
    assert env.service.status(ref).rollback == RollbackInfo(
        BOOM, S.ERRORED, RollbackStatus.CANCELLED
    )


def test_restart_forgets_the_rollback(env: WorkflowTestEnv) -> None:
    ref = in_status(env, S.RUNNING, "again")
    write(env, ref, StartRollback(BOOM))
    record = env.service.restart(ref)
    assert record.status is S.QUEUED and record.rollback is None
    assert env.store.get(ref).rollback is None
