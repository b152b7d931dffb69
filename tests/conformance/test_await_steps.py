"""Rules of Workflows: "Always await your steps".

Always await a step (or hand it to ``asyncio.gather``).

✅ ``AwaitStepsWorkflow``: the awaited step's result is what the workflow returns, also when it
comes back from the journal after a crash.
🔴 ``BadAwaitStepsWorkflow``: in JavaScript the step's result and errors are silently lost;
this engine fails the instance with ``UnawaitedStepError`` naming the step.
"""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.examples._fakes import IssueTracker, example_env
from lambda_workflows.examples.await_steps import AwaitStepsWorkflow, BadAwaitStepsWorkflow
from lambda_workflows.testing import WorkflowTestEnv

from ._support import crash_after, inject, run_one, step_rows

STEP = "fetch issues from GitHub"
REPO = "cloudflare/workflows"


def _run(workflow: type[WorkflowEntrypoint], fakes: dict[str, Any]) -> tuple[WorkflowTestEnv, Any]:
    return run_one(workflow, fakes, "issues", "issues-1", {"repo_name": REPO})


def test_the_awaited_steps_result_is_used_also_after_a_crash() -> None:
    # GIVEN the invocation dies right after the awaited step was recorded
    fakes = example_env()
    github = inject(fakes["GITHUB"], "list_issues")  # a spy
    workflow = crash_after(AwaitStepsWorkflow, STEP)
    # WHEN it is replayed
    env, inst = _run(workflow, fakes)
    # THEN run() returned the step's (recorded) result, and GitHub was asked once
    assert workflow.crash_plan.crashed == [STEP] and env.crashes == 1
    status = inst.status()
    assert status.status == "complete"
    assert status.output == IssueTracker().list_issues(REPO)
    assert github.calls == 1 and github.args == [(REPO,)]
    assert step_rows(inst) == [(STEP, 1, "do", "complete", 1)]


def test_bad_step_never_awaited_fails_with_unawaited_step_error_naming_it() -> None:
    # GIVEN the bad workflow, which stores the step's coroutine and never awaits it
    fakes = example_env()
    github = inject(fakes["GITHUB"], "list_issues")  # a spy
    # WHEN it runs
    _, inst = _run(BadAwaitStepsWorkflow, fakes)
    # THEN the instance errored, naming the step, instead of completing without its result
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None
    assert status.error.name == "UnawaitedStepError"
    assert repr(STEP) in status.error.message
    assert "await" in status.error.message
    # and the step never ran: nothing recorded, GitHub never called
    assert github.calls == 0
    assert inst.journal() == []
