"""Retention by outcome: a workflow's ``retention`` sets the TTL of its finished instances.

``complete`` keeps an instance for ``retention["success"]``, ``errored`` and ``terminated`` for
``retention["error"]``; a key left out takes the runtime's retention. The TTL is the
instance's ``expires_at`` in the store (DynamoDB's TTL attribute on AWS).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import InvalidWorkflowError
from lambda_workflows.engine.instances.advance import RunnerSettings
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.engine.retention import Retention, parse_retention
from lambda_workflows.testing import WorkflowTestEnv

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

DAY = 86_400.0
RUNTIME_DEFAULT = 30 * DAY  # RunnerSettings' and the template's RetentionDays default


class Outcomes(WorkflowEntrypoint):
    """Completes, fails, or waits for an event (to be terminated), as its params say."""

    retention: ClassVar[dict[str, Any]] = {"success": "7 days", "error": timedelta(days=45)}

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        outcome = event.payload["outcome"]
        if outcome == "fail":
            raise RuntimeError("declined")
        if outcome == "wait":
            await step.wait_for_event("approval", type="approved", timeout="1 day")
        return await step.do("done", lambda: "ok")


class OnlySuccess(Outcomes):
    retention: ClassVar[dict[str, Any]] = {"success": 3600}


class NoRetention(Outcomes):
    retention = None


def kept_for(env: WorkflowTestEnv, workflow: str, id: str) -> float:
    """Seconds between the instance finishing and its TTL, as the store holds them."""
    record = env.store.get(InstanceRef(workflow, id))
    assert record.finished_at is not None and record.expires_at is not None
    return float(record.expires_at - record.finished_at)


def finish_three(env: WorkflowTestEnv, workflow: str) -> dict[str, str]:
    """One instance complete, one errored, one terminated while waiting; their statuses."""
    for outcome in ("complete", "fail", "wait"):
        env.create(workflow, id=outcome, params={"outcome": outcome})
    env.run_until_idle()
    env.get(workflow, "wait").terminate()
    return {id: str(env.get(workflow, id).status().status) for id in ("complete", "fail", "wait")}


def test_the_ttl_follows_the_outcome(make_env: EnvFactory) -> None:
    # GIVEN a workflow kept 7 days after success and 45 days after an error
    env = make_env({"o": Outcomes})
    # WHEN one instance completes, one errors and one is terminated
    statuses = finish_three(env, "o")
    assert statuses == {"complete": "complete", "fail": "errored", "wait": "terminated"}
    # THEN each one's TTL is its outcome's retention after it finished
    assert kept_for(env, "o", "complete") == pytest.approx(7 * DAY)
    assert kept_for(env, "o", "fail") == pytest.approx(45 * DAY)
    assert kept_for(env, "o", "wait") == pytest.approx(45 * DAY)


def test_an_outcome_left_out_takes_the_runtimes_retention(make_env: EnvFactory) -> None:
    env = make_env({"s": OnlySuccess})
    finish_three(env, "s")
    assert kept_for(env, "s", "complete") == pytest.approx(3600.0)
    assert kept_for(env, "s", "fail") == pytest.approx(RUNTIME_DEFAULT)
    assert kept_for(env, "s", "wait") == pytest.approx(RUNTIME_DEFAULT)


def test_without_retention_every_outcome_takes_the_runtimes(make_env: EnvFactory) -> None:
    env = make_env({"n": NoRetention})
    finish_three(env, "n")
    for id in ("complete", "fail", "wait"):
        assert kept_for(env, "n", id) == pytest.approx(RUNTIME_DEFAULT)


def test_the_runners_retention_setting_is_the_default_for_a_key_left_out() -> None:
    settings = RunnerSettings(retention_seconds=2 * DAY)
    with WorkflowTestEnv({"s": OnlySuccess}, settings=settings) as env:
        env.create("s", id="fail", params={"outcome": "fail"})
        env.create("s", id="complete", params={"outcome": "complete"})
        env.run_until_idle()
        assert kept_for(env, "s", "fail") == pytest.approx(2 * DAY)
        assert kept_for(env, "s", "complete") == pytest.approx(3600.0)


@pytest.mark.parametrize(
    ("declared", "fragment"),
    [
        ("7 days", "retention must be a dict like {'success': '7 days', 'error': '30 days'}"),
        ({"ok": "7 days"}, "unknown key(s) 'ok' in retention; allowed: success"),
        ({"success": "a week"}, "retention['success'] 'a week' is not a duration"),
        ({"error": [7]}, "retention['error'] must be a duration like '7 days'"),
        ({"error": -5}, "finite, non-negative duration"),
        ({"success": 0}, "must be from 1 second to 3650 days, got 0 seconds"),
        ({"error": "3651 days"}, "must be from 1 second to 3650 days"),
    ],
)
def test_a_bad_retention_fails_where_the_class_is_defined(declared: Any, fragment: str) -> None:
    with pytest.raises(InvalidWorkflowError) as info:

        class BadRetention(WorkflowEntrypoint):
            retention = declared

    message = str(info.value)
    assert fragment in message
    assert message.startswith(f"workflow class {__name__}.")
    assert "BadRetention" in message


def test_a_retention_changed_after_the_class_fails_when_the_runner_is_built() -> None:
    class Late(WorkflowEntrypoint):
        pass

    Late.retention = {"success": "forever"}
    with pytest.raises(InvalidWorkflowError) as info:
        WorkflowTestEnv({"late": Late})
    assert str(info.value).startswith("workflow 'late': retention['success'] 'forever'")


def test_parse_retention_reads_every_duration_form() -> None:
    raw = {"success": "7 days", "error": timedelta(hours=36)}
    assert parse_retention(raw, 99.0, "w") == Retention(7 * DAY, 1.5 * DAY)
    assert parse_retention({"error": 60}, 99.0, "w") == Retention(99.0, 60.0)
    assert parse_retention(None, 99.0, "w") == Retention(99.0, 99.0)
