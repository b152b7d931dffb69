"""The pure model of a program: the ending, the values run() must see, the journal it must
leave, the children it starts and the rollbacks it runs — computed from the program alone,
with no engine.

Journal entries are compared in a canonical form that leaves out times and ids (they differ
between runs): ``["step", result]``, ``["step-error", name, message]``, ``["attempt", n, name,
message, delay]``, ``["sleep", seconds]``, ``["wait"]``, ``["event", payload]``, ``["timeout"]``,
``["child-wait"]``, ``["child", status, output, error]``, ``["rollback"]``, ``["rollback-error",
name, message]``, ``["rollback-attempt", n, name, message, delay]``. A wait whose event was
already there records no ``wait`` entry, so for event waits that entry is optional; a wait that
times out always records one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lambda_workflows.engine import codec
from lambda_workflows.engine.config import RetryConfig
from lambda_workflows.engine.model import EntryKind, EventRecord, JournalEntry
from lambda_workflows.engine.replay.journal import (
    NEST,
    UNIT,
    attempt_key,
    delivery_key,
    rollback_key,
    step_key,
)

from .program import Child, Do, Gather, Program, Sleep, Step, Wait
from .workflows import failure, result_value, undo_failure

FAILED = object()  # a step's value when it failed uncaught: the instance errors there


@dataclass
class Expected:
    """What an instance of a program must do, whatever faults happen.

    ``racy``: a control operation raced with the run (a terminate with rollback sent while a
    step runs): which steps ran before it took effect depends on timing, so the journal must
    be consistent with the model (every entry it holds is the model's, every step before the
    control point is there) and the rollbacks must be those of the steps that started.
    """

    status: str
    output: Any = None
    error: dict[str, str] | None = None
    values: dict[str, Any] = field(default_factory=dict)  # label -> what run() must see
    journal: dict[str, list[Any]] = field(default_factory=dict)  # key -> canonical entry
    optional: set[str] = field(default_factory=set)  # keys that may or may not be recorded
    waits: dict[str, list[str]] = field(default_factory=dict)  # event type -> wait labels
    rollback: dict[str, Any] | None = None  # status, ends_as, cause, failed_step
    undo_order: list[str] = field(default_factory=list)  # steps undone, newest first
    children: dict[str, Expected] = field(default_factory=dict)  # step name -> the child's
    racy: bool = False
    required: set[str] = field(default_factory=set)  # racy: keys that must be there
    program: Program | None = None
    stoppable: bool = False  # a child whose parent was stopped: may end terminated instead
    rolls_back: bool = True  # racy: terminated with rollback (else a plain terminate)

    def stopped(self) -> Expected:
        """What a stoppable instance must do once it was terminated midway: the journal
        consistent with the model, no rollback."""
        journal = {k: v for k, v in self.journal.items() if not v[0].startswith("rollback")}
        return Expected(
            status="terminated",
            journal=journal,
            optional=self.optional,
            racy=True,
            program=self.program,
            rolls_back=False,
        )


def expect(program: Program) -> Expected:
    """Run the program in the model, to its end."""
    expected = Expected(status="complete", program=program)
    output: list[Any] = []
    received: dict[str, int] = {}
    started: list[Do] = []
    for op in program.ops:
        for step in op.children if isinstance(op, Gather) else (op,):
            value = _step(program.number, step, expected, received, started)
            if value is FAILED:
                return expected
            expected.values[step.name] = value
            output.append([step.name, value])
    expected.output = output
    return expected


def _step(
    number: int, step: Step, expected: Expected, received: dict[str, int], started: list[Do]
) -> Any:
    if isinstance(step, Do):
        started.append(step)
        value = _do(number, step, expected)
        if value is FAILED:
            name, message = failure(step, step.last_attempt)
            _fail(expected, {"name": name, "message": message}, started)
        return value
    if isinstance(step, Sleep):
        expected.journal[step_key(step.name, 1, None)] = ["sleep", step.seconds]
        return None
    if isinstance(step, Child):
        value = _child(number, step, expected)
        if value is FAILED:
            error = expected.children[step.name].error
            assert error is not None
            _fail(expected, error, started)
        return value
    return _wait(step, expected, received)


def _do(program: int, op: Do, expected: Expected) -> Any:
    key = step_key(op.name, 1, None)
    retries = RetryConfig(op.limit, op.delay, op.backoff)
    for attempt in range(1, op.last_attempt):
        name, message = failure(op, attempt)
        delay = retries.delay_before(attempt)
        expected.journal[attempt_key(key, attempt)] = ["attempt", attempt, name, message, delay]
    if op.fails_for_good:
        name, message = failure(op, op.last_attempt)
        expected.journal[key] = ["step-error", name, message]
        return {"caught": [name, message]} if op.catch else FAILED
    value = result_value(program, op.name, op.last_attempt)
    expected.journal[key] = ["step", value]
    return value


def _child(number: int, op: Child, expected: Expected) -> Any:
    child = expect(op.program(number))
    expected.children[op.name] = child
    key = step_key(op.name, 1, None)
    expected.journal[key] = ["child-wait"]
    expected.journal[delivery_key(key)] = ["child", child.status, child.output, child.error]
    if child.status == "complete":
        return child.output
    assert child.error is not None
    return {"caught": [child.error["name"], child.error["message"]]} if op.catch else FAILED


def _wait(op: Wait, expected: Expected, received: dict[str, int]) -> Any:
    key = step_key(op.name, 1, None)
    expected.journal[key] = ["wait"]
    if op.times_out:
        expected.journal[delivery_key(key)] = ["timeout"]
        return {"timeout": True}
    expected.optional.add(key)
    received[op.type] = received.get(op.type, 0) + 1
    payload = event_payload(op.type, received[op.type])
    expected.journal[delivery_key(key)] = ["event", payload]
    expected.waits.setdefault(op.type, []).append(op.name)
    return {"event": payload}


def _fail(expected: Expected, error: dict[str, str], started: Sequence[Do]) -> None:
    """The instance fails with ``error``: the rollbacks of the steps it started run."""
    expected.status, expected.error = "errored", dict(error)
    chain = rollbacks(started, expected.journal)
    if chain is not None:
        expected.rollback = {**chain[0], "ends_as": "errored", "cause": dict(error)}
        expected.undo_order = chain[1]


def rollbacks(
    started: Iterable[Do], journal: dict[str, list[Any]]
) -> tuple[dict[str, Any], list[str]] | None:
    """Add the rollback entries of the steps ``started`` (in step-start order) to ``journal``:
    newest first, until one fails for good. Returns how the chain ends (``status``,
    ``failed_step``) and the steps undone in order; None when no step has a rollback."""
    undoable = [op for op in started if op.undo]
    if not undoable:
        return None
    order: list[str] = []
    for op in reversed(undoable):
        order.append(op.name)
        key = rollback_key(step_key(op.name, 1, None))
        retries = RetryConfig(op.undo_limit, op.undo_delay, "constant")
        for attempt in range(1, op.undo_last_attempt):
            name, message = undo_failure(op, attempt)
            delay = retries.delay_before(attempt)
            journal[attempt_key(key, attempt)] = ["rollback-attempt", attempt, name, message, delay]
        if op.undo_fails_for_good:
            journal[key] = ["rollback-error", *undo_failure(op, op.undo_last_attempt)]
            return {"status": "failed", "failed_step": op.name}, order
        journal[key] = ["rollback"]
    return {"status": "complete", "failed_step": None}, order


def event_payload(event_type: str, n: int) -> dict[str, Any]:
    """The payload of the n-th event of a type the driver sends (FIFO: the n-th wait's)."""
    return {"type": event_type, "n": n}


# --- control operations -------------------------------------------------------------------------


def expect_instance(program: Program, index: int) -> Expected:
    """What instance ``index`` of ``program`` must do: instance 0 gets the control operation."""
    control = program.control
    if index != 0 or control is None or control.kind in ("restart", "restart_from"):
        return expect(program)  # a restart ends as the program does: results are pure
    full = expect(program)
    if control.kind == "delete":
        return Expected(status="deleted", program=program, children=full.children)
    racy = Expected(status="terminated", program=program, racy=True, children=full.children)
    racy.journal = {k: v for k, v in full.journal.items() if not v[0].startswith("rollback")}
    racy.optional = full.optional
    for step in _before(program, control.at):
        racy.required.update(k for k in racy.journal if step_of(k) == step.name)
    racy.required -= full.optional
    return racy


def step_of(key: str) -> str:
    """The name of the root step a journal key belongs to."""
    return key.split(NEST, 1)[0].split(UNIT, 1)[0]


def _before(program: Program, at: str) -> list[Step]:
    """The steps run() called before op ``at``: recorded by the time it reaches it."""
    found: list[Step] = []
    for op in program.ops:
        steps = op.children if isinstance(op, Gather) else (op,)
        if any(s.name == at for s in steps):
            return found
        found.extend(steps)
    return found


# --- reading what a run recorded ----------------------------------------------------------


def canonical(entry: JournalEntry, events: Mapping[str, EventRecord]) -> list[Any]:
    """An entry in the model's form (times and ids left out)."""
    error = entry.error
    if entry.kind is EntryKind.STEP:
        if error is not None:
            return ["step-error", error.name, error.message]
        return ["step", codec.decode(entry.result)]
    if entry.kind is EntryKind.ATTEMPT:
        assert error is not None
        return ["attempt", entry.attempt, error.name, error.message, _delay(entry)]
    if entry.kind is EntryKind.ROLLBACK:
        return ["rollback"] if error is None else ["rollback-error", error.name, error.message]
    if entry.kind is EntryKind.ROLLBACK_ATTEMPT:
        assert error is not None
        return ["rollback-attempt", entry.attempt, error.name, error.message, _delay(entry)]
    if entry.kind is EntryKind.SLEEP:
        return ["sleep", round((entry.wake_at or entry.at) - (entry.started_at or entry.at), 3)]
    child = (entry.event_type or "").startswith("child:")
    if entry.kind is EntryKind.WAIT:
        return ["child-wait"] if child else ["wait"]
    event = events.get(entry.event_id or "")
    if child:
        return _child_answer(entry, event)
    if error is not None:
        return ["timeout"]
    return ["event", codec.decode(event.payload) if event else f"missing event {entry.event_id}"]


def _delay(entry: JournalEntry) -> float:
    return round((entry.wake_at or entry.at) - entry.at, 3)


def _child_answer(entry: JournalEntry, event: EventRecord | None) -> list[Any]:
    if event is None:
        if entry.error is not None:
            return ["child-error", entry.error.name, entry.error.message]
        return ["child", f"missing event {entry.event_id}"]
    shown = json.loads(event.payload)
    output = shown.get("output")
    return ["child", shown["status"], None if output is None else codec.decode(output),
            shown.get("error")]  # fmt: skip


def canonical_journal(
    entries: Iterable[JournalEntry], events: Iterable[EventRecord]
) -> dict[str, list[Any]]:
    by_id = {e.id: e for e in events}
    return {entry.key: canonical(entry, by_id) for entry in entries}


def recorded_value(label: str, journal: Mapping[str, list[Any]]) -> Any:
    """The value run() must see for step ``label``, from a canonical journal (or a marker)."""
    key = step_key(label, 1, None)
    delivery = journal.get(delivery_key(key))
    if delivery is not None:
        if delivery[0] == "child":
            status, output, error = delivery[1:4]
            return output if status == "complete" else {"caught": [error["name"], error["message"]]}
        return {"timeout": True} if delivery[0] == "timeout" else {"event": delivery[1]}
    entry = journal.get(key)
    if entry is None:
        return {"unrecorded": label}
    if entry[0] == "step":
        return entry[1]
    if entry[0] == "step-error":
        return {"caught": entry[1:]}
    if entry[0] == "sleep":
        return None
    return {"unrecorded": label}


# --- every instance of a run --------------------------------------------------------------------


def expect_role(program: Program, role: str, firings: Mapping[str, str]) -> Expected | None:
    """What the instance of ``role`` must do (None: no instance should have it).

    ``firings``: the scheduled time of each firing role of the run's schedule window.
    """
    if role in firings:
        from .workflows import scheduled_program

        return expect(scheduled_program(firings[role]))
    head, _, rest = role.partition("/")
    if not head.startswith("top") or not head[3:].isdigit():
        return None
    expected = expect_instance(program, int(head[3:]))
    if rest:
        step = rest.removesuffix("@old")
        child = expected.children.get(step)
        if child is None:
            return None
        if rest != step:
            return Expected(status="any", program=child.program)
        if expected.racy or expected.status == "deleted":  # the parent was stopped midway
            return dataclasses.replace(child, stoppable=True)
        return child
    return expected
