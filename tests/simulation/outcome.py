"""What a run left behind, read back from the table with the world's own (fault-free) client:
every instance the run created — its own, their children, the scheduled ones — each under a
*role* that names it the same way in every run of the program (ids differ between runs).

Roles: ``top<k>`` (instance k of the program), ``<parent role>/<step>`` (the child a parent's
current generation started in that step; ``.../<step>@old`` for one an earlier generation
started), ``fire/<UTC time>`` (the instance of a schedule's firing), ``stray/<workflow>/<id>``
(anything else: an instance nobody asked for).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from lambda_workflows.aws import items as it
from lambda_workflows.engine import codec
from lambda_workflows.engine.model import InstanceRecord, InstanceRef
from lambda_workflows.engine.replay.child_steps import child_of

from .faults import Call, Fault
from .model import canonical_journal
from .program import CHILD, LIMITED, SCHEDULED, WORKFLOW
from .workflows import UndoCall
from .world import World

CHILD_EVENTS = "child:"


@dataclass
class InstanceOutcome:
    """How an instance ended up."""

    role: str
    workflow: str
    id: str
    status: str  # an instance status, "deleted" (a tombstone) or "missing" (never created)
    output: Any = None
    error: dict[str, str] | None = None
    journal: dict[str, list[Any]] = field(default_factory=dict)
    events: list[tuple[str, Any]] = field(default_factory=list)  # stored (type, payload)
    delivered: list[str] = field(default_factory=list)  # event ids consumed by waits
    rollback: dict[str, Any] | None = None
    parent: tuple[str, str, str] | None = None  # workflow, id, step
    generations: list[int] = field(default_factory=list)  # of its journal, oldest first
    child_events: Counter[tuple[int, str]] = field(default_factory=Counter)  # answers stored,
    # by generation and child event type
    children: dict[str, str] = field(default_factory=dict)  # step -> the child its current
    # generation waits for (or got the answer of)
    leftovers: list[str] = field(default_factory=list)  # a deleted one's items besides the
    slot: int | None = None  # tombstone


@dataclass
class RunResult:
    """Everything one run left behind that the invariants look at."""

    instances: dict[str, InstanceOutcome]  # by role
    seen: dict[str, list[tuple[str, Any]]]  # by role
    undone: dict[str, list[UndoCall]]  # by role
    accepted: dict[str, Counter[str]]  # by role
    anomalies: list[str]
    journal_puts: Counter[str]
    trace: list[Call]
    injected: Counter[str]
    unfired: list[Fault]
    dead_letters: list[str]
    limit_breaches: list[str] = field(default_factory=list)
    slots: dict[str, list[str]] = field(default_factory=dict)  # limited: holders and line
    firings: dict[str, str] = field(default_factory=dict)  # role -> scheduled time
    controls: list[str] = field(default_factory=list)  # what the control operation answered


def read_instances(world: World, top: list[str], workflow: str) -> dict[str, InstanceOutcome]:
    """Every instance in the table, by role (``top``: the program's own, of ``workflow``)."""
    found: dict[str, InstanceOutcome] = {}
    for k, iid in enumerate(top):
        found[f"top{k}"] = read(world, f"top{k}", InstanceRef(workflow, iid))
    known = {(o.workflow, o.id) for o in found.values()}
    roles = {(o.workflow, o.id): role for role, o in found.items()}
    for name in (WORKFLOW, CHILD, LIMITED, SCHEDULED):
        for pk in world.partitions(it.instance_pk(name, "")):
            ref = it.instance_ref(pk)
            assert ref is not None
            if (ref.workflow, ref.id) in known:
                continue
            outcome = read(world, "", ref)
            outcome.role = _role(outcome, found, roles)
            found[outcome.role] = outcome
    return found


def _role(
    outcome: InstanceOutcome, found: dict[str, InstanceOutcome], roles: dict[tuple[str, str], str]
) -> str:
    if outcome.parent is not None:
        workflow, id, step = outcome.parent
        parent = found.get(roles.get((workflow, id), ""))
        if parent is not None:
            if parent.status == "deleted" or parent.children.get(step) == outcome.id:
                return f"{parent.role}/{step}"  # of its current generation (or it is gone)
            return f"{parent.role}/{step}@old"
    if outcome.workflow == SCHEDULED and outcome.id.startswith(f"{SCHEDULED}-"):
        return f"fire/{outcome.id.removeprefix(f'{SCHEDULED}-')}"
    return f"stray/{outcome.workflow}/{outcome.id}"


def read(world: World, role: str, ref: InstanceRef) -> InstanceOutcome:
    """One instance's outcome from its partition."""
    items = world.partition(it.instance_pk(ref.workflow, ref.id))
    by_sk = {i["sk"]["S"]: i for i in items}
    instance = by_sk.get(it.INSTANCE_SK)
    if instance is None:
        return InstanceOutcome(role, ref.workflow, ref.id, "missing")
    if it.is_deleted(instance):
        leftovers = sorted(sk for sk in by_sk if sk != it.INSTANCE_SK)
        return InstanceOutcome(role, ref.workflow, ref.id, "deleted", leftovers=leftovers)
    chunks = {sk: i for sk, i in by_sk.items() if it.CHUNK_MARK in sk}
    record = it.instance_record(instance, chunks)
    entries = [
        it.journal_entry(i, chunks)
        for sk, i in by_sk.items()
        if sk.startswith(it.journal_sk(record.generation, "")) and it.CHUNK_MARK not in sk
    ]
    events = [
        it.event_record(i, chunks)
        for sk, i in by_sk.items()
        if sk.startswith(it.EVENT_PREFIX) and it.CHUNK_MARK not in sk
    ]
    current = [e for e in events if e.generation == record.generation]
    return InstanceOutcome(
        role=role,
        workflow=ref.workflow,
        id=ref.id,
        status=str(record.status),
        output=codec.decode(record.output) if record.output is not None else None,
        error=dict(record.error) if record.error else None,
        journal=canonical_journal(entries, current),
        events=[
            (e.type, codec.decode(e.payload))
            for e in current
            if not e.type.startswith(CHILD_EVENTS)
        ],
        delivered=[e.event_id for e in entries if e.event_id],
        rollback=_rollback(record),
        parent=_parent(record),
        generations=_generations(by_sk, record.generation),
        child_events=Counter(
            (e.generation, e.type) for e in events if e.type.startswith(CHILD_EVENTS)
        ),
        children={e.name: c.id for e in entries if (c := child_of(e)) is not None},
        slot=record.slot,
    )


def _parent(record: InstanceRecord) -> tuple[str, str, str] | None:
    shown = record.parent
    return None if shown is None else (shown["workflow"], shown["id"], shown["step"])


def _rollback(record: InstanceRecord) -> dict[str, Any] | None:
    rollback = record.rollback
    if rollback is None:
        return None
    return {
        "status": str(rollback.status),
        "ends_as": str(rollback.ends_as),
        "cause": {"name": rollback.cause.name, "message": rollback.cause.message},
        "failed_step": None if rollback.failed_step is None else rollback.failed_step.name,
    }


def _generations(by_sk: dict[str, Any], current: int) -> list[int]:
    """The journal generations the partition holds entries of, and the current one."""
    found = {current}
    for sk in by_sk:
        if sk.startswith(it.JOURNAL_PREFIX):
            found.add(int(sk[len(it.JOURNAL_PREFIX) :].split("#", 1)[0]))
    return sorted(found)


def slot_items(world: World, workflow: str) -> list[str]:
    """What the limited workflow's slots and lines hold: ``slot k held by <id>`` and ``<id>
    in line``; empty when every slot is free and nobody waits."""
    held = []
    for pk in world.partitions(f"S#{workflow}#"):
        for item in world.partition(pk):
            if "holder" in item:
                held.append(f"{pk} held by {item['holder']['S']}")
    for pk in world.partitions(f"Q#{workflow}#"):
        held += [f"{item['sk']['S']} in line {pk}" for item in world.partition(pk)]
    return held
