"""Rules of Workflows: "Name steps deterministically".

A step's name must be the same on every replay.

A step's recorded result is found by its name. A name containing the time (or anything
random) is new on every replay, so the result is never found and the step runs again, every
time a later step fails or the instance resumes. Names built deterministically from step
results or the event are fine, e.g. one step per item of a list a step returned.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


class DeterministicStepNamesWorkflow(WorkflowEntrypoint):
    """Fixed step names, and one step per cat of a list returned by a step."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # ✅ Good: a fixed name. Dynamic values go into the result or a log line.
        async def fetch_user_data() -> Any:
            user_data = self.env.KV.get(event.payload["user"])
            self.logger.info("fetched at %s", time.time())
            return user_data

        state = await step.do("fetch user data from KV", fetch_user_data)

        # ✅ Good: names made from a step's result, walked in a fixed order (no shuffling, no
        # random picks), come out the same on every replay: one step per cat is fine.
        cat_list = await step.do("get cat list from KV", lambda: self.env.KV.get("cat-list"))
        cats = []
        for cat in cat_list:
            cats.append(await step.do(f"get cat: {cat}", functools.partial(self.env.KV.get, cat)))
        return {"user": state, "cats": cats}


class BadDeterministicStepNamesWorkflow(WorkflowEntrypoint):
    """🔴 A step named after the current time (and it also changes the event)."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # 🔴 Bad: the name holds the time, so the step's result is never found on replay and
        # the step runs again whenever a later step fails.
        async def fetch_user_data() -> None:
            user_data = self.env.KV.get(event.payload["user"])
            # Never change event.payload either (see dont_mutate_event).
            event.payload = user_data  # lambda-workflows: ignore[WF105]

        await step.do(
            f"step #1 running at: {time.time()}",  # lambda-workflows: ignore[WF101]
            fetch_user_data,
        )
