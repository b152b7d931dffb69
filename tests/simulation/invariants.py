"""The promise, checked: a run against the pure model and against the fault-free run.

- ``stuck``: every instance finished (none left queued, running or waiting).
- ``ending``: status, output and error are the model's and the fault-free run's.
- ``journal``: the journal holds exactly the expected entries with the expected values.
- ``recorded-once``: no journal item was successfully written twice.
- ``seen``: every value run() saw (on every replay) is the one recorded.
- ``events``: every accepted event is stored once and delivered once, FIFO per type.
- ``handler``: nothing but an injected crash escaped a handler; the runner gave a message back
  and the API answered 5xx only when a fault was injected in that invocation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from .driver import InstanceOutcome, RunResult
from .model import Expected, recorded_value

ORDER = ("stuck", "ending", "journal", "recorded-once", "seen", "events", "handler", "harness")


@dataclass(frozen=True, order=True)
class Violation:
    """A broken invariant and what was seen."""

    invariant: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.invariant}] {self.detail}"


def primary(violations: list[Violation]) -> str | None:
    """The invariant a failing case is shrunk on: the most fundamental one broken."""
    names = {v.invariant for v in violations}
    return next((name for name in ORDER if name in names), None)


def check(
    expected: Expected, run: RunResult, reference: RunResult | None = None
) -> list[Violation]:
    """Every violation in ``run`` (``reference``: the fault-free run of the same program)."""
    found = [Violation("handler", anomaly) for anomaly in run.anomalies]
    for index, outcome in enumerate(run.instances):
        twin = reference.instances[index] if reference is not None else None
        found += _instance(expected, outcome, twin, run)
    for item, count in sorted(run.journal_puts.items()):
        if count > 1:
            found.append(Violation("recorded-once", f"journal item {item} written {count} times"))
    return sorted(found, key=lambda v: ORDER.index(v.invariant))  # the most fundamental first


def _instance(
    expected: Expected, got: InstanceOutcome, twin: InstanceOutcome | None, run: RunResult
) -> list[Violation]:
    found: list[Violation] = []
    if got.status not in ("complete", "errored", "terminated"):
        detail = f"{got.id} is {got.status} after quiescing"
        if run.dead_letters:
            detail += f" (dead-lettered work: {', '.join(run.dead_letters)})"
        return [Violation("stuck", detail + _last_steps(got))]
    ending = (got.status, got.output, got.error)
    model = (expected.status, expected.output, expected.error)
    if ending != model:
        found.append(
            Violation("ending", f"{got.id} ended {_ending(*ending)}; model: {_ending(*model)}")
        )
    elif twin is not None and ending != (twin.status, twin.output, twin.error):
        found.append(
            Violation(
                "ending",
                f"{got.id} ended {_ending(*ending)}; fault-free run: "
                f"{_ending(twin.status, twin.output, twin.error)}",
            )
        )
    found += _journal(expected, got, twin)
    found += _seen(got, run.seen.get(got.id, []))
    found += _events(expected, got, run.accepted.get(got.id, Counter()))
    return found


def _journal(
    expected: Expected, got: InstanceOutcome, twin: InstanceOutcome | None
) -> list[Violation]:
    mine = _comparable(got.journal, expected.optional)
    model = _comparable(expected.journal, expected.optional)
    for key in sorted(set(mine) | set(model)):
        if mine.get(key) != model.get(key):
            return [
                Violation(
                    "journal",
                    f"{got.id} entry {_key(key)}: {mine.get(key)}; model: {model.get(key)}",
                )
            ]
    for key in sorted(expected.optional & set(got.journal)):
        if got.journal[key] != expected.journal[key]:
            return [Violation("journal", f"{got.id} entry {_key(key)}: {got.journal[key]}")]
    if twin is not None:
        theirs = _comparable(twin.journal, expected.optional)
        if mine != theirs:
            return [Violation("journal", f"{got.id} journal differs from the fault-free run")]
    return []


def _seen(got: InstanceOutcome, seen: list[tuple[str, Any]]) -> list[Violation]:
    for label, value in seen:
        recorded = recorded_value(label, got.journal)
        if value != recorded:
            return [
                Violation(
                    "seen", f"{got.id}: run() saw {value!r} for {label}; recorded: {recorded!r}"
                )
            ]
    return []


def _events(expected: Expected, got: InstanceOutcome, accepted: Counter[str]) -> list[Violation]:
    found = []
    stored = Counter(t for t, _ in got.events)
    if stored != accepted:
        found.append(
            Violation(
                "events", f"{got.id} stores events {dict(stored)}; accepted: {dict(accepted)}"
            )
        )
    repeated = [e for e, n in Counter(got.delivered).items() if n > 1]
    if repeated:
        found.append(
            Violation("events", f"{got.id}: event(s) {repeated} delivered to several waits")
        )
    if got.status == "complete" and len(got.delivered) != len(got.events):
        found.append(
            Violation(
                "events",
                f"{got.id} finished with {len(got.events)} events stored, "
                f"{len(got.delivered)} delivered",
            )
        )
    for event_type, labels in expected.waits.items():
        order = [_delivered_n(got.journal, label) for label in labels]
        if order != list(range(1, len(labels) + 1)) and None not in order:
            found.append(
                Violation(
                    "events",
                    f"{got.id}: waits for {event_type!r} got events {order} "
                    f"(FIFO: 1..{len(labels)})",
                )
            )
    return found


def _delivered_n(journal: dict[str, list[Any]], label: str) -> int | None:
    value = recorded_value(label, journal)
    if isinstance(value, dict) and isinstance(value.get("event"), dict):
        n = value["event"].get("n")
        return n if isinstance(n, int) else None
    return None


def _comparable(journal: dict[str, list[Any]], optional: set[str]) -> dict[str, list[Any]]:
    return {k: v for k, v in journal.items() if k not in optional}


def _ending(status: str, output: Any, error: Any) -> str:
    return f"{status} error={error}" if error else f"{status} output={output}"


def _key(key: str) -> str:
    return key.replace("\x1f", "/").replace("\x1e", ">")


def _last_steps(got: InstanceOutcome) -> str:
    if not got.journal:
        return ", nothing recorded"
    last = list(got.journal.items())[-3:]
    return ", last entries: " + "; ".join(f"{_key(k)}={v}" for k, v in last)
