"""Instances of many steps that each failed once, built in seconds: a real run records one such
step, and its entries are written again, renamed, through the store's own write method (running
25,000 steps through the runner would take minutes)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine import codec
from lambda_workflows.engine.instances.transitions import Change
from lambda_workflows.engine.model import ErrorInfo, InstanceRef, InstanceStatus, JournalEntry
from lambda_workflows.testing import WorkflowTestEnv

ONE_RETRY = {"retries": {"limit": 1, "delay": 0}}


class FlakySteps(WorkflowEntrypoint):
    """``params["steps"]`` steps, each failing its first attempt, then returning its number."""

    max_steps = 25_000

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for number in range(event.payload["steps"]):

            def once(ctx: Any, number: int = number) -> int:
                if ctx.attempt == 1:
                    raise ConnectionError(f"step {number} lost its connection")
                return number

            await step.do(f"step {number}", ONE_RETRY, once)
        return event.payload["steps"]


def record_many_steps(env: WorkflowTestEnv, workflow: str, instance_id: str, steps: int) -> None:
    """A complete instance of ``workflow`` (a :class:`FlakySteps`) with ``steps`` steps, each
    recorded as the engine records it: a failed attempt with its traceback, then its result."""
    template = env.create(workflow, id=f"{instance_id}-template", params={"steps": 1})
    env.run_until_idle()
    recorded = sorted(template.journal(), key=lambda entry: entry.attempt)
    assert [entry.kind for entry in recorded] == ["attempt", "step"]
    env.create(workflow, id=instance_id, params={"steps": steps})
    ref = InstanceRef(workflow, instance_id)
    record = env.store.get(ref)
    for number in range(steps):
        for entry in recorded:
            env.store.record(ref, record.generation, renamed(entry, number))
    done = Change(
        status=InstanceStatus.COMPLETE,
        finished_at=env.clock.time() + steps,
        output=codec.encode(steps),
        due_at=None,
    )
    assert env.store.update(ref, record.version, done) is not None


def renamed(entry: JournalEntry, number: int) -> JournalEntry:
    """The template's entry of ``step 0`` as step ``number``'s, ``number`` seconds later."""

    def moved(when: float | None) -> float | None:
        return None if when is None else when + number

    name = f"step {number}"
    error = entry.error
    if error is not None:
        error = ErrorInfo(
            error.name,
            error.message.replace("step 0", name),
            (error.traceback or "").replace("step 0", name) or None,
        )
    return dataclasses.replace(
        entry,
        key=entry.key.replace("step 0", name, 1),
        name=name,
        position=number + 1,
        at=entry.at + number,
        started_at=moved(entry.started_at),
        attempt_started_at=moved(entry.attempt_started_at),
        wake_at=moved(entry.wake_at),
        error=error,
        result=None if entry.result is None else json.dumps(number),
    )


LOUD_MESSAGE = 8_000  # characters: the most of an error message the journal keeps


class LoudSteps(WorkflowEntrypoint):
    """``params["steps"]`` steps, each failing its first attempt with an 8,000-character message
    (about 9 KB a row with its traceback), then returning its number."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for number in range(event.payload["steps"]):

            def once(ctx: Any, number: int = number) -> int:
                if ctx.attempt == 1:
                    raise RuntimeError(f"step {number}: " + "x" * LOUD_MESSAGE)
                return number

            await step.do(f"loud {number}", ONE_RETRY, once)
        return event.payload["steps"]


class StubbornStep(WorkflowEntrypoint):
    """One step that fails ``params["failures"]`` times before it returns."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        failures = event.payload["failures"]

        def attempt(ctx: Any) -> int:
            if ctx.attempt <= failures:
                raise TimeoutError(f"attempt {ctx.attempt} timed out")
            return ctx.attempt

        return await step.do("stubborn", {"retries": {"limit": failures, "delay": 0}}, attempt)
