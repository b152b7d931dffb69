"""The promise, checked: a run against the pure model and against the fault-free run.

Every instance the run left (by role, see :mod:`.outcome`) is checked against what the model
says of its role:

- ``stuck``: every instance finished (none left queued, running or waiting).
- ``ending``: status, output and error are the model's and the fault-free run's.
- ``journal``: the journal holds exactly the expected entries with the expected values (after
  a control operation that raced with the run: only entries of the model, and every step run()
  called before it).
- ``recorded-once``: no journal item was successfully written twice.
- ``seen``: every value run() saw (on every replay) is the one recorded.
- ``events``: every accepted event is stored once and delivered once, FIFO per type.
- ``children`` / ``rollback`` / ``limit`` / ``deleted`` / ``schedule``: see :mod:`.features`.
- ``handler``: nothing but an injected crash escaped a handler; the runner gave a message back
  and the API answered 5xx only when a fault was injected in that invocation.

A violation that matches an entry of :data:`~.program.KNOWN_BUGS` is known: reported apart,
never a failure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from lambda_workflows.aws.items import instance_pk

from . import features
from .model import Expected, expect_role, recorded_value
from .outcome import InstanceOutcome, RunResult
from .program import KNOWN_BUGS, Program

ORDER = (
    "stuck",
    "ending",
    "journal",
    "recorded-once",
    "seen",
    "events",
    "children",
    "rollback",
    "limit",
    "deleted",
    "schedule",
    "handler",
    "harness",
)
FINISHED = ("complete", "errored", "terminated")


@dataclass(frozen=True, order=True)
class Violation:
    """A broken invariant and what was seen."""

    invariant: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.invariant}] {self.detail}"

    @property
    def known(self) -> str | None:
        """The issue item of the known bug this is, or None."""
        bug = next((b for b in KNOWN_BUGS if b.excuses(self.invariant, self.detail)), None)
        return None if bug is None else bug.item


def primary(violations: list[Violation]) -> str | None:
    """The invariant a failing case is shrunk on: the most fundamental one broken (known bugs
    left out)."""
    names = {v.invariant for v in violations if v.known is None}
    return next((name for name in ORDER if name in names), None)


def check(program: Program, run: RunResult, reference: RunResult | None = None) -> list[Violation]:
    """Every violation in ``run`` (``reference``: the fault-free run of the same program)."""
    found = [Violation("handler", anomaly) for anomaly in run.anomalies]
    for role, outcome in sorted(run.instances.items()):
        expected = expect_role(program, role, run.firings)
        twin = reference.instances.get(role) if reference is not None else None
        if expected is None:
            found.append(Violation("children" if "/" in role else "schedule", _stray(outcome)))
            continue
        found += _instance(expected, outcome, twin, run)
    # a deleted instance's journal is gone (its cleanup removes what a runner that loaded it
    # before the delete writes afterwards: a second put of one key is no second record)
    gone = [o for o in run.instances.values() if o.status == "deleted"]
    deleted = {f"{instance_pk(o.workflow, o.id)}/" for o in gone}
    for item, count in sorted(run.journal_puts.items()):
        if count > 1 and not item.startswith(tuple(deleted)):
            found.append(Violation("recorded-once", f"journal item {item} written {count} times"))
    found += features.check(program, run)
    return sorted(found, key=lambda v: ORDER.index(v.invariant))  # the most fundamental first


def _stray(outcome: InstanceOutcome) -> str:
    return f"{outcome.workflow} instance {outcome.id} ({outcome.role}) should not exist"


def _instance(
    expected: Expected, got: InstanceOutcome, twin: InstanceOutcome | None, run: RunResult
) -> list[Violation]:
    if expected.status == "deleted":
        return features.deleted(got)
    if got.status not in FINISHED:
        detail = f"{got.role} {got.id} is {got.status} after quiescing"
        if run.dead_letters:
            detail += f" (dead-lettered: {', '.join(run.dead_letters)})"
        return [Violation("stuck", detail + _last_steps(got))]
    if expected.status == "any":  # a child an earlier generation started: it ends somehow
        return features.answered_once(got)
    if expected.stoppable and got.status == "terminated":
        expected, twin = expected.stopped(), None
    found = _ending(expected, got, twin)
    found += _journal(expected, got, None if expected.racy else twin)
    found += _seen(got, run.seen.get(got.role, []))
    found += _events(expected, got, run.accepted.get(got.role, Counter()))
    found += features.rollback(expected, got, run.undone.get(got.role, []))
    found += features.answered_once(got)
    return found


def _ending(
    expected: Expected, got: InstanceOutcome, twin: InstanceOutcome | None
) -> list[Violation]:
    ending = (got.status, got.output, got.error)
    model = (expected.status, expected.output, expected.error)
    if ending != model:
        return [Violation("ending", f"{got.role} ended {_shown(*ending)}; model: {_shown(*model)}")]
    if twin is not None and not expected.racy and ending != (twin.status, twin.output, twin.error):
        theirs = _shown(twin.status, twin.output, twin.error)
        return [
            Violation("ending", f"{got.role} ended {_shown(*ending)}; fault-free run: {theirs}")
        ]
    return []


def _journal(
    expected: Expected, got: InstanceOutcome, twin: InstanceOutcome | None
) -> list[Violation]:
    if expected.racy:
        return _consistent(expected, got)
    mine = _comparable(got.journal, expected.optional)
    model = _comparable(expected.journal, expected.optional)
    for key in sorted(set(mine) | set(model)):
        if mine.get(key) != model.get(key):
            return [
                Violation(
                    "journal",
                    f"{got.role} entry {_key(key)}: {mine.get(key)}; model: {model.get(key)}",
                )
            ]
    for key in sorted(expected.optional & set(got.journal)):
        if got.journal[key] != expected.journal[key]:
            return [Violation("journal", f"{got.role} entry {_key(key)}: {got.journal[key]}")]
    if twin is not None:
        theirs = _comparable(twin.journal, expected.optional)
        if mine != theirs:
            return [Violation("journal", f"{got.role} journal differs from the fault-free run")]
    return []


def _consistent(expected: Expected, got: InstanceOutcome) -> list[Violation]:
    """After a racing control operation: only the model's entries, and every step before it."""
    forward = {k: v for k, v in got.journal.items() if not v[0].startswith("rollback")}
    for key, value in sorted(forward.items()):
        if expected.journal.get(key) != value:
            wanted = expected.journal.get(key, "no such entry")
            return [Violation("journal", f"{got.role} entry {_key(key)}: {value}; model: {wanted}")]
    missing = sorted(expected.required - set(forward))
    if missing:
        shown = ", ".join(_key(k) for k in missing)
        return [Violation("journal", f"{got.role} lacks {shown}, recorded before the control")]
    return []


