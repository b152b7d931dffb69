"""Rules of Workflows: "Don't mutate your incoming events".

Treat the incoming event as read-only.

A change to ``event.payload`` is not saved: the next replay starts from the original event.
(This engine goes further and raises ``EventMutationError``.) To carry new data forward,
return it from a step and use the step's result.
"""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


class DontMutateEventWorkflow(WorkflowEntrypoint):
    """Load the user's data in one step and use it in the next."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # ✅ Good: the data a later step needs is this step's result.
        user_data = await step.do(
            "good step that returns state", lambda: self.env.KV.get(event.payload["user"])
        )

        async def use_user_data() -> dict[str, Any]:
            # user_data is available here, and is the same on every retry of this step.
            return {"greeting": f"hello {user_data['name']}" if user_data else "hello stranger"}

        some_other_data = await step.do("following step that uses that state", use_user_data)
        return some_other_data


class BadDontMutateEventWorkflow(WorkflowEntrypoint):
    """🔴 A step writes its result into the event."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # 🔴 Bad: the new payload is not persisted; a replay sees the original payload again.
        async def load_user_into_event() -> None:
            user_data = self.env.KV.get(event.payload["user"])
            event.payload = user_data  # lambda-workflows: ignore[WF105]

        await step.do("bad step that mutates the incoming event", load_user_into_event)
        return event.payload
