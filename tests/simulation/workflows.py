"""The workflow classes that interpret programs, and what ``run()`` and the rollbacks saw.

One interpreter, registered under four names (their class attributes differ): the plain
workflow, the children's, a limited one (``concurrency = LIMIT``) and a scheduled one
(``schedules = [SCHEDULE]``), whose program is derived from its firing's scheduled time.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lambda_workflows import NonRetryableError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import StepFailedError, WorkflowTimeoutError
from lambda_workflows.engine.frozen import thaw
from lambda_workflows.engine.replay.operations.base import current_step

from .program import (
    CHILD,
    LIMIT,
    LIMITED,
    SCHEDULE,
    SCHEDULED,
    WORKFLOW,
    Child,
    Do,
    Gather,
    Program,
    Sleep,
    Wait,
)


class StepBoom(Exception):
    """What a failing callback attempt raises."""


class UndoBoom(Exception):
    """What a failing rollback attempt raises."""


def result_value(program: int, name: str, attempt: int) -> str:
    """What the callback of step ``name`` returns on ``attempt`` (a pure function)."""
    digest = hashlib.sha256(f"{program}/{name}/{attempt}".encode()).hexdigest()[:8]
    return f"{name}@{attempt}:{digest}"


def failure(op: Do, attempt: int) -> tuple[str, str]:
    """The (error name, message) failed attempt ``attempt`` of ``op`` records."""
    if op.nonretryable and attempt == op.fail:
        return "NonRetryableError", f"{op.name} refused on attempt {attempt}"
    return "StepBoom", f"{op.name} failed on attempt {attempt}"


def undo_failure(op: Do, attempt: int) -> tuple[str, str]:
    """The (error name, message) failed rollback attempt ``attempt`` of ``op`` records."""
    return "UndoBoom", f"undo of {op.name} failed on attempt {attempt}"


def scheduled_program(scheduled_time: str) -> Program:
    """What the instance of one firing runs: a pure function of its scheduled time (a step
    that may fail once, a sleep long enough to overlap the next firing now and then, a step)."""
    seed = int(hashlib.sha256(scheduled_time.encode()).hexdigest()[:8], 16)
    return Program(
        seed % 100_000,
        (
            Do("tick", fail=seed % 2, limit=1, delay=30.0),
            Sleep("rest", (600.0, 1800.0, 5400.0)[seed % 3]),
            Do("tock"),
        ),
    )


@dataclass
class UndoCall:
    """One call of a rollback: which step, what it got."""

    step: str
    attempt: int
    output: Any
    cause: str


@dataclass
class Observations:
    """What run() and the rollbacks saw, per instance, across every replay in this process;
    and the hooks the driver acts from (a step callback starts; run() reaches an op)."""

    seen: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    undone: dict[str, list[UndoCall]] = field(default_factory=dict)
    on_callback: Callable[[str, str, str], None] | None = None
    on_reach: Callable[[str, str], None] | None = None
    dead: Callable[[], bool] = lambda: False  # the invocation crashed: what it sees is moot

    def saw(self, instance_id: str, label: str, value: Any) -> None:
        if not self.dead():
            self.seen.setdefault(instance_id, []).append((label, value))

    def forget(self, instance_ids: list[str]) -> None:
        for iid in instance_ids:
            self.seen.pop(iid, None)
            self.undone.pop(iid, None)


OBSERVED = Observations()


def _callback(program: int, op: Do, instance_id: str, workflow: str) -> Callable[[Any], Any]:
    async def attempt(ctx: Any) -> str:
        if OBSERVED.on_callback is not None and not OBSERVED.dead():
            OBSERVED.on_callback(workflow, instance_id, op.name)
        if ctx.attempt <= op.fail:
            name, message = failure(op, ctx.attempt)
            raise NonRetryableError(message) if name == "NonRetryableError" else StepBoom(message)
        return result_value(program, op.name, ctx.attempt)

    return attempt


def _undo(op: Do, instance_id: str) -> Callable[[Any, Any, Any], Any]:
    async def undo(ctx: Any, output: Any, error: Any) -> None:
        running = current_step()
        attempt = running[1] if running is not None else 0
        if not OBSERVED.dead():
            call = UndoCall(op.name, attempt, plain(output), error.name)
            OBSERVED.undone.setdefault(instance_id, []).append(call)
        if attempt <= op.undo_fail:
            raise UndoBoom(undo_failure(op, attempt)[1])

    return undo


def caught(exc: StepFailedError) -> dict[str, Any]:
    return {"caught": [exc.error_name, exc.message]}


def plain(value: Any) -> Any:
    """A value as run() saw it, made comparable: JSON types, or a marker for anything else."""
    if isinstance(value, BaseException):
        return {"unexpected": f"{type(value).__name__}: {value}"}
    return thaw(value)


class ChaosWorkflow(WorkflowEntrypoint):
    """Interprets the program in its params; returns ``[[label, value], ...]``."""

    registered_as: ClassVar[str] = WORKFLOW

    def program(self, payload: Any) -> Program:
        return Program.from_json(payload)

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        program = self.program(thaw(event.payload))
        run = _Run(program, event.instance_id, step, self.registered_as)
        for op in program.ops:
            if OBSERVED.on_reach is not None and not OBSERVED.dead():
                OBSERVED.on_reach(event.instance_id, _first_name(op))
            await run.op(op)
        return run.output


class ChaosChild(ChaosWorkflow):
    """The children's workflow."""

    registered_as = CHILD


