"""Random programs: the same number always gives the same program.

Each program leads with one feature (plain steps, sleeps and waits; children; a limited
workflow with more instances than slots; a saga; a control operation; a schedule) and mixes
in others now and then, so that every feature meets faults on its own and alongside the rest.
"""

from __future__ import annotations

import dataclasses
import random

from .program import (
    CHILD,
    HOLD,
    LIMIT,
    LIMITED,
    WORKFLOW,
    Child,
    Control,
    Do,
    EventPlan,
    Gather,
    Op,
    Program,
    Sleep,
    Wait,
)

FEATURES = {
    "plain": 28,
    "children": 14,
    "limited": 10,
    "saga": 14,
    "control": 24,
    "schedule": 8,
}


def generate(number: int) -> Program:
    """Program ``number`` (same number, same program)."""
    rng = random.Random(f"program-{number}")
    feature = rng.choices(list(FEATURES), list(FEATURES.values()))[0]
    pacing = rng.choice(["eager", "lambda"])
    if feature == "control":
        return _control(number, rng, pacing)
    if feature == "saga":
        return Program(number, _saga(rng), pacing=pacing)
    count = {"plain": rng.randint(2, 7), "limited": rng.randint(1, 3)}.get(feature)
    ops, events = _plain_ops(rng, count or rng.randint(1, 4))
    if feature == "children" or rng.random() < 0.1:
        ops = _with_children(rng, ops, failing=feature == "children")
    if rng.random() < 0.15:  # an uncaught failure ends the instance as errored
        ops.append(_failing_last(rng, f"s{len(ops)}", undo=False))
    instances = 2 if rng.random() < 0.2 else 1
    workflow = WORKFLOW
    if feature == "limited":
        workflow, instances = LIMITED, LIMIT + (2 if rng.random() < 0.25 else 1)
    hours = rng.randint(2, 4) if feature == "schedule" else 0
    return Program(number, tuple(ops), tuple(events), instances, pacing, workflow, None, hours)


def _plain_ops(rng: random.Random, count: int) -> tuple[list[Op], list[EventPlan]]:
    """Steps, gathers, sleeps, waits (with the events they get) and waits that time out."""
    ops: list[Op] = []
    events: list[EventPlan] = []
    for i in range(count):
        kind = rng.choices(["do", "gather", "sleep", "wait", "timeout"], [35, 15, 15, 25, 10])[0]
        if kind == "do":
            ops.append(_random_do(rng, f"s{i}", may_fail=True))
        elif kind == "gather":
            ops.append(_gather(rng, f"g{i}"))
        elif kind == "sleep":
            ops.append(Sleep(f"s{i}", rng.choice([1.0, 30.0, 1800.0, 3 * 3600.0])))
        elif kind == "timeout":
            ops.append(Wait(f"s{i}", f"never{i}", rng.choice([600.0, 3600.0, 7200.0])))
        else:
            ops.append(Wait(f"s{i}", rng.choice(["a", "a", "b"])))
            _plan_event(rng, ops, events)
    return ops, events


def _plan_event(rng: random.Random, ops: list[Op], events: list[EventPlan]) -> None:
    """The event the wait just appended gets: sent early, late, or during an earlier step."""
    wait = ops[-1]
    assert isinstance(wait, Wait)
    earlier = [k for k, op in enumerate(ops[:-1]) if isinstance(op, Do)]
    when = rng.choice(["early", "late", "during"] if earlier else ["early", "late"])
    events.append(EventPlan(wait.type, when))
    if when == "during":
        k = rng.choice(earlier)
        host = ops[k]
        assert isinstance(host, Do)
        ops[k] = Do(**{**vars(host), "sends": (*host.sends, len(events) - 1)})


def _gather(rng: random.Random, name: str, *, undo: bool = False) -> Gather:
    collect = rng.random() < 0.3
    children: list[Do | Sleep] = []
    for j in range(rng.randint(2, 3)):
        if rng.random() < 0.2:
            children.append(Sleep(f"{name}-{j}", rng.choice([5.0, 3600.0])))
        else:
            do = _random_do(rng, f"{name}-{j}", may_fail=collect)
            children.append(_with_undo(rng, do) if undo else do)
    return Gather(tuple(children), collect)


def _random_do(rng: random.Random, name: str, *, may_fail: bool) -> Do:
    limit = rng.choice([0, 1, 2, 3])
    long_delay = rng.random() < 0.3  # > 15 minutes: a scheduled wake-up, as short ones are here
    delay = rng.choice([1200.0, 3600.0]) if long_delay else rng.choice([1.0, 5.0, 30.0])
    backoff = rng.choice(["constant", "linear", "exponential"])
    fail = rng.choices(range(limit + 2), [4] + [2] * limit + [1 if may_fail else 0])[0]
    nonretryable = may_fail and fail >= 1 and rng.random() < 0.2
    do = Do(name, fail, limit, delay, backoff, nonretryable)
    return Do(**{**vars(do), "catch": do.fails_for_good})


def _failing_last(rng: random.Random, name: str, *, undo: bool) -> Do:
    fail = rng.randint(1, 2)
    do = Do(name, fail=fail, limit=fail - 1, nonretryable=rng.random() < 0.3)
    return _with_undo(rng, do) if undo else do


