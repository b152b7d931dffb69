"""The library's error tree.

Everything raised on purpose derives from :class:`WorkflowError`. Errors a workflow author
meets (:class:`NonRetryableError`, :class:`WorkflowTimeoutError`, :class:`StepFailedError`,
:class:`NonDeterminismError`, :class:`SuspensionCaughtError`, ...) are distinct from errors a
caller of the instance API meets (:class:`InvalidInput`, :class:`InstanceAlreadyExists`, ...).
Every message says what to do.

The engine's own control-flow signal (:class:`Suspend`) is a ``BaseException`` so that a
user's ``except Exception`` in ``run()`` can never swallow it.

Avoid non-stdlib imports here: this module is at the bottom of the dependency chain.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class WorkflowError(Exception):
    """Root of every error this library raises on purpose."""

    code = "workflow_error"


# --- raised to workflow authors -------------------------------------------------------------


class NonRetryableError(WorkflowError):
    """Raise inside a step callback to fail the step at once, without further retries."""

    code = "non_retryable"


class StepFailedError(WorkflowError):
    """A ``step.do`` failed for good: its retries are exhausted or it raised NonRetryableError.

    Raised from ``await step.do(...)`` in ``run()``, on the first run as on every replay, so
    ``except StepFailedError`` behaves the same after a restart. The original exception's class
    name and message are kept in :attr:`error_name` and :attr:`message`.
    """

    code = "step_failed"

    def __init__(self, step_name: str, error_name: str, message: str, attempts: int) -> None:
        super().__init__(message)
        self.step_name = step_name
        self.error_name = error_name
        self.message = message
        self.attempts = attempts


class WorkflowTimeoutError(WorkflowError):
    """A ``step.wait_for_event`` timed out, or a step attempt exceeded its ``timeout``."""

    code = "timeout"


class NonDeterminismError(WorkflowError):
    """Replay reached a step that differs from the one the journal recorded at that point."""

    code = "non_determinism"


class UnawaitedStepError(WorkflowError):
    """``run()`` returned while a step it started was never awaited."""

    code = "unawaited_step"


class SuspensionCaughtError(WorkflowError):
    """``run()`` (or a step callback) caught the engine's suspension of a step and went on.

    A step that must wait (a sleep, an event, a retry delay, a pause) stops ``run()`` by raising
    through it: the engine's :class:`Suspend`, or the ``asyncio.CancelledError`` it sends to
    ``run()``. An ``except BaseException``, ``except asyncio.CancelledError``, bare ``except:``
    or a ``return`` in ``finally`` around the step ends that, and ``run()`` would go on as if
    the step had finished. The instance errors instead, with a message naming the step's line
    and, when it can be found, the handler's.
    """

    code = "suspension_caught"


class EventMutationError(NonRetryableError, TypeError):
    """Code tried to change the (deep-frozen) workflow event. A programming error: a step that
    raises it fails at once instead of retrying."""

    code = "event_mutation"


class InvalidStepError(NonRetryableError, ValueError):
    """A step call broke a rule: bad name, bad config, bad duration, too many steps. Raised in
    a step callback (a nested step), it fails that step at once instead of retrying."""

    code = "invalid_step"


class StepLimitExceeded(InvalidStepError):
    """The instance tried to run more steps than its workflow allows."""

    code = "step_limit"


class InstanceFailedError(WorkflowError):
    """What a rollback receives as ``error``: the failure that ended the instance, rebuilt
    from what was recorded (the same on every replay, in every invocation).

    ``name`` is the class name of the exception ``run()`` raised (the original one's for a
    :class:`StepFailedError`), or ``"Terminated"`` (as on Cloudflare) when
    ``terminate(rollback=True)`` started the rollbacks; ``message`` is its message (also
    ``str(error)``).
    """

    code = "instance_failed"

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message

    @property
    def terminated(self) -> bool:
        """True when the rollbacks run because the instance was terminated with rollback."""
        return self.name == TERMINATED_WITH_ROLLBACK


TERMINATED_WITH_ROLLBACK = "Terminated"
"""The ``name`` of the error rollbacks receive when ``terminate(rollback=True)`` started them."""


class InvalidWorkflowError(WorkflowError, ValueError):
    """A workflow class declares something the engine cannot use (a bad ``retention``).
    Raised when the class is defined or registered, before any instance of it runs."""

    code = "invalid_workflow"


class ResultTooLarge(NonRetryableError):
    """A step result, event payload, params or output is larger than the 1 MiB limit."""

    code = "too_large"


class NotSerializable(NonRetryableError):
    """A step result or workflow output cannot be encoded as JSON."""

    code = "not_serializable"


# --- raised to callers of the instance API --------------------------------------------------


class InvalidInput(WorkflowError, ValueError):
    """A request to the instance API is malformed; nothing was written."""

    code = "invalid_input"


class StaleCursor(InvalidInput):
    """A cursor of an instance's steps or history that no longer applies: the instance was
    restarted since it was handed out, so its pages are those of another run. Read them again
    from the first page (without a cursor)."""

    code = "stale_cursor"


class UnknownWorkflow(WorkflowError, LookupError):
    """No workflow is registered under this name."""

    code = "unknown_workflow"


NOTHING_REGISTERED = (
    "no workflows are registered at all; set the WORKFLOWS environment variable to "
    "WORKFLOWS=name=module:Class[,name=module:Class...], e.g. "
    "`WORKFLOWS=orders=my_module:OrderWorkflow lambda-workflows dev` (a module outside the project "
    "also needs its folder on PYTHONPATH; on AWS, set the stack's Workflows parameter)"
)
"""What to do when a runtime serves no workflow (WORKFLOWS unset or empty)."""


class InstanceNotFound(WorkflowError, LookupError):
    """No instance has this id."""

    code = "instance_not_found"


class StepNotFound(WorkflowError, LookupError):
    """The instance recorded no step of this name, occurrence and type; the message lists the
    steps it did record."""

    code = "step_not_found"


class InstanceAlreadyExists(WorkflowError):
    """An instance with this id already exists for the workflow; ids are never reused."""

    code = "instance_exists"

    def __init__(self, workflow: str, instance_id: str) -> None:
        super().__init__(
            f"instance '{instance_id}' of workflow '{workflow}' already exists; instance ids "
            "must be unique across all future instances (use a transaction or order id, or "
            "omit the id to get a generated one)"
        )
        self.workflow = workflow
        self.instance_id = instance_id


class InvalidTransition(WorkflowError):
    """The instance's status does not allow this action (e.g. terminate a finished instance)."""

    code = "invalid_transition"


