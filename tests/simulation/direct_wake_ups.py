"""Wake-up schedules that invoke the runner directly, as the driver fires them: the schedule's
input is the runner's event; a failed invocation's record goes to the work queue (the runner's
OnFailure destination, once Lambda's retries are spent); a runner fault met during one (a
concurrent copy, a takeover, a duplicate) is another invocation of the same wake-up."""

from __future__ import annotations

import threading
from typing import Any

from lambda_workflows.aws.wake_events import LeaseHeldByThisWakeUp
from lambda_workflows.local.embedded import invocation_record
from lambda_workflows.testing import Crash

from . import lambdas
from .world import World

DIRECT = "direct wake-up"  # in the driver's records: a direct invocation's event, no SQS record


class DirectWakeUps:
    """The driver's direct wake-ups (a mixin: it uses the driver's state and its ``_call``)."""

    world: World
    anomalies: list[str]
    _invocations: int
    _records: list[dict[str, Any]]
    _runner: str
    _other_runner: str

    def _call(self, container: str, handler: Any, *args: Any) -> Any:
        raise NotImplementedError  # the driver's

    def _wake(self, payload: dict[str, Any], container: str | None = None) -> None:
        """A wake-up schedule's asynchronous invocation of the runner. If it fails, its record
        goes to the work queue (the runner's OnFailure destination, Lambda's retries spent)."""
        self._invocations += 1
        invocation = self.world.faults.begin("runner", bool(self._records))
        self._records.append({DIRECT: payload})
        try:
            self._call(container or self._runner, lambdas.runner, payload, lambdas.context())
        except (Crash, Exception) as exc:
            if not invocation.faults and not isinstance(exc, LeaseHeldByThisWakeUp):
                self.anomalies.append(f"a direct wake-up failed with no fault injected: {exc!r}")
            arn = lambdas.context().invoked_function_arn
            self.world.send(invocation_record(payload, arn, type(exc).__name__))
        except BaseException as exc:
            self.anomalies.append(f"exception escaped the runner handler: {exc!r}")
        finally:
            self._records.pop()
            self.world.faults.end(invocation)
        if invocation.duplicate:  # at-least-once: the same event, invoked once more
            self._wake(payload, self._other_runner)

    def _nested_wake(self, kind: str, payload: dict[str, Any]) -> None:
        """A second runner on the instance of a direct wake-up, while the first is between two
        calls: the same event (concurrent), or a later wake-up once its lease ran out."""
        if kind == "takeover":
            self.world.clock.advance(self.world.lease_seconds(self._runner) + 1)
            payload = {
                **payload,
                "wake": {"execution": f"takeover-{self._invocations}", "attempt": "1"},
            }

        def second_runner() -> None:
            try:
                self._wake(payload, self._other_runner)
            except Exception as exc:  # the driver's own failure: say so, never lose it
                self.anomalies.append(f"harness error in a {kind} runner: {exc!r}")

        thread = threading.Thread(target=second_runner)
        thread.start()  # its own thread: the first runner's event loop is still running
        thread.join()
