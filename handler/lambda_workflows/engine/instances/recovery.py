"""When an instance is overdue: the rule behind the recovery sweep.

Every instance that is neither finished nor paused carries ``due_at``: the time by which
something must have advanced it. A message, a schedule or a runner can be lost (dropped,
dead-lettered, a process that died between two calls); the instance's ``due_at`` cannot, since
it is written in the same conditional write as the status it belongs to. The sweep asks for
instances whose ``due_at`` is past by :data:`SWEEP_MARGIN` and posts a wake-up for each; the
lease makes a wake-up that was not needed harmless.

=====================  =========================================================
status                 due_at
=====================  =========================================================
queued                 when it was queued + :data:`QUEUE_GRACE` (its own message
                       should have started it by then)
running                its lease's expiry (a runner that died stops renewing it)
waiting                its wake-up (sleep, retry delay, event-wait timeout), or
                       the time an event was sent to it
waitingForPause        its lease's expiry (the runner pauses it when it stops)
paused, finished       none: nothing is owed
=====================  =========================================================
"""

from __future__ import annotations

import zlib

from lambda_workflows.engine.model import InstanceRef

QUEUE_GRACE = 120.0  # seconds a queued instance is left to its own first message
SWEEP_MARGIN = 60.0  # the sweep re-enqueues instances overdue by more than this
# The due index is spread over this many partition keys. Each lease, wait and event moves an
# instance's due time (two index writes: out of the old entry, into the new); at 10,000
# transitions per second in one workflow that is ~16,000 writes per second (bench/heat_bench.py),
# ~500 per shard here, under the ~1,000 one partition takes. It may grow, never shrink: the sweep
# asks every shard below it, so instances written under a smaller count are still found.
DUE_SHARDS = 32


def due_shard(ref: InstanceRef) -> str:
    """The due index partition of an instance (stable: derived from its identity)."""
    return f"due#{zlib.crc32(f'{ref.workflow}/{ref.id}'.encode()) % DUE_SHARDS}"


def all_due_shards() -> list[str]:
    """Every partition of the due index, for the sweep."""
    return [f"due#{i}" for i in range(DUE_SHARDS)]
