"""Rules of Workflows: "Take care with Promise.race() and Promise.any()".

Wrap a race between steps in a ``step.do``.

A race (``Promise.race`` in JavaScript; here :func:`first_completed`, i.e.
``asyncio.wait(..., return_when=FIRST_COMPLETED)``) outside a step is decided again on every
replay, where recorded steps finish instantly: the winner can change, and the workflow goes on
with a value that differs from the first run. Inside a ``step.do`` the winner is recorded once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep

T = TypeVar("T")


async def first_completed(*contenders: Awaitable[T]) -> T:
    """The result of whichever awaitable finishes first; the others are cancelled."""
    tasks = [asyncio.ensure_future(contender) for contender in contenders]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    winner = next(task for task in tasks if task in done)  # ties go to the first argument
    return winner.result()


async def _first() -> str:
    await asyncio.sleep(0.05)  # the slower contender
    return "first"


async def _second() -> str:
    return "second"


class RaceInsideStepWorkflow(WorkflowEntrypoint):
    """Race two steps inside a step, sleep, then use the recorded winner."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # ✅ Good: the race runs inside a step.do, so its winner is recorded and replays
        # return that same winner.
        async def race() -> str:
            return await first_completed(
                step.do("Promise first race", _first),
                step.do("Promise second race", _second),
            )

        race_return = await step.do("Promise step", race)

        await step.sleep("Sleep step", "2 hours")

        # Returns "second", the winner that was recorded by the "Promise step" step.
        return await step.do("Another step", lambda: race_return)


class BadRaceInsideStepWorkflow(WorkflowEntrypoint):
    """🔴 The race between two steps runs in run() itself."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # 🔴 Bad: the race is outside any step.do. After the sleep, run() is replayed and
        # the race is decided again among steps that now return instantly from their
        # records, so the winner (and what the next step sees) can differ from the first run.
        race_return = await first_completed(  # lambda-workflows: ignore[WF107]
            step.do("Promise first race", _first),
            step.do("Promise second race", _second),
        )

        await step.sleep("Sleep step", "2 hours")

        return await step.do("Another step", lambda: race_return)
