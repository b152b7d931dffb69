"""``step.run_workflow``: start a child workflow and wait for its end, as a durable step.

Modelled on :mod:`.wait_for_event` (the design is argued in
:mod:`lambda_workflows.engine.instances.children`): the first pass creates the child and records a
``WAIT`` entry on the child's own event type, ``child:<workflow>/<id>``, in one atomic write (so a
terminate of the parent always finds its child); every pass until the child's end is in the mailbox
suspends, holding no compute. The child's end stores that event and wakes the parent, and the pass
that finds it records the ``DELIVERY``: the child's output, or its error, which ``run()`` gets as
:class:`StepFailedError` (on the first run as on every replay). A child that could not be started
(its workflow is not registered, its id is taken by another instance) is recorded the same way, as a
failed step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lambda_workflows.engine import codec
from lambda_workflows.engine.errors import (
    StepFailedError,
    SuspendReason,
    WorkflowTimeoutError,
    error_message,
    error_name,
)
from lambda_workflows.engine.model import (
    CHILD_EVENT_PREFIX,
    EntryKind,
    ErrorInfo,
    InstanceRef,
    JournalEntry,
)
from lambda_workflows.engine.replay.child_steps import (
    ChildOutcome,
    child_event_type,
    child_of,
    child_outcome,
)
from lambda_workflows.engine.replay.journal import delivery_key
from lambda_workflows.engine.step import StepContext, StepIdentity

from .base import Call, Pass

__all__ = ["TERMINATED", "run"]

TERMINATED = "Terminated"
"""The error name a step gets when its child was terminated."""


async def run(
    replay: Pass, name: str, workflow: str, params: str, id: str | None, timeout: float
) -> Any:
    """The body of ``step.run_workflow``: the child's (decoded) output."""
    call = replay.enter(name, "run_workflow")
    answered = replay.journal.entries.get(delivery_key(call.key))
    if answered is not None:
        return _result(replay, answered)
    started = replay.journal.entries.get(call.key)
    now = replay.now()
    if started is None:
        # the child and the wait are one transaction the first writer wins: no lease needed
        replay.before_new_step(call.key, needs_lease=False)
        mocked = await _stand_in(replay, call, workflow, timeout)
        if mocked is not None:
            return _result(replay, await replay.write(mocked))
        child = replay.start_child(call, workflow, id, params, _wait_for(call, now, timeout))
        if child.error is not None:
            refused = _answer(call, child.ref, now, now, child.error)
            return _result(replay, await replay.write(refused))
        assert child.wait is not None, "a child started has its wait recorded"
        started = child.wait
    ref = child_of(started)
    assert ref is not None, "a run_workflow wait names its child"
    event = replay.journal.next_event(child_event_type(ref))
    if event is not None:
        error = _error(child_outcome(event.payload), ref)
        answer = _answer(call, ref, now, started.at, error, event.id)
        return _result(replay, await replay.write(answer))
    deadline = started.wake_at or now
    if now < deadline:
        replay.suspend(SuspendReason.EVENT, deadline)
    message = (
        f"step.run_workflow({name!r}) timed out: child workflow {ref.workflow} instance "
        f"{ref.id!r} did not finish within the step's timeout"
    )
    timed_out = ErrorInfo(WorkflowTimeoutError.__name__, message)
    return _result(replay, await replay.write(_answer(call, ref, now, started.at, timed_out)))


def _wait_for(call: Call, now: float, timeout: float) -> Callable[[InstanceRef], JournalEntry]:
    """The step's wait for ``child``: recorded with the child's creation, in one write."""

    def wait(child: InstanceRef) -> JournalEntry:
        return call.entry(
            EntryKind.WAIT,
            now,
            started_at=now,
            wake_at=now + timeout,
            event_type=child_event_type(child),
        )

    return wait


async def _stand_in(replay: Pass, call: Call, workflow: str, timeout: float) -> JournalEntry | None:
    """The answer a test's mock gives this step (the test kit's interceptor), recorded as the
    child's end would be, no child started; None when nothing stands in for it."""
    ctx = StepContext(StepIdentity(call.name, call.count), 1, {"timeout": timeout})
    act = replay.stand_in(ctx)
    if act is None:
        return None
    now = replay.now()
    fields: dict[str, Any] = {"started_at": now, "event_type": f"{CHILD_EVENT_PREFIX}{workflow}/"}
    try:
        value = await act(ctx)
    except Exception as exc:
        error = ErrorInfo(error_name(exc), error_message(exc))
        return call.entry(
            EntryKind.DELIVERY, now, key=delivery_key(call.key), error=error, **fields
        )
    result = codec.encode(value, what=f"mocked result of step {call.name!r}")
    return call.entry(EntryKind.DELIVERY, now, key=delivery_key(call.key), result=result, **fields)


def _answer(
    call: Call,
    child: InstanceRef,
    now: float,
    began: float,
    error: ErrorInfo | None,
    event_id: str | None = None,
) -> JournalEntry:
    """The entry that ends the step: the child's end (its event), or why there is none."""
    return call.entry(
        EntryKind.DELIVERY,
        now,
        key=delivery_key(call.key),
        started_at=began,
        error=error,
        event_type=child_event_type(child),
        event_id=event_id,
    )


def _error(outcome: ChildOutcome, child: InstanceRef) -> ErrorInfo | None:
    """The step's error for a child's end: None when it completed."""
    if outcome.status == "complete":
        return None
    if outcome.error is not None and outcome.status == "errored":
        return outcome.error
    message = f"child workflow {child.workflow} instance {child.id!r} was terminated"
    return ErrorInfo(TERMINATED, message)


def _result(replay: Pass, entry: JournalEntry) -> Any:
    """What ``await step.run_workflow`` gives ``run()`` for a recorded answer.

    Raises:
        StepFailedError: the child errored or was terminated, or could not be started.
    """
    if entry.error is not None:
        raise StepFailedError(entry.name, entry.error.name, entry.error.message, 1)
    if entry.event_id is None and entry.result is not None:  # a test's mock answered
        return codec.decode(entry.result)
    event = replay.journal.event(entry.event_id or "")
    if event is None:  # another runner recorded the answer: load its event
        replay.suspend(SuspendReason.RELOAD)
    output = child_outcome(event.payload).output
    return None if output is None else codec.decode(output)
