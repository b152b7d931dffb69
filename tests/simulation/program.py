"""A random workflow program as data: the ops ``run()`` performs, the events the driver sends,
the instances it starts, the control operation it sends while faults fly, the schedule it
deploys; and the known engine bugs the invariants excuse until their fix lands.

A program travels as an instance's params (``to_json``), so one workflow class interprets
every program (:mod:`.workflows`). Callback results are a pure function of (program, step
name, attempt), so every run of a program must end the same way: the model
(:mod:`.model`) computes that ending from the program alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

WORKFLOW = "chaos"  # the plain workflow: most programs' instances, and every parent
CHILD = "chaos-child"  # children started by step.run_workflow
LIMITED = "chaos-limited"  # concurrency = LIMIT
SCHEDULED = "chaos-scheduled"  # schedules = [SCHEDULE]
LIMIT = 2
SCHEDULE = "rate(1 hour)"
HOLD = "hold"  # the event type of a Hold wait: sent only after a restart
EVENT_TIMEOUT = 30 * 86_400.0  # far beyond any run: a wait with an event never times out
CONTROLS = ("terminate_rollback", "restart", "restart_from", "delete")


@dataclass(frozen=True)
class Do:
    """``step.do(name, {"retries": ...}, callback)``: attempts 1..fail fail, then it succeeds.

    ``nonretryable``: attempt ``fail`` raises NonRetryableError. ``catch``: run() catches the
    StepFailedError. ``sends``: events the driver sends while this callback first runs.
    ``undo``: the step has a rollback, whose attempts 1..undo_fail fail (retried up to
    ``undo_limit`` times, ``undo_delay`` apart).
    """

    name: str
    fail: int = 0
    limit: int = 0
    delay: float = 1.0
    backoff: str = "constant"
    nonretryable: bool = False
    catch: bool = False
    sends: tuple[int, ...] = ()
    undo: bool = False
    undo_fail: int = 0
    undo_limit: int = 0
    undo_delay: float = 1.0

    @property
    def fails_for_good(self) -> bool:
        return self.nonretryable or self.fail > self.limit

    @property
    def last_attempt(self) -> int:
        """The attempt that ends the step (its success or its final failure)."""
        if self.nonretryable:
            return self.fail
        return self.limit + 1 if self.fail > self.limit else self.fail + 1

    @property
    def undo_fails_for_good(self) -> bool:
        return self.undo_fail > self.undo_limit

    @property
    def undo_last_attempt(self) -> int:
        return self.undo_limit + 1 if self.undo_fails_for_good else self.undo_fail + 1

    def config(self) -> dict[str, Any]:
        return {"retries": {"limit": self.limit, "delay": self.delay, "backoff": self.backoff}}

    def undo_config(self) -> dict[str, Any]:
        retries = {"limit": self.undo_limit, "delay": self.undo_delay, "backoff": "constant"}
        return {"retries": retries}


@dataclass(frozen=True)
class Sleep:
    """``step.sleep(name, seconds)``."""

    name: str
    seconds: float


@dataclass(frozen=True)
class Wait:
    """``step.wait_for_event(name, type=..., timeout=...)``; a timeout is caught in run().
    A wait of type ``HOLD`` gets its event only once a restart sent while it waited is done."""

    name: str
    type: str
    timeout: float = EVENT_TIMEOUT

    @property
    def times_out(self) -> bool:
        return self.timeout < EVENT_TIMEOUT


@dataclass(frozen=True)
class Child:
    """``step.run_workflow(name, workflow=..., params=<the child's program>)``: the child
    runs ``ops`` (steps and sleeps); ``catch``: run() catches the child's failure."""

    name: str
    workflow: str
    ops: tuple[Do | Sleep, ...]
    catch: bool = False

    def program(self, number: int) -> Program:
        return Program(number, self.ops)


@dataclass(frozen=True)
class Gather:
    """``asyncio.gather`` of steps; ``collect``: with ``return_exceptions=True``."""

    children: tuple[Do | Sleep, ...]
    collect: bool = False


Op = Do | Sleep | Wait | Child | Gather
Step = Do | Sleep | Wait | Child


@dataclass(frozen=True)
class EventPlan:
    """One event the driver sends: its type, and when (``early``, ``during``, ``late``)."""

    type: str
    when: str


@dataclass(frozen=True)
class Control:
    """What the driver sends to instance 0 while faults fly: ``kind`` (one of CONTROLS),
    the first time run() reaches op ``at`` (``""``: once the instance finished);
    ``from_step``: the step a restart_from restarts from."""

    kind: str
    at: str = ""
    from_step: str = ""


@dataclass(frozen=True)
class Program:
    """What a case runs: the ops of run(), the events to send, how many instances of which
    workflow, how the runners pace themselves (``eager``: look for signals before every step,
    never wait in-process; ``lambda``: the deployed settings), the control operation, and for
    how many virtual hours the scheduled workflow's schedule is deployed."""

    number: int  # seeds 2k and 2k+1 run program k
    ops: tuple[Op, ...]
    events: tuple[EventPlan, ...] = ()
    instances: int = 1
    pacing: str = "eager"
    workflow: str = WORKFLOW
    control: Control | None = None
    schedule_hours: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "instances": self.instances,
            "pacing": self.pacing,
            "workflow": self.workflow,
            "events": [[e.type, e.when] for e in self.events],
            "ops": [_op_json(op) for op in self.ops],
            "control": None if self.control is None else vars(self.control),
            "schedule_hours": self.schedule_hours,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Program:
        control = data.get("control")
        return Program(
            number=int(data["number"]),
            ops=tuple(_op_from(op) for op in data["ops"]),
            events=tuple(EventPlan(t, w) for t, w in data.get("events", ())),
            instances=int(data.get("instances", 1)),
            pacing=str(data.get("pacing", "eager")),
            workflow=str(data.get("workflow", WORKFLOW)),
            control=None if control is None else Control(**control),
            schedule_hours=int(data.get("schedule_hours", 0)),
        )

    def steps(self) -> list[Step]:
        """Every step call in program order (gathered children in place of their gather)."""
        found: list[Step] = []
        for op in self.ops:
            found.extend(op.children if isinstance(op, Gather) else (op,))
        return found

    def features(self) -> set[str]:
        """The features this program uses (test_chaos checks every one is generated)."""
        steps = self.steps()
        found = {type(s).__name__.lower() for s in steps}
        if any(isinstance(s, Child) and _child_fails(s) for s in steps):
            found.add("failing child")
        if any(isinstance(s, Do) and s.undo for s in steps):
            found.add("rollback")
        if self.workflow == LIMITED and self.instances > LIMIT:
            found.add("concurrency")
        if self.control is not None:
            found.add(self.control.kind)
        if self.schedule_hours:
            found.add("schedule")
        return found

    def describe(self) -> str:
        """The program in one line, for a failure report."""
        head = f"{self.instances} {self.workflow} instance(s), {self.pacing} runners"
        if self.control is not None:
            at = f"at {self.control.at}" if self.control.at else "at the end"
            extra = f" from {self.control.from_step}" if self.control.from_step else ""
            head += f", {self.control.kind}{extra} {at}"
        if self.schedule_hours:
            head += f", {SCHEDULE} deployed for {self.schedule_hours} h"
        return head + ": " + "; ".join(_describe(op) for op in self.ops)


def _child_fails(child: Child) -> bool:
    return any(isinstance(op, Do) and op.fails_for_good and not op.catch for op in child.ops)


def _op_json(op: Op) -> dict[str, Any]:
    if isinstance(op, Gather):
        return {"gather": [_op_json(c) for c in op.children], "collect": op.collect}
    if isinstance(op, Child):
        return {**vars(op), "kind": "child", "ops": [_op_json(c) for c in op.ops]}
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
    if data["kind"] == "child":
        ops = tuple(_op_from(c) for c in fields.pop("ops"))
        return Child(**fields, ops=ops)  # type: ignore[arg-type]
    return Wait(**fields)


def _describe(op: Op) -> str:
    if isinstance(op, Gather):
        inner = ", ".join(_describe(c) for c in op.children)
        return f"gather{'(return_exceptions)' if op.collect else ''}[{inner}]"
    if isinstance(op, Child):
        inner = "; ".join(_describe(c) for c in op.ops)
        return f"child {op.name} {op.workflow}{' caught' if op.catch else ''} [{inner}]"
    if isinstance(op, Do):
        extra = " nonretryable" if op.nonretryable else ""
        extra += " caught" if op.catch else ""
        extra += f" sends {list(op.sends)}" if op.sends else ""
        if op.undo:
            extra += f" undo fail {op.undo_fail}/limit {op.undo_limit}"
        return (
            f"do {op.name} fail {op.fail}/limit {op.limit} delay {op.delay:g}s {op.backoff}{extra}"
        )
    if isinstance(op, Sleep):
        return f"sleep {op.name} {op.seconds:g}s"
    return f"wait {op.name} type {op.type}" + (f" timeout {op.timeout:g}s" if op.times_out else "")


# The features beyond steps, sleeps and waits that the generated programs must each use
# (:meth:`Program.features` names them; the tests check every one is generated and faulted).
CONTROLLED_FEATURES = (
    "child",
    "failing child",
    "concurrency",
    "rollback",
    "terminate_rollback",
    "restart",
    "restart_from",
    "delete",
    "schedule",
)


# --- known engine bugs -------------------------------------------------------------------------


@dataclass(frozen=True)
class KnownBug:
    """An engine bug another change fixes: a violation of ``invariant`` whose detail matches
    ``pattern`` is reported as known, not as a failure, until the entry is removed."""

    item: str  # the issue item that fixes it
    invariant: str
    pattern: str
    why: str

    def excuses(self, invariant: str, detail: str) -> bool:
        return invariant == self.invariant and re.search(self.pattern, detail) is not None


# The issue items whose bugs the invariants once had to excuse: every one is fixed (issue 24's
# 24.2, 24.3 and 24.5 included). Add an entry only with the issue item that will fix it.
KNOWN_BUGS: tuple[KnownBug, ...] = ()
