"""Rules of Workflows: "Don't rely on state outside of a step".

Build state only from step results.

``run()`` starts from the top in every new invocation (after a long sleep the instance
hibernates, and the next invocation is a new process). Local variables changed by a step's
callback are not saved; a step's *return value* is, and a replay hands it back.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


def get_random_int(low: int, high: int) -> int:
    """A random integer with ``low <= n < high`` (fine inside a step, not outside)."""
    return random.randrange(low, high)


class NoStateOutsideStepsWorkflow(WorkflowEntrypoint):
    """Collect two cats as step results, sleep, then download one of them."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # ✅ Good: image_list is made of step results only, so every invocation rebuilds it
        # identically from the recorded values.
        image_list = await asyncio.gather(
            step.do("get first cutest cat from KV", lambda: self.env.KV.get("cutest-http-cat-1")),
            step.do("get second cutest cat from KV", lambda: self.env.KV.get("cutest-http-cat-2")),
        )

        # A long sleep ends this invocation: the instance hibernates until it is due.
        await step.sleep("💤💤💤💤", "3 hours")

        # This runs in a later invocation, and image_list still holds both cats.
        async def download_random_cat() -> Any:
            random_cat = image_list[get_random_int(0, len(image_list))]
            return self.env.HTTP_CAT.fetch(random_cat)

        return await step.do(
            "choose a random cat from the list and download it", download_random_cat
        )


class BadNoStateOutsideStepsWorkflow(WorkflowEntrypoint):
    """🔴 Steps append to a list of run(); the list is empty again after the sleep."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # 🔴 Bad: image_list lives only as long as this invocation. After the sleep below the
        # next invocation starts with an empty list, although both steps have already run
        # (they are replayed from their results, which are None, and never append again).
        image_list: list[Any] = []

        async def get_first_cat() -> None:
            http_cat = self.env.KV.get("cutest-http-cat-1")
            image_list.append(http_cat)  # lambda-workflows: ignore[WF106]

        await step.do("get first cutest cat from KV", get_first_cat)

        async def get_second_cat() -> None:
            http_cat = self.env.KV.get("cutest-http-cat-2")
            image_list.append(http_cat)  # lambda-workflows: ignore[WF106]

        await step.do("get second cutest cat from KV", get_second_cat)

        # A long sleep ends this invocation: the instance hibernates until it is due.
        await step.sleep("💤💤💤💤", "3 hours")

        # This runs in a later invocation, where image_list is empty.
        async def download_random_cat() -> Any:
            # Fails: there is no cat to choose from (randrange of an empty range).
            random_cat = image_list[get_random_int(0, len(image_list))]
            return self.env.HTTP_CAT.fetch(random_cat)

        return await step.do(
            "choose a random cat from the list and download it", download_random_cat
        )