def _with_undo(rng: random.Random, do: Do) -> Do:
    """``do`` with a rollback: most succeed at once, some are retried, a few fail for good."""
    undo_limit = rng.choice([0, 1, 2])
    undo_fail = rng.choices([0, 1, undo_limit + 1], [75, 15, 10])[0]
    delay = rng.choice([1.0, 30.0, 1200.0])
    return Do(**{**vars(do), "undo": True, "undo_fail": undo_fail, "undo_limit": undo_limit,
                 "undo_delay": delay})  # fmt: skip


# --- children ----------------------------------------------------------------------------------


def _with_children(rng: random.Random, ops: list[Op], *, failing: bool) -> list[Op]:
    """``ops`` with one or two child steps inserted; with ``failing``, one child fails."""
    count = rng.randint(1, 2)
    fails = rng.randrange(count) if failing else -1
    for k in range(count):
        child = _child(rng, f"c{k}", fails=k == fails)
        # one that fails uncaught ends the instance: last, so that every event finds it alive
        at = len(ops) if k == fails and not child.catch else rng.randint(0, len(ops))
        ops.insert(at, child)
    return ops


def _child(rng: random.Random, name: str, *, fails: bool) -> Child:
    body: list[Do | Sleep] = []
    for j in range(rng.randint(1, 3)):
        if rng.random() < 0.25:
            body.append(Sleep(f"{name}-s{j}", rng.choice([5.0, 1800.0])))
        else:
            body.append(_random_do(rng, f"{name}-s{j}", may_fail=True))
    if fails:
        body.append(_failing_last(rng, f"{name}-end", undo=False))
    workflow = LIMITED if rng.random() < 0.25 else CHILD
    return Child(name, workflow, tuple(body), catch=not fails or rng.random() < 0.7)


# --- sagas -------------------------------------------------------------------------------------


def _saga(rng: random.Random) -> tuple[Op, ...]:
    """Steps with rollbacks (some retried, one caught failure now and then, a gather, a sleep
    or a child in between), then a last step that fails for good."""
    ops: list[Op] = []
    for i in range(rng.randint(2, 4)):
        kind = rng.choices(["do", "gather", "sleep", "child"], [70, 12, 10, 8])[0]
        if kind == "do":
            ops.append(_with_undo(rng, _random_do(rng, f"s{i}", may_fail=True)))
        elif kind == "gather":
            ops.append(_gather(rng, f"g{i}", undo=True))
        elif kind == "sleep":
            ops.append(Sleep(f"s{i}", rng.choice([30.0, 1800.0])))
        else:
            ops.append(_child(rng, f"c{i}", fails=rng.random() < 0.5))
    ops.append(_failing_last(rng, f"s{len(ops)}", undo=rng.random() < 0.7))
    return tuple(ops)


# --- control operations ------------------------------------------------------------------------


def _control(number: int, rng: random.Random, pacing: str) -> Program:
    """A program whose instance 0 gets a terminate(rollback=True), a restart, a restart from a
    step or a delete, the first time run() reaches a chosen op (or once it finished)."""
    kind = rng.choice(["terminate_rollback", "restart", "restart_from", "delete"])
    before = _control_ops(rng, rng.randint(1, 3), "b", undo=kind == "terminate_rollback")
    at = rng.choice(["hold", "x", ""] if kind.startswith("restart") else ["hold", "x"])
    point: Op = Wait("hold", HOLD) if at == "hold" else _random_do(rng, "x", may_fail=False)
    if at != "hold" and rng.random() < 0.3:  # a child step: the control may land as it starts
        point = dataclasses.replace(_child(rng, "x", fails=False), catch=True)
    after = _control_ops(rng, rng.randint(0, 2), "a", undo=kind == "terminate_rollback")
    ops = [*before, point, *after]
    if kind == "restart" and not at and rng.random() < 0.5:
        ops.append(_failing_last(rng, f"a{len(after)}", undo=rng.random() < 0.5))
    from_step = ""
    if kind == "restart_from":
        recorded = [s.name for s in Program(number, tuple(before)).steps()]
        from_step = rng.choice(recorded)
    workflow = LIMITED if rng.random() < 0.2 else WORKFLOW
    instances = 2 if rng.random() < 0.2 else 1
    control = Control(kind, at, from_step)
    return Program(number, tuple(ops), (), instances, pacing, workflow, control)


def _control_ops(rng: random.Random, count: int, prefix: str, *, undo: bool) -> list[Op]:
    """Ops that never fail uncaught and need no event: steps (with rollbacks for a
    terminate(rollback=True)), gathers, sleeps, waits that time out, children."""
    ops: list[Op] = []
    for i in range(count):
        name = f"{prefix}{i}"
        kind = rng.choices(["do", "gather", "sleep", "timeout", "child"], [50, 12, 13, 10, 15])[0]
        if kind == "do":
            do = _random_do(rng, name, may_fail=True)
            ops.append(_with_undo(rng, do) if undo and rng.random() < 0.8 else do)
        elif kind == "gather":
            ops.append(_gather(rng, name, undo=undo))
        elif kind == "sleep":
            ops.append(Sleep(name, rng.choice([30.0, 1800.0])))
        elif kind == "timeout":
            ops.append(Wait(name, f"never-{name}", rng.choice([600.0, 3600.0])))
        else:
            child = _child(rng, name, fails=rng.random() < 0.3)
            ops.append(Child(child.name, child.workflow, child.ops, catch=True))
    return ops
