"""What the runner is told (:class:`RunnerSettings`) and what one advance reports
(:class:`AdvanceResult`): the plain values around
:class:`lambda_workflows.engine.instances.advance.Runner`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lambda_workflows.engine.errors import SuspendReason
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import FINISHED, InstanceRecord, InstanceStatus

StatusListener = Callable[[InstanceRecord], None]


@immutable
class RunnerSettings:
    """How the runner paces itself.

    Attributes:
        lease_seconds: how long a lease lasts before another runner may take over; a little
            longer than the Lambda timeout.
        inline_wait: waits up to this many seconds are slept in-process instead of ending the
            invocation and scheduling a wake-up.
        margin_seconds: stop (and re-enqueue) when less than this much invocation time is left.
        signal_interval: look for pause/terminate/restart at most this often (seconds) while
            steps run; 0 looks before every new step.
        retention_seconds: how long a finished instance is kept before it expires (TTL),
            unless its workflow class declares a ``retention`` for its outcome.
        max_passes: replay passes per invocation before yielding (a guard against loops).
    """

    lease_seconds: float = 960.0
    inline_wait: float = 0.0
    margin_seconds: float = 30.0
    signal_interval: float = 0.0
    retention_seconds: float = 30 * 86_400.0
    max_passes: int = 1_000


@dataclass(slots=True)
class AdvanceResult:
    """What one advance did, for logs and metrics."""

    status: InstanceStatus | None
    passes: int = 0
    skipped: bool = False
    steps: int = 0  # new steps recorded
    retries: int = 0  # failed attempts recorded for a retry
    suspended: SuspendReason | None = None  # why it stopped early, if it did

    def left(self, updated: InstanceRecord) -> AdvanceResult:
        """This result once the runner let go of the instance, ``updated`` as it left it."""
        self.status = updated.status
        if updated.status is InstanceStatus.PAUSED:
            self.suspended = SuspendReason.PAUSE
        elif updated.status in FINISHED:
            self.suspended = None
        return self
