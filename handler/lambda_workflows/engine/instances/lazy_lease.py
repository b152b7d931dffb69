"""The lazy lease: a runner takes an instance's lease only when something needs it.

A runner used to start every invocation by taking the lease (a write of the instance item), then
load, replay and write where the instance goes next (a second write). Most invocations of a sleeping
or waiting instance run no code of their own: the first pass reaches the sleep (or the event wait)
and suspends; the wake-up's pass finds the sleep over and ``run()`` returns. Neither needs a lease,
which only keeps a *second* runner from running the same step code at the same time. So the runner
loads first and replays without a lease, and takes it (the same conditional write as before) only
right before new work that runs code: a ``step.do`` attempt or a rollback (see
:meth:`lambda_workflows.engine.replay.core.Replay.before_new_step`). A sleep's or an event wait's
journal entry is a conditional put that the first writer wins, whoever writes it; so is a child's
start (the child and the parent's wait in one transaction, the child's id fixed by the step: see
:mod:`lambda_workflows.engine.instances.children`).

If the pass ends before anything needed the lease, where the instance goes (waiting,
finished, ...) is written as one conditional update that holds only if the instance is as the
runner loaded it: the same ``version`` (no event, pause, terminate, restart or other runner
wrote since) and no lease live now — the checks the lease itself would have made. That write
also does what the lease write did for the instance: it counts the invocation and stamps
``started_at``. A sleeping instance's item is thus written three times (create, wait, end)
instead of five (create, lease, wait, lease, end).

When that write's condition fails, something moved the instance since the load: the runner
takes the lease as before, loads again and replays, exactly as it always did. When the lease
taken mid-pass shows the instance moved since the load (its version is not the loaded one
plus the lease's own bump), the pass stops and replays on a fresh load, under the lease.

Kept from the eager lease: the wake-up is scheduled before the status write, which carries
``due_at`` for the recovery sweep; a copy of the same delivery is turned away as soon as one of the
two takes the lease, and before that neither ran any step code; an instance of a workflow with a
concurrency limit is always leased first (the lease takes its slot: see
:mod:`lambda_workflows.engine.instances.slots`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import InstanceRecord

from .transitions import Change


@immutable
class LeaseHolder:
    """Who takes an instance's lease: a work message (``owner``, its id) and which delivery of
    it (``delivery``, SQS's receive count: 1 the first time); or a wake-up schedule's direct
    invocation (``owner`` its Scheduler execution id, ``delivery`` its attempt x 1000, and the
    same wake-up come back through the work queue a later delivery: see
    :mod:`lambda_workflows.aws.wake_events`).

    SQS delivers a message at least once and may hand one delivery to two runners at the same
    time: the second finds the lease held and is turned away. A *later* delivery (a higher
    receive count) takes back a live lease its message held: the earlier delivery gave the
    message back after a failure it could not release the lease through, or its invocation
    died, so nobody is using that lease. The runner that lost it stops at its next look at its
    lease, and every write it still makes is conditional (first writer wins, ``version``)."""

    owner: str
    delivery: int = 1


@dataclass(slots=True)
class Lease:
    """An advance's lease on its instance: not taken yet (``record`` None), or taken, with
    the record the lease write returned.

    ``fresh`` is that record when the lease was taken during the pass that just ran: the
    pass's ending is written on top of it (its version), not on the record loaded before.
    """

    holder: LeaseHolder
    record: InstanceRecord | None = None
    fresh: InstanceRecord | None = None

    @property
    def taken(self) -> bool:
        """True once this advance holds the lease."""
        return self.record is not None

    def took(self, record: InstanceRecord, *, mid_pass: bool = False) -> None:
        """The lease write succeeded and returned ``record``."""
        self.record = record
        if mid_pass:
            self.fresh = record

    def as_loaded(self, loaded: InstanceRecord, leased: InstanceRecord) -> bool:
        """True when the lease taken mid-pass found the instance as ``loaded`` (nothing but
        the lease itself wrote it since)."""
        return leased.version == loaded.version + 1 and leased.generation == loaded.generation


def unleased(change: Change, record: InstanceRecord, now: float) -> Change:
    """``change`` written without a lease: it also does what the lease write would have done
    for the instance — count the invocation and stamp its start (see
    :mod:`lambda_workflows.engine.instances.usage`). Absolute values, exact under the write's
    condition on ``record``'s version."""
    counted = dataclasses.replace(change, invocations=record.invocations + 1)
    if record.started_at is None:
        return dataclasses.replace(counted, started_at=now)
    return counted