class ChaosLimited(ChaosWorkflow):
    """A workflow with a concurrency limit."""

    registered_as = LIMITED
    concurrency = LIMIT


class ChaosScheduled(ChaosWorkflow):
    """A workflow with a recurring schedule; each firing runs its own program."""

    registered_as = SCHEDULED
    schedules: ClassVar[list[str]] = []  # declared only while a case deploys it

    def program(self, payload: Any) -> Program:
        return scheduled_program(str(payload["scheduled_time"]))


def declare_schedule(deployed: bool) -> None:
    """Deploy (or remove) the scheduled workflow's ``schedules = [SCHEDULE]``: outside a case
    that deploys it, the sweep must not see a schedule to recover firings of."""
    ChaosScheduled.schedules = [SCHEDULE] if deployed else []


WORKFLOWS: dict[str, type[WorkflowEntrypoint]] = {
    cls.registered_as: cls for cls in (ChaosWorkflow, ChaosChild, ChaosLimited, ChaosScheduled)
}


def _first_name(op: Any) -> str:
    return op.children[0].name if isinstance(op, Gather) else str(op.name)


class _Run:
    """One replay of run(): performs ops, collects the output."""

    def __init__(self, program: Program, iid: str, step: WorkflowStep, workflow: str) -> None:
        self.program = program
        self.iid = iid
        self.step = step
        self.workflow = workflow
        self.output: list[Any] = []

    def saw(self, label: str, value: Any) -> None:
        OBSERVED.saw(self.iid, label, plain(value))
        self.output.append([label, plain(value)])

    async def op(self, op: Any) -> None:
        if isinstance(op, Gather):
            await self.gather(op)
        elif isinstance(op, Wait):
            try:
                got = await self.step.wait_for_event(op.name, type=op.type, timeout=op.timeout)
                value: Any = {"event": thaw(got.payload)}
            except WorkflowTimeoutError:
                value = {"timeout": True}
            self.saw(op.name, value)
        else:
            try:
                value = await self.call(op)
            except StepFailedError as exc:
                if not getattr(op, "catch", False):
                    raise
                value = caught(exc)
            self.saw(op.name, value)

    def call(self, op: Do | Sleep | Child) -> Any:
        if isinstance(op, Sleep):
            return self.step.sleep(op.name, op.seconds)
        if isinstance(op, Child):
            params = op.program(self.program.number).to_json()
            return self.step.run_workflow(op.name, workflow=op.workflow, params=params)
        callback = _callback(self.program.number, op, self.iid, self.workflow)
        if not op.undo:
            return self.step.do(op.name, op.config(), callback)
        undo = _undo(op, self.iid)
        return self.step.do(
            op.name, op.config(), callback, rollback=undo, rollback_config=op.undo_config()
        )

    async def gather(self, op: Gather) -> None:
        calls = [self.call(c) for c in op.children]
        if op.collect:
            results = await asyncio.gather(*calls, return_exceptions=True)
        else:
            results = await asyncio.gather(*calls)
        for child, result in zip(op.children, results, strict=True):
            self.saw(child.name, caught(result) if isinstance(result, StepFailedError) else result)
