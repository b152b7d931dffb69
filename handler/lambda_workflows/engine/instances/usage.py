"""What one instance used, counted without a single AWS call of its own: ``status().usage``.

The counts ride on writes the engine makes anyway, so a step costs what it cost before (one
conditional put of its journal entry, nothing else):

- ``invocations``: the first write of the instance item by each runner invocation adds 1:
  its lease (``ADD`` in the same UpdateItem), or the write that takes the lease's place when the
  invocation needed none (a first pass that parks at a sleep, a wake-up that ends the instance: see
  :mod:`lambda_workflows.engine.instances.lazy_lease`). An invocation that writes nothing (the
  instance is finished, paused, or another runner holds it) advances nothing and is not counted; nor
  is the Lambda invocation that carried it.
- ``reads``: loads of the journal by runners. Each invocation that advances the instance
  loads it once (one strongly consistent Query, more pages past 1 MB), so this is the
  invocations count. Not counted: a reload within an invocation (a signal raced the runner, a
  short wait slept in-process, a rollback starting), the load of an invocation that then
  advanced nothing, further pages of a large journal, and every read made for the API
  (``status``, listings, history).
- ``writes``: items written for the instance. Every write of the instance item adds to its
  ``item_writes`` counter in that same write: its creation, each lease taken, renewed or
  given back, each status change, each control (pause, resume, terminate, restart) and each
  event sent (the event item, and its idempotency key's marker, in the same transaction).
  Journal entries are counted when they are loaded: each entry of the current journal
  generation is one write (a conditional put, never updated). On DynamoDB, chunk items of a
  value too large for its item count with their owner's write (params, output, event
  payloads) but not with a journal entry's. Not counted: a conditional write that lost its
  race (DynamoDB bills it all the same), the journal of earlier generations (before a
  restart), a restart's claim on a generation, and TTL refreshes of items older than a year.
- ``schedules``: the write that suspends the instance on a timed wake-up (a sleep, a retry
  delay, an event wait's timeout) adds 1. On AWS a wake-up more than 15 minutes away is an
  EventBridge Scheduler schedule and a nearer one a delayed SQS message; both are counted.
  A retry delay slept in-process (the deployed runner's ≤ 2 s) sets none.

Why not count reads or steps as they happen: either is one more write per step, which would
double what a step costs. The journal is already read whole whenever the instance is
loaded, so its size is known for free; only what leaves no item behind needs a counter.
Instances stored before counting began count from then on.
"""

from __future__ import annotations

from lambda_workflows.engine.model import InstanceStatus, InstanceUsage

from .ports import InstanceState
from .transitions import KEEP, Change

__all__ = ["schedules_in", "usage_of"]


def usage_of(state: InstanceState) -> InstanceUsage:
    """The usage ``status()`` shows for a loaded instance."""
    record = state.record
    return InstanceUsage(
        writes=record.item_writes + len(state.entries),
        reads=record.invocations,
        invocations=record.invocations,
        schedules=record.schedules,
    )


def schedules_in(change: Change) -> int:
    """How many timed wake-ups a change records: 1 when it suspends the instance until a
    wake-up time (the runner scheduled one just before), else 0."""
    suspends = change.status is InstanceStatus.WAITING and change.wake_at is not KEEP
    return int(suspends and change.wake_at is not None)
