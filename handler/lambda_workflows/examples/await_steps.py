"""Rules of Workflows: "Always await your steps".

Always await a step (or hand it to ``asyncio.gather``).

``step.do(...)`` returns a coroutine. Not awaited, the step never runs to completion: its
result and any error are lost, and the workflow goes on as if it had not been called.
"""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


class AwaitStepsWorkflow(WorkflowEntrypoint):
    """Fetch a repository's issues in an awaited step."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def fetch_issues() -> Any:
            return self.env.GITHUB.list_issues(event.payload["repo_name"])

        # ✅ Good: the step is awaited, so its result (or its error) comes back here.
        good_issues = await step.do("fetch issues from GitHub", fetch_issues)

        # The rest of the workflow goes here.
        return good_issues


class BadAwaitStepsWorkflow(WorkflowEntrypoint):
    """🔴 The step's coroutine is stored and never awaited."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def fetch_issues() -> Any:
            # Never runs to completion: nothing waits for the step.
            return self.env.GITHUB.list_issues(event.payload["repo_name"])

        # 🔴 Bad: not awaited; the result and any error are swallowed.
        name = "fetch issues from GitHub"
        bad_issues = step.do(name, fetch_issues)  # lambda-workflows: ignore[WF104]
        self.logger.info("issues: %s", bad_issues)
