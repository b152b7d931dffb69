"""Rules of Workflows: "Use conditional logic carefully".

Branch only on values that are the same on every replay.

A branch on a step's result, on the event's payload or on a constant takes the same path on
every replay. A branch on a random number (or the time) drawn outside a step may take another
path on the next replay, and the steps no longer match what was recorded. Draw the value in
a step and branch on its result.
"""

from __future__ import annotations

import random
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


class ConditionalLogicWorkflow(WorkflowEntrypoint):
    """Branches on a step result, on the payload, and on a random number drawn in a step."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        done: list[str] = []
        config = await step.do("fetch config", lambda: self.env.KV.get("feature-flags"))

        # ✅ Good: the condition is a step's result, recorded once.
        if config["enable_email_notifications"]:
            done.append(await step.do("send email", lambda: "email sent"))

        # ✅ Good: the condition is the event's payload, which never changes.
        if event.payload.get("user_type") == "premium":
            done.append(await step.do("premium processing", lambda: "premium processed"))

        # ✅ Good: the random draw happens in a step, so replays reuse the recorded answer.
        should_process = await step.do("decide randomly", lambda: random.random() > 0.5)
        if should_process:
            done.append(await step.do("conditionally do something", lambda: "did something"))
        return done


class BadConditionalLogicWorkflow(WorkflowEntrypoint):
    """🔴 A branch on a random number drawn outside any step."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # 🔴 Bad: each replay draws again, so the workflow may do the step in one run and not
        # in the next.
        if random.random() > 0.5:  # lambda-workflows: ignore[WF102]
            await step.do("maybe do something", lambda: "did something")
