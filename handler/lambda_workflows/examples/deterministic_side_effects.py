"""Rules of Workflows: "Avoid doing side effects outside of a step".

Do side effects and read randomness only inside steps.

Everything in ``run()`` outside a step runs again on every replay: an instance created there
is created again, a random number is drawn again (and the replay may take another path), a
log line is written again. Inside a step it happens until the step succeeds once, and then
replays return the recorded result. Calls without side effects may stay outside.
"""

from __future__ import annotations

import random
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep

from ._fakes import create_db_connection


class AnotherWorkflow(WorkflowEntrypoint):
    """The workflow the examples start from a step (Cloudflare's ``ANOTHER_WORKFLOW``)."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("say hello", lambda: f"hello from {event.instance_id}")


class DeterministicSideEffectsWorkflow(WorkflowEntrypoint):
    """Random numbers, logs and instance creation where they belong."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # ⚠️ This line is outside any step, so each replay logs it again.
        self.logger.info("This might be logged more than once")

        def do_some_stuff() -> None:
            # Logged when the step runs, not when it is replayed from its result.
            self.logger.info("successfully did stuff")

        await step.do("do some stuff and have a log for when it runs", do_some_stuff)

        # ✅ Good: draw the random number in a step; replays reuse the recorded number.
        good_random = await step.do("create a random number", lambda: random.random())

        # ✅ Good: building a connection object does no I/O, so it may happen outside a step
        # (a pooled connection such as Hyperdrive is better opened inside each step).
        db = create_db_connection(self.env.DB_URL, self.env.DB_TOKEN)

        # ✅ Good: create the other instance in a step: it is created once, and replays get
        # its id back from the step's result.
        def create_instance() -> str:
            instance = self.env.workflow("another-workflow").create()
            instance_id: str = instance.id
            return instance_id

        good_instance = await step.do("good step that returns state", create_instance)
        return {"random": good_random, "instance": good_instance, "database": db.url}


class BadDeterministicSideEffectsWorkflow(WorkflowEntrypoint):
    """🔴 An instance created and a random number drawn outside any step."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # 🔴 Bad: creating an instance outside a step. Every replay of run() creates one more.
        another = self.env.workflow("another-workflow")
        bad_instance = another.create()  # lambda-workflows: ignore[WF103]

        # 🔴 Bad: a random number outside a step. A replay draws a new one, so two runs of the
        # same instance can go down different paths.
        bad_random = random.random()  # lambda-workflows: ignore[WF102]
        if bad_random > 0.5:
            await step.do("do some stuff", lambda: "stuff")

        return {"instance": bad_instance.id}
