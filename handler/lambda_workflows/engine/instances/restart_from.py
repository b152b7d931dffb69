"""Restart from a step: what of the journal the new generation starts with.

A restart runs ``run()`` again in a new generation of the journal. A restart from a step keeps
the results recorded before that step: the new generation starts with copies of their entries,
so replay returns them without calling their callbacks, and everything from that step on
(in ``run()``'s call order, the journal's positions) runs again. The step is a root step of
``run()``; a step nested in another step's callback restarts that root step, whose callback
(and every step nested in it) runs again.

Kept: every forward entry (result, failed attempt, sleep, wait, delivery) of a root step called
before the cut, and of the steps nested in it; and the rollback of such a step when it ran to
its end. Not kept: anything from the cut on, a rollback that failed or did not finish, and the
buffered events no kept wait consumed. The event a kept wait received is copied into the new
generation under a new id (``<its id>.<generation>``), so the wait returns it again.

Why a finished rollback is kept with its step (Cloudflare's engine does the same): the step's
result is kept although its effect was undone, so its callback does not run again; if the
restarted run fails too, its rollback must not run a second time (a refund refunded twice).
Its recorded ``ROLLBACK`` entry makes the next chain pass over it, as a rollback recorded in
the same generation would be. A rollback that failed never undid the effect: the next failure
tries it again.

Why copies, in a generation no other restart can use (see ``InstanceService.restart``): the
copies are written before the instance moves to the new generation, by the same conditional
write on ``version`` as any restart, so no runner ever sees the generation half-written; a
runner still busy in the old generation writes only there; and from then on the new generation
is an ordinary journal with one recorded result per key (exactly once, first writer wins).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from lambda_workflows.engine.errors import InvalidInput
from lambda_workflows.engine.model import ROLLBACK_KINDS, EntryKind, EventRecord, JournalEntry
from lambda_workflows.engine.replay.journal import NEST, UNIT, base_key

from .ports import InstanceState
from .recorded_steps import (
    FORWARD_KINDS,
    StepSelector,
    describe_steps,
    find_step,
    recorded_steps,
    root_positions,
)

__all__ = ["Kept", "kept_before"]


@dataclass(frozen=True, slots=True)
class Kept:
    """What a restart from a step copies into the new generation."""

    entries: list[JournalEntry] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.entries or self.events)


def kept_before(state: InstanceState, selector: StepSelector, generation: int) -> Kept:
    """The entries and events of ``state`` recorded before the step ``selector`` names, ready
    to be written into ``generation``.

    Raises:
        InvalidInput: the journal holds no such step (the message lists the recorded ones).
    """
    steps = recorded_steps(state.entries)
    step = find_step(steps, selector)
    if step is None or step.position is None:
        raise InvalidInput(
            f"instance '{state.record.id}' has no step {selector} to restart from; "
            f"{describe_steps(steps)}. Nothing was changed"
        )
    cut = step.position
    positions = root_positions(state.entries)
    events = {event.id: event for event in state.events}
    undone = {  # the rollbacks that ran to their end: kept with their step
        e.key for e in state.entries if e.kind is EntryKind.ROLLBACK and e.error is None
    }
    kept = Kept()
    for entry in state.entries:
        if entry.kind in ROLLBACK_KINDS and base_key(entry) not in undone:
            continue
        root = positions.get(_step_of(entry).split(NEST, 1)[0])
        if entry.kind not in FORWARD_KINDS | ROLLBACK_KINDS or root is None or root >= cut:
            continue
        if entry.kind is EntryKind.DELIVERY and entry.event_id is not None:
            event = events.get(entry.event_id)
            if event is None:  # never the case: a delivery's event is in its generation
                continue
            copied = dataclasses.replace(
                event, id=f"{event.id.split('.', 1)[0]}.{generation}", generation=generation
            )
            kept.events.append(copied)
            entry = dataclasses.replace(entry, event_id=copied.id)
        kept.entries.append(entry)
    return kept


def _step_of(entry: JournalEntry) -> str:
    """The key of the step ``entry`` belongs to (a rollback's, its step's)."""
    key = base_key(entry)
    return key.rsplit(UNIT, 1)[0] if entry.kind in ROLLBACK_KINDS else key
