"""The invariants of the features beyond steps, sleeps and events:

- ``children``: each child step started exactly one child (its id derived from the parent's
  generation and step; an instance nobody asked for is a stray), which ended as its program
  does, and whose result or error reached its parent once (one answer stored per child and
  generation); a child of a parent terminated while it ran is terminated with it, unless it
  had answered before; a child of a deleted parent is finished.
- ``rollback``: each rollback recorded once (``recorded-once``), newest step first (the order the
  rollbacks were first called in), until one failed for good; each got its step's recorded
  output and the failure; the instance ends with the forward failure (or terminated).
- ``limit``: never more instances of the limited workflow running than its limit (looked at
  whenever one of its callbacks starts and after every runner invocation), and after
  quiescence every slot free, nobody in line, no instance holding a slot.
- ``deleted``: a deleted instance leaves its tombstone and nothing else in its partition.
- ``schedule``: exactly one instance per firing time of the deployed schedule, none other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lambda_workflows.engine.errors import TERMINATED_WITH_ROLLBACK
from lambda_workflows.engine.replay.journal import delivery_key, step_key

from .model import Expected, expect_instance, rollbacks, step_of
from .outcome import InstanceOutcome, RunResult
from .program import LIMITED, Child, Do, Program
from .workflows import UndoCall

if TYPE_CHECKING:
    from .invariants import Violation

TERMINATION = {"name": TERMINATED_WITH_ROLLBACK, "message": "Instance terminated during rollback"}


def _violation(invariant: str, detail: str) -> Violation:
    from .invariants import Violation  # the two modules name each other's parts

    return Violation(invariant, detail)


def check(program: Program, run: RunResult) -> list[Violation]:
    """The invariants that look at the run as a whole."""
    found = [_violation("limit", breach) for breach in run.limit_breaches[:3]]
    held = run.slots.get(LIMITED, [])
    if held:
        found.append(_violation("limit", f"after quiescing: {'; '.join(held[:4])}"))
    for outcome in run.instances.values():
        if outcome.workflow == LIMITED and outcome.slot is not None:
            found.append(_violation("limit", f"{outcome.role} still holds slot {outcome.slot}"))
    found += _schedule(run)
    for k in range(program.instances):
        found += _children(program, k, run)
    return found


# --- children -----------------------------------------------------------------------------------


def _children(program: Program, k: int, run: RunResult) -> list[Violation]:
    parent = run.instances.get(f"top{k}")
    if parent is None or parent.status in ("deleted", "missing"):
        return _orphans(f"top{k}", run)
    expected = expect_instance(program, k)
    found = []
    for op in program.steps():
        if not isinstance(op, Child):
            continue
        role = f"{parent.role}/{op.name}"
        child = run.instances.get(role)
        started = step_key(op.name, 1, None) in parent.journal
        if started and child is None:
            found.append(_violation("children", f"{role}: the parent waits, no child exists"))
        if child is None:
            continue
        if parent.status == "terminated" and expected.racy:
            found += _stopped_with(parent, child)
    return found


def _stopped_with(parent: InstanceOutcome, child: InstanceOutcome) -> list[Violation]:
    """A child of a terminated parent: terminated too, unless it answered before."""
    event_type = f"child:{child.workflow}/{child.id}"
    answered = any(t == event_type for _, t in parent.child_events)
    if child.status == "terminated" or answered or parent.journal.get(_delivery(child)):
        return []
    return [
        _violation(
            "children",
            f"{child.role} is {child.status}: its parent was terminated before it answered",
        )
    ]


def _delivery(child: InstanceOutcome) -> str:
    step = child.role.rsplit("/", 1)[-1].removesuffix("@old")
    return delivery_key(step_key(step, 1, None))


def _orphans(role: str, run: RunResult) -> list[Violation]:
    """The children of a deleted parent: finished (terminated with it, or before)."""
    return [
        _violation("children", f"{o.role} is {o.status}: its parent was deleted")
        for r, o in sorted(run.instances.items())
        if r.startswith(f"{role}/") and o.status not in ("complete", "errored", "terminated")
    ]


def answered_once(got: InstanceOutcome) -> list[Violation]:
    """No child's answer stored twice in one generation of this instance's mailbox (a
    restart from a later step copies the answers it keeps into the new generation)."""
    twice = sorted((t, n) for (_, t), n in got.child_events.items() if n > 1)
    if not twice:
        return []
    return [
        _violation("children", f"{got.role} got the answer of {twice[0][0]} {twice[0][1]} times")
    ]


# --- rollbacks ----------------------------------------------------------------------------------


def rollback(expected: Expected, got: InstanceOutcome, undone: list[UndoCall]) -> list[Violation]:
    """The instance's rollbacks: the model's, or after a racing terminate(rollback=True) those
    of the steps it started."""
    model, order, info = expected.journal, expected.undo_order, expected.rollback
    if expected.racy and expected.program is not None:
        model, order, info = _terminated(expected.program, got, expected.rolls_back)
    mine = {k: v for k, v in got.journal.items() if v[0].startswith("rollback")}
    wanted = {k: v for k, v in model.items() if v[0].startswith("rollback")}
    if mine != wanted:
        key = min(k for k in set(mine) | set(wanted) if mine.get(k) != wanted.get(k))
        return [
            _violation(
                "rollback", f"{got.role} rollback {key!r}: {mine.get(key)}; model {wanted.get(key)}"
            )
        ]
    if got.rollback != info:
        return [_violation("rollback", f"{got.role} rollback {got.rollback}; model {info}")]
    first = list(dict.fromkeys(call.step for call in undone))
    if first != order:
        return [_violation("rollback", f"{got.role} rolled back {first}; newest first: {order}")]
    return _undo_calls(got, undone, info)


def _terminated(
    program: Program, got: InstanceOutcome, rolls_back: bool
) -> tuple[dict[str, list[Any]], list[str], dict[str, Any] | None]:
    """What a terminate(rollback=True) must roll back: the steps with a recorded outcome or
    attempt, newest first."""
    recorded = {step_of(k) for k, v in got.journal.items() if not v[0].startswith("rollback")}
    started = [s for s in program.steps() if isinstance(s, Do) and s.name in recorded]
    journal: dict[str, list[Any]] = {}
    chain = rollbacks(started, journal) if rolls_back else None
    if got.status != "terminated" or not rolls_back:
        return journal, [], None
    status, failed = ("complete", None) if chain is None else tuple(chain[0].values())
    info = {"status": status, "ends_as": "terminated", "cause": TERMINATION, "failed_step": failed}
    return journal, [] if chain is None else chain[1], info


def _undo_calls(
    got: InstanceOutcome, undone: list[UndoCall], info: dict[str, Any] | None
) -> list[Violation]:
    """Each rollback got its step's recorded output (None when it failed) and the cause."""
    for call in undone:
        entry = got.journal.get(step_key(call.step, 1, None), [])
        output = entry[1] if entry[:1] == ["step"] else None
        cause = None if info is None else info["cause"]["name"]
        if call.output != output or call.cause != cause:
            return [
                _violation(
                    "rollback",
                    f"{got.role} undo of {call.step} got ({call.output!r}, {call.cause}); "
                    f"recorded ({output!r}, {cause})",
                )
            ]
    return []


# --- deletes and schedules ----------------------------------------------------------------------


def deleted(got: InstanceOutcome) -> list[Violation]:
    """A deleted instance leaves its tombstone, nothing else."""
    if got.status != "deleted":
        return [_violation("deleted", f"{got.role} {got.id} is {got.status}, not deleted")]
    if got.leftovers:
        shown = ", ".join(sk.replace("\x1f", "/") for sk in got.leftovers[:4])
        return [_violation("deleted", f"{got.role} left {len(got.leftovers)} item(s): {shown}")]
    return []


def _schedule(run: RunResult) -> list[Violation]:
    """One instance per firing (an instance for no firing is a stray, see invariants)."""
    missing = [r for r in sorted(run.firings) if r not in run.instances]
    if missing:
        return [_violation("schedule", f"no instance for firing(s) {missing}")]
    return []