def _seen(got: InstanceOutcome, seen: list[tuple[str, Any]]) -> list[Violation]:
    for label, value in seen:
        recorded = recorded_value(label, got.journal)
        if value != recorded:
            return [
                Violation(
                    "seen", f"{got.role}: run() saw {value!r} for {label}; recorded: {recorded!r}"
                )
            ]
    return []


def _events(expected: Expected, got: InstanceOutcome, accepted: Counter[str]) -> list[Violation]:
    found = []
    stored = Counter(t for t, _ in got.events)
    if stored != accepted:
        found.append(
            Violation(
                "events", f"{got.role} stores events {dict(stored)}; accepted: {dict(accepted)}"
            )
        )
    repeated = [e for e, n in Counter(got.delivered).items() if n > 1]
    if repeated:
        found.append(
            Violation("events", f"{got.role}: event(s) {repeated} delivered to several waits")
        )
    plain = _plain_deliveries(got)
    if got.status == "complete" and len(plain) != len(got.events):
        found.append(
            Violation(
                "events",
                f"{got.role} finished with {len(got.events)} events stored, {len(plain)} delivered",
            )
        )
    for event_type, labels in expected.waits.items():
        order = [_delivered_n(got.journal, label) for label in labels]
        if order != list(range(1, len(labels) + 1)) and None not in order:
            found.append(
                Violation(
                    "events",
                    f"{got.role}: waits for {event_type!r} got events {order} "
                    f"(FIFO: 1..{len(labels)})",
                )
            )
    return found


def _plain_deliveries(got: InstanceOutcome) -> list[str]:
    """The deliveries of event waits (a child's answer is an event of its own)."""
    return [k for k, v in got.journal.items() if v[0] == "event"]


def _delivered_n(journal: dict[str, list[Any]], label: str) -> int | None:
    value = recorded_value(label, journal)
    if isinstance(value, dict) and isinstance(value.get("event"), dict):
        n = value["event"].get("n")
        return n if isinstance(n, int) else None
    return None


def _comparable(journal: dict[str, list[Any]], optional: set[str]) -> dict[str, list[Any]]:
    return {k: v for k, v in journal.items() if k not in optional}


def _shown(status: str, output: Any, error: Any) -> str:
    return f"{status} error={error}" if error else f"{status} output={output}"


def _key(key: str) -> str:
    return key.replace("\x1f", "/").replace("\x1e", ">")


def _last_steps(got: InstanceOutcome) -> str:
    if not got.journal:
        return ", nothing recorded"
    last = list(got.journal.items())[-3:]
    return ", last entries: " + "; ".join(f"{_key(k)}={v}" for k, v in last)
