"""The pure model of a program: the ending, the values run() must see, and the journal it must
leave — computed from the program alone, with no engine.

Journal entries are compared in a canonical form that leaves out times and ids (they differ
between runs): ``["step", result]``, ``["step-error", name, message]``, ``["attempt", n, name,
message, delay]``, ``["sleep", seconds]``, ``["wait"]``, ``["event", payload]``, ``["timeout"]``.
A wait whose event was already there records no ``wait`` entry, so for event waits that entry
is optional; a wait that times out always records one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lambda_workflows.engine import codec
from lambda_workflows.engine.config import RetryConfig
from lambda_workflows.engine.journal import attempt_key, delivery_key, step_key
from lambda_workflows.engine.model import EntryKind, EventRecord, JournalEntry

from .program import Do, Gather, Program, Sleep, Wait, failure, result_value


@dataclass
class Expected:
    """What a program must do, whatever faults happen."""

    status: str
    output: Any = None
    error: dict[str, str] | None = None
    values: dict[str, Any] = field(default_factory=dict)  # label -> what run() must see
    journal: dict[str, list[Any]] = field(default_factory=dict)  # key -> canonical entry
    optional: set[str] = field(default_factory=set)  # keys that may or may not be recorded
    waits: dict[str, list[str]] = field(default_factory=dict)  # event type -> wait labels


def expect(program: Program) -> Expected:
    """Run the program in the model."""
    expected = Expected(status="complete")
    output: list[Any] = []
    received: dict[str, int] = {}
    for op in program.ops:
        for child in op.children if isinstance(op, Gather) else (op,):
            if isinstance(child, Do):
                value = _do(program.number, child, expected)
                if value is None:  # an uncaught failure: the instance errors here
                    name, message = failure(child, child.last_attempt)
                    expected.status, expected.error = "errored", {"name": name, "message": message}
                    return expected
            elif isinstance(child, Sleep):
                value = None
                expected.journal[step_key(child.name, 1, None)] = ["sleep", child.seconds]
            else:
                value = _wait(child, expected, received)
            expected.values[child.name] = value
            output.append([child.name, value])
    expected.output = output
    return expected


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
        return {"caught": [name, message]} if op.catch else None
    value = result_value(program, op.name, op.last_attempt)
    expected.journal[key] = ["step", value]
    return value


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


def event_payload(event_type: str, n: int) -> dict[str, Any]:
    """The payload of the n-th event of a type the driver sends (FIFO: the n-th wait's)."""
    return {"type": event_type, "n": n}


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
        delay = round((entry.wake_at or entry.at) - entry.at, 3)
        return ["attempt", entry.attempt, error.name, error.message, delay]
    if entry.kind is EntryKind.SLEEP:
        return ["sleep", round((entry.wake_at or entry.at) - (entry.started_at or entry.at), 3)]
    if entry.kind is EntryKind.WAIT:
        return ["wait"]
    if error is not None:
        return ["timeout"]
    event = events.get(entry.event_id or "")
    return ["event", codec.decode(event.payload) if event else f"missing event {entry.event_id}"]


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
