"""Rules of Workflows: "Don't mutate your incoming events".

Treat the incoming event as read-only.

✅ ``DontMutateEventWorkflow``: the user's data is a step's result, used by the next step, and
the same after a crash between the two.
🔴 ``BadDontMutateEventWorkflow``: in Cloudflare the assignment to ``event.payload`` is silently
lost on the next replay; this engine refuses it at once with ``EventMutationError``, whose
message names the rule.
"""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.examples._fakes import DEFAULT_KV, example_env
from lambda_workflows.examples.dont_mutate_event import (
    BadDontMutateEventWorkflow,
    DontMutateEventWorkflow,
)
from lambda_workflows.testing import WorkflowTestEnv

from ._support import crash_after, run_one, step_rows

GOOD_STEP = "good step that returns state"
NEXT_STEP = "following step that uses that state"
BAD_STEP = "bad step that mutates the incoming event"


def _run(
    workflow: type[WorkflowEntrypoint], fakes: dict[str, Any], user: str = "alice"
) -> tuple[WorkflowTestEnv, Any]:
    return run_one(workflow, fakes, "users", "u-1", {"user": user})


def test_state_returned_by_a_step_is_used_by_the_next_step_after_a_crash_between_them() -> None:
    # GIVEN the invocation dies right after the step that loads the user was recorded
    fakes = example_env()
    workflow = crash_after(DontMutateEventWorkflow, GOOD_STEP)
    # WHEN the work is redelivered and replayed
    env, inst = _run(workflow, fakes)
    # THEN the next step saw the recorded user data, and KV was read once
    assert workflow.crash_plan.crashed == [GOOD_STEP] and env.crashes == 1
    status = inst.status()
    assert status.status == "complete"
    assert status.output == {"greeting": f"hello {DEFAULT_KV['alice']['name']}"}
    assert fakes["KV"].reads["alice"] == 1
    assert [row[:4] for row in step_rows(inst)] == [
        (GOOD_STEP, 1, "do", "complete"),
        (NEXT_STEP, 1, "do", "complete"),
    ]


def test_bad_mutating_the_event_raises_event_mutation_error_naming_the_rule() -> None:
    # GIVEN the bad workflow, whose step assigns event.payload
    fakes = example_env()
    # WHEN it runs
    _, inst = _run(BadDontMutateEventWorkflow, fakes)
    # THEN the step failed with EventMutationError (never silently lost), naming the rule,
    # and the instance errored with it
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None
    assert status.error.name == "EventMutationError"
    assert "don't mutate your incoming events" in status.error.message
    assert "step.do" in status.error.message  # and says what to do instead
    rows = step_rows(inst)
    assert [row[:4] for row in rows] == [(BAD_STEP, 1, "do", "errored")]
    # every attempt read KV and then hit the guard: nothing was ever written to the event
    assert fakes["KV"].reads["alice"] == rows[0][4]