# --- raised inside the engine ---------------------------------------------------------------


class InfrastructureError(WorkflowError):
    """An AWS service failed (throttled, unavailable, timed out, refused): safe to retry.

    Never a step failure: the engine stops the pass, gives the work back and it is delivered
    again later. A write whose call timed out may have happened; whoever retries it resolves
    that by reading back, never by guessing.
    """

    code = "infrastructure_error"


class StorageError(InfrastructureError):
    """The instance store (DynamoDB) failed; safe to retry."""

    code = "storage_error"


class ConcurrentModification(WorkflowError):
    """A conditional write found the instance changed by someone else; reload and retry."""

    code = "conflict"


class ConfigurationError(WorkflowError):
    """The runtime is configured wrongly (a bad ``WORKFLOWS`` entry, a missing environment
    variable, no workflow registered); the message says which setting to fix."""

    code = "configuration_error"


class SuspendReason(StrEnum):
    """Why a replay pass stopped before ``run()`` ended (equal to its string: ``== "sleep"``).

    Control reasons stop the pass now; timer reasons (sleep, retry, event) come with the time
    at which the instance must be woken up again.
    """

    INFRA = "infra"  # a store call failed (throttled, unreachable, outcome unknown)
    LOST = "lost"  # another runner took the lease: nothing more is ours to write
    TERMINATE = "terminate"  # the instance was terminated meanwhile
    RESTART = "restart"  # the instance was restarted meanwhile (a new generation)
    PAUSE = "pause"  # a pause was requested
    ROLLBACK = "rollback"  # terminate(rollback=True): stop going forward, run the rollbacks
    RELOAD = "reload"  # the journal changed under the pass: load it again and replay
    YIELD = "yield"  # out of time in this invocation: hand the instance to the next one
    SLEEP = "sleep"  # a step.sleep / sleep_until is not due yet
    RETRY = "retry"  # a failed step.do attempt waits for its retry delay
    EVENT = "event"  # a step.wait_for_event has no event yet (woken at its timeout)


class Suspend(BaseException):
    """Unwinds ``run()`` when the instance must stop here for now.

    A ``BaseException`` on purpose: a user's ``except Exception`` must not swallow it. The
    runner, not ``run()``, decides what happens next (schedule a wake-up, pause, stop).
    """

    def __init__(
        self, reason: SuspendReason, wake_at: float | None = None, detail: str = ""
    ) -> None:
        super().__init__(reason, wake_at, detail)
        self.reason = reason
        self.wake_at = wake_at
        self.detail = detail


def error_name(exc: BaseException) -> str:
    """The name recorded for an exception: the original name for a StepFailedError."""
    if isinstance(exc, StepFailedError):
        return exc.error_name
    return type(exc).__name__


MAX_ERROR_MESSAGE = 8_000  # characters of an error message kept in the journal


def error_message(exc: BaseException) -> str:
    """The message recorded for an exception (its ``str``, or its class name when empty),
    cut to :data:`MAX_ERROR_MESSAGE` characters so a huge message cannot make the journal
    write itself fail."""
    text = str(exc) or type(exc).__name__
    if len(text) > MAX_ERROR_MESSAGE:
        text = text[:MAX_ERROR_MESSAGE] + f"... ({len(text) - MAX_ERROR_MESSAGE:,} more characters)"
    return text


def describe(value: Any, limit: int = 60) -> str:
    """A short ``repr`` for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
