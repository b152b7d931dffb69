"""Rules of Workflows: "Make your steps granular".

One step per unrelated API or binding call.

When each call has its own step, a failure retries only that call, and each step gets the
retry and timeout policy that suits its service (go easy on http.cat when it is down).
Two services in one step means a failure of the second repeats the first, and the step as a
whole may stop being idempotent.
"""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


class GranularStepsWorkflow(WorkflowEntrypoint):
    """Read the cutest cat from KV, then fetch its image, in two separate steps."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # ✅ Good: each service is called from its own step, so each retries on its own.
        http_cat = await step.do(
            "get cutest cat from KV", lambda: self.env.KV.get("cutest-http-cat")
        )
        image = await step.do(
            "fetch cat image from http.cat",
            {"retries": {"limit": 3, "delay": "10 seconds", "backoff": "exponential"}},
            lambda: self.env.HTTP_CAT.fetch(http_cat),
        )
        return image


class BadGranularStepsWorkflow(WorkflowEntrypoint):
    """🔴 KV and http.cat in one step."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # 🔴 Bad: two services in one step. If http.cat fails, the retry reads KV again, and
        # with services that are not idempotent the step could do damage on every retry.
        async def cat_and_image() -> Any:
            http_cat = self.env.KV.get("cutest-http-cat")
            return self.env.HTTP_CAT.fetch(http_cat)  # lambda-workflows: ignore[WF108]

        return await step.do("get cutest cat from KV", cat_and_image)
