"""Test kit for your own workflows: the real engine on an in-memory store, with virtual time.

::

    from lambda_workflows.testing import WorkflowTestEnv, Crash

    env = WorkflowTestEnv({"orders": OrderWorkflow})
    inst = env.create("orders", id="o-1", params={"x": 1})
    env.run_until_idle()          # sleeps and retry delays pass in virtual time, instantly
    assert inst.status().status == "complete"

``run_until_idle()`` runs all runnable work; when nothing is runnable it jumps the virtual
clock to the next sleep or retry wake-up and goes on. It returns when every instance is
finished, paused, or waiting for an event. Event-wait timeouts fire only when the test moves
the clock past them (``env.clock.advance("1 day")``).

Raise :class:`Crash` anywhere in ``run()`` or a step callback to kill the invocation as a
Lambda timeout or crash would: nothing of that attempt is recorded, and its work message is
delivered again at once; it takes back the lease it held, and the instance replays from its
journal.

Mocking steps and events
------------------------

As Cloudflare's ``introspectWorkflowInstance(...).modify(...)`` does in Vitest, a test can
decide what a step or an event wait of one instance does, without changing the workflow::

    env.mock_step_result(inst, "charge", {"charged": True})   # the callback is not called
    env.mock_step_error(inst, "fetch", ConnectionError("down"), times=2)  # then the real one
    env.force_step_timeout(inst, "slow call")                 # every attempt times out
    env.mock_event(inst, "approved", {"user": "ana"})          # as if sent
    env.force_event_timeout(inst, "approval")                 # that wait times out at once

- ``mock_step_result(instance, step_name, value)``: each attempt of the step returns
  ``value`` without calling the callback; it is recorded (and replayed) as the step's result.
- ``mock_step_error(instance, step_name, error, times=None)``: each attempt raises ``error``
  without calling the callback — every attempt, or only the first ``times`` attempts, after
  which the real callback runs. Retries, backoff and ``NonRetryableError`` apply as usual, so
  an exhausted step fails ``run()`` with :class:`~lambda_workflows.StepFailedError`.
- ``force_step_timeout(instance, step_name, times=None)``: attempts fail at once with the
  engine's step-timeout error (a ``WorkflowTimeoutError``, as if the callback had run past the
  step's ``timeout``), every attempt or the first ``times``; the callback is not called.
- A ``step.run_workflow`` step takes these three mocks too: the mocked result (or error, or
  timeout) is the child's answer, recorded as the step's, and no child instance is started.
- ``mock_event(instance, type, payload)``: an event of ``type`` is sent to the instance as
  soon as it exists, so its ``wait_for_event(type=...)`` receives it (an early event waits in
  the buffer, as a real one does).
- ``force_event_timeout(instance, step_name)``: that ``wait_for_event`` raises the engine's
  ``WorkflowTimeoutError`` at once, even when an event of its type is waiting (an instance
  already waiting there times out at the next ``run_until_idle``, with no time passing).

``instance`` is a :class:`TestInstance` or an instance id. With an id, the workflow is the
env's only registered workflow; an env with several needs ``workflow="name"`` (an id alone is
ambiguous: ids are unique per workflow). A mock may be registered before the instance exists
(by id) or before it reaches the step; it applies to every call of a step of that name
(steps nested in a callback too), and registering another mock for the same step replaces
it. Mocks change only what has not been recorded yet: a recorded step replays as recorded.
They work the same on both backends and exist only in the test kit.
"""

from __future__ import annotations

from lambda_workflows._testkit.backends import Crash, WakeUp
from lambda_workflows._testkit.clock import VirtualClock
from lambda_workflows._testkit.env import WorkflowTestEnv
from lambda_workflows._testkit.handles import TestInstance, TestWorkflow
from lambda_workflows.engine.instances.replayer import (
    Divergence,
    ReplayDivergence,
    Replayer,
    ReplayResult,
    StepCall,
)

__all__ = [
    "Crash",
    "Divergence",
    "ReplayDivergence",
    "ReplayResult",
    "Replayer",
    "StepCall",
    "TestInstance",
    "TestWorkflow",
    "VirtualClock",
    "WakeUp",
    "WorkflowTestEnv",
]
