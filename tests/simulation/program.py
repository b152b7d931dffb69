"""A random workflow program, the one workflow class that interprets it, and the
values ``run()`` saw.

A program is data (it travels as the instance's params): sequential and gathered ``step.do``
calls whose callbacks fail a chosen number of attempts, ``NonRetryableError``, failures caught
in ``run()``, short and long sleeps, event waits (events sent before, during and after the run
reaches them; several of one type) and a wait that times out. Callback results are a pure
function of (program, step name, attempt), so every run of a program must end the same way.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lambda_workflows import NonRetryableError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import StepFailedError, WorkflowTimeoutError
from lambda_workflows.engine.frozen import thaw

WORKFLOW = "chaos"
EVENT_TIMEOUT = 30 * 86_400.0  # far beyond any run: a wait with an event never times out


class StepBoom(Exception):
    """What a failing callback attempt raises."""


@dataclass(frozen=True)
class Do:
    """``step.do(name, {"retries": ...}, callback)``: attempts 1..fail fail, then it succeeds.

    ``nonretryable``: attempt ``fail`` raises NonRetryableError. ``catch``: run() catches the
    StepFailedError. ``sends``: events the driver sends while this callback first runs.
    """

    name: str
    fail: int = 0
    limit: int = 0
    delay: float = 1.0
    backoff: str = "constant"
    nonretryable: bool = False
    catch: bool = False
    sends: tuple[int, ...] = ()

    @property
    def fails_for_good(self) -> bool:
        return self.nonretryable or self.fail > self.limit

    @property
    def last_attempt(self) -> int:
        """The attempt that ends the step (its success or its final failure)."""
        if self.nonretryable:
            return self.fail
        return self.limit + 1 if self.fail > self.limit else self.fail + 1

    def config(self) -> dict[str, Any]:
        return {"retries": {"limit": self.limit, "delay": self.delay, "backoff": self.backoff}}


@dataclass(frozen=True)
class Sleep:
    """``step.sleep(name, seconds)``."""

    name: str
    seconds: float


@dataclass(frozen=True)
class Wait:
    """``step.wait_for_event(name, type=..., timeout=...)``; a timeout is caught in run()."""

    name: str
    type: str
    timeout: float = EVENT_TIMEOUT

    @property
    def times_out(self) -> bool:
        return self.timeout < EVENT_TIMEOUT


@dataclass(frozen=True)
class Gather:
    """``asyncio.gather`` of steps; ``collect``: with ``return_exceptions=True``."""

    children: tuple[Do | Sleep, ...]
    collect: bool = False


Op = Do | Sleep | Wait | Gather


@dataclass(frozen=True)
class EventPlan:
    """One event the driver sends: its type, and when (``early``, ``during``, ``late``)."""

    type: str
    when: str


@dataclass(frozen=True)
class Program:
    """What a case runs: the ops of run(), the events to send, how many instances, and how
    the runners pace themselves (``eager``: look for signals before every step, never wait
    in-process; ``lambda``: the deployed settings, short retry delays slept in-process)."""

    number: int  # seeds 2k and 2k+1 run program k
    ops: tuple[Op, ...]
    events: tuple[EventPlan, ...] = ()
    instances: int = 1
    pacing: str = "eager"

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "instances": self.instances,
            "pacing": self.pacing,
            "events": [[e.type, e.when] for e in self.events],
            "ops": [_op_json(op) for op in self.ops],
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Program:
        return Program(
            number=int(data["number"]),
            ops=tuple(_op_from(op) for op in data["ops"]),
            events=tuple(EventPlan(t, w) for t, w in data["events"]),
            instances=int(data["instances"]),
            pacing=str(data["pacing"]),
        )

    def steps(self) -> list[Op]:
        """Every step call in program order (gathered children in place of their gather)."""
        found: list[Op] = []
        for op in self.ops:
            found.extend(op.children if isinstance(op, Gather) else (op,))
        return found

    def describe(self) -> str:
        """The ops in one line, for a failure report."""
        return f"{self.instances} instance(s), {self.pacing} runners: " + "; ".join(
            _describe(op) for op in self.ops
        )


def _op_json(op: Op) -> dict[str, Any]:
    if isinstance(op, Gather):
        return {"gather": [_op_json(c) for c in op.children], "collect": op.collect}
    kind = type(op).__name__.lower()
    fields = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(op).items()}
    return {"kind": kind, **fields}


def _op_from(data: dict[str, Any]) -> Op:
    if "gather" in data:
        children = tuple(_op_from(c) for c in data["gather"])
        return Gather(children, bool(data["collect"]))  # type: ignore[arg-type]
    fields = {k: v for k, v in data.items() if k != "kind"}
    if data["kind"] == "do":
        return Do(**{**fields, "sends": tuple(fields.get("sends", ()))})
    if data["kind"] == "sleep":
        return Sleep(**fields)
    return Wait(**fields)


def _describe(op: Op) -> str:
    if isinstance(op, Gather):
        inner = ", ".join(_describe(c) for c in op.children)
        return f"gather{'(return_exceptions)' if op.collect else ''}[{inner}]"
    if isinstance(op, Do):
        extra = " nonretryable" if op.nonretryable else ""
        extra += " caught" if op.catch else ""
        extra += f" sends {list(op.sends)}" if op.sends else ""
        return (
            f"do {op.name} fail {op.fail}/limit {op.limit} delay {op.delay:g}s {op.backoff}{extra}"
        )
    if isinstance(op, Sleep):
        return f"sleep {op.name} {op.seconds:g}s"
    return f"wait {op.name} type {op.type}" + (f" timeout {op.timeout:g}s" if op.times_out else "")


# --- generating -------------------------------------------------------------------------------


def generate(number: int) -> Program:
    """Program ``number`` (same number, same program)."""
    rng = random.Random(f"program-{number}")
    ops: list[Op] = []
    events: list[EventPlan] = []
    for i in range(rng.randint(2, 7)):
        kind = rng.choices(["do", "gather", "sleep", "wait", "timeout"], [35, 15, 15, 25, 10])[0]
        if kind == "do":
            ops.append(_random_do(rng, f"s{i}", may_fail=True))
        elif kind == "gather":
            collect = rng.random() < 0.3
            children: list[Do | Sleep] = []
            for j in range(rng.randint(2, 3)):
                name = f"g{i}-{j}"
                if rng.random() < 0.2:
                    children.append(Sleep(name, rng.choice([5.0, 3600.0])))
                else:
                    children.append(_random_do(rng, name, may_fail=collect))
            ops.append(Gather(tuple(children), collect))
        elif kind == "sleep":
            ops.append(Sleep(f"s{i}", rng.choice([1.0, 30.0, 1800.0, 3 * 3600.0])))
        elif kind == "timeout":
            ops.append(Wait(f"s{i}", f"never{i}", rng.choice([600.0, 3600.0, 7200.0])))
        else:
            ops.append(Wait(f"s{i}", rng.choice(["a", "a", "b"])))
            earlier = [k for k, op in enumerate(ops[:-1]) if isinstance(op, Do)]
            when = rng.choice(["early", "late", "during"] if earlier else ["early", "late"])
            events.append(EventPlan(ops[-1].type, when))  # type: ignore[union-attr]
            if when == "during":
                k = rng.choice(earlier)
                host = ops[k]
                assert isinstance(host, Do)
                ops[k] = Do(**{**vars(host), "sends": (*host.sends, len(events) - 1)})
    if rng.random() < 0.15:  # an uncaught failure ends the instance as errored
        fail = rng.randint(1, 2)
        ops.append(Do(f"s{len(ops)}", fail=fail, limit=fail - 1, nonretryable=rng.random() < 0.3))
    instances = 2 if rng.random() < 0.2 else 1
    return Program(number, tuple(ops), tuple(events), instances, rng.choice(["eager", "lambda"]))


def _random_do(rng: random.Random, name: str, *, may_fail: bool) -> Do:
    limit = rng.choice([0, 1, 2, 3])
    long_delay = rng.random() < 0.3  # > 15 minutes: a scheduled wake-up, as short ones are here
    delay = rng.choice([1200.0, 3600.0]) if long_delay else rng.choice([1.0, 5.0, 30.0])
    backoff = rng.choice(["constant", "linear", "exponential"])
    fail = rng.choices(range(limit + 2), [4] + [2] * limit + [1 if may_fail else 0])[0]
    nonretryable = may_fail and fail >= 1 and rng.random() < 0.2
    do = Do(name, fail, limit, delay, backoff, nonretryable)
    return Do(**{**vars(do), "catch": do.fails_for_good})


# --- the workflow -----------------------------------------------------------------------------


def result_value(program: int, name: str, attempt: int) -> str:
    """What the callback of step ``name`` returns on ``attempt`` (a pure function)."""
    digest = hashlib.sha256(f"{program}/{name}/{attempt}".encode()).hexdigest()[:8]
    return f"{name}@{attempt}:{digest}"


def failure(op: Do, attempt: int) -> tuple[str, str]:
    """The (error name, message) failed attempt ``attempt`` of ``op`` records."""
    if op.nonretryable and attempt == op.fail:
        return "NonRetryableError", f"{op.name} refused on attempt {attempt}"
    return "StepBoom", f"{op.name} failed on attempt {attempt}"


@dataclass
class Observations:
    """What run() saw, per instance, across every replay in this process; and a hook called
    whenever a step callback starts (the driver sends events from there)."""

    seen: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    on_callback: Callable[[str, str], None] | None = None
    dead: Callable[[], bool] = lambda: False  # the invocation crashed: what it sees is moot

    def saw(self, instance_id: str, label: str, value: Any) -> None:
        if not self.dead():
            self.seen.setdefault(instance_id, []).append((label, value))


OBSERVED = Observations()


def _callback(program: int, op: Do, instance_id: str) -> Callable[[Any], Any]:
    async def attempt(ctx: Any) -> str:
        if OBSERVED.on_callback is not None and not OBSERVED.dead():
            OBSERVED.on_callback(instance_id, op.name)
        if ctx.attempt <= op.fail:
            name, message = failure(op, ctx.attempt)
            raise NonRetryableError(message) if name == "NonRetryableError" else StepBoom(message)
        return result_value(program, op.name, ctx.attempt)

    return attempt


def caught(exc: StepFailedError) -> dict[str, Any]:
    return {"caught": [exc.error_name, exc.message]}


def plain(value: Any) -> Any:
    """A value as run() saw it, made comparable: JSON types, or a marker for anything else."""
    if isinstance(value, BaseException):
        return {"unexpected": f"{type(value).__name__}: {value}"}
    return thaw(value)


class ChaosWorkflow(WorkflowEntrypoint):
    """Interprets the program in its params; returns ``[[label, value], ...]``."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        program = Program.from_json(thaw(event.payload))
        iid = event.instance_id
        output: list[Any] = []

        def saw(label: str, value: Any) -> None:
            OBSERVED.saw(iid, label, plain(value))
            output.append([label, plain(value)])

        for op in program.ops:
            if isinstance(op, Do):
                try:
                    value = await step.do(op.name, op.config(), _callback(program.number, op, iid))
                except StepFailedError as exc:
                    if not op.catch:
                        raise
                    value = caught(exc)
                saw(op.name, value)
            elif isinstance(op, Sleep):
                await step.sleep(op.name, op.seconds)
                saw(op.name, None)
            elif isinstance(op, Wait):
                try:
                    got = await step.wait_for_event(op.name, type=op.type, timeout=op.timeout)
                    value = {"event": thaw(got.payload)}
                except WorkflowTimeoutError:
                    value = {"timeout": True}
                saw(op.name, value)
            else:
                calls = [
                    step.do(c.name, c.config(), _callback(program.number, c, iid))
                    if isinstance(c, Do)
                    else step.sleep(c.name, c.seconds)
                    for c in op.children
                ]
                if op.collect:
                    results = await asyncio.gather(*calls, return_exceptions=True)
                else:
                    results = await asyncio.gather(*calls)
                for child, result in zip(op.children, results, strict=True):
                    saw(
                        child.name,
                        caught(result) if isinstance(result, StepFailedError) else result,
                    )
        return output
