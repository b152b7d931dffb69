"""``step.do``: replay a recorded outcome, or run new attempts with retries.

A step whose final outcome (a ``STEP`` entry) is recorded returns that value, or raises
:class:`StepFailedError`, without calling the callback again. Otherwise the next attempt runs,
once the recorded retry delay of the last failed attempt is over, inside a
:class:`~.base.StepScope` so that steps nested in the callback are counted under it. A failed
attempt is recorded as an ``ATTEMPT`` entry with its retry time, and the pass suspends until
then; the last attempt allowed (or a :class:`NonRetryableError`) is recorded as the step's
final error instead.

A delay function (``retries.delay`` given as ``(ctx, error) -> duration``) is called once per
failed attempt that will be retried, before its ``ATTEMPT`` entry is written: the retry time it
yields is what is recorded, so a replay reads it and never calls the function again. A delay
function that raises (or returns something that is not a duration) fails the step for good.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from lambda_workflows.engine import codec
from lambda_workflows.engine.config import StepConfig
from lambda_workflows.engine.errors import (
    InvalidStepError,
    StepFailedError,
    SuspendReason,
    error_message,
    error_name,
)
from lambda_workflows.engine.model import EntryKind, ErrorInfo, JournalEntry
from lambda_workflows.engine.replay.callbacks import call_with_timeout, wants_context
from lambda_workflows.engine.replay.journal import attempt_key, shifted
from lambda_workflows.engine.step import StepContext, StepIdentity, StepRollback
from lambda_workflows.engine.tracebacks import user_traceback

from .base import SCOPE, Call, Pass, Registered, StepScope
from .retries import (
    DELAY_ERROR,
    delay_error,
    next_retry,
    retry_delay,
)

__all__ = ["DELAY_ERROR", "delay_error", "outcome", "retry_delay", "run"]

log = logging.getLogger("lambda_workflows.replay")

_RETRIED: Final = object()  # an attempt failed and its retry is recorded: run the next one


async def run(
    replay: Pass,
    name: str,
    config: StepConfig,
    callback: Callable[..., Any],
    rollback: StepRollback | None = None,
) -> Any:
    """The body of ``step.do``: replay the recorded outcome or run new attempts.

    A step with a ``rollback`` registers it with the pass once it has started (a recorded
    outcome or attempt, or its first attempt about to run): see :mod:`.rollback`.
    """
    call = replay.enter(name, "do")
    registered = None if rollback is None else Registered(call, config, callback, rollback)
    if registered is not None and call.position is None:
        raise InvalidStepError(
            f"step.do({name!r}, ...) inside another step's callback cannot take a rollback: "
            "rollbacks belong to the steps run() calls; give the enclosing step the rollback"
        )
    recorded = replay.journal.entries.get(call.key)
    if recorded is not None and recorded.kind is EntryKind.STEP:
        if registered is not None:
            replay.register_rollback(registered)
        return outcome(recorded, callback)
    return await _Attempts(replay, call, config, callback, registered).run()


def outcome(entry: JournalEntry, callback: Callable[..., Any]) -> Any:
    """What ``await step.do`` gives ``run()`` for a recorded final outcome.

    Raises:
        StepFailedError: the step failed for good, on the first run as on every replay.
    """
    if entry.error is not None:
        raise StepFailedError(entry.name, entry.error.name, entry.error.message, entry.attempt)
    return codec.decode(entry.result, codec.return_type(callback))


class _Attempts:
    """The new attempts of one ``step.do`` call in this pass."""

    def __init__(
        self,
        replay: Pass,
        call: Call,
        config: StepConfig,
        callback: Callable[..., Any],
        registered: Registered | None,
    ) -> None:
        self.replay = replay
        self.call = call
        self.config = config
        self.callback = callback
        self.registered = registered
        self.attempt = 1
        self.started_at = 0.0
        self.attempt_started_at = 0.0
        self.with_context = False

    async def run(self) -> Any:
        """Run attempts until one succeeds or the step fails for good (or the pass suspends)."""
        replay, key = self.replay, self.call.key
        failed = replay.journal.attempts.get(key, [])
        if failed:
            self._register()  # it started in an earlier pass
            last = failed[-1]
            self.attempt = last.attempt + 1
            due = shifted(last.wake_at or last.at, last.at, replay.pauses)
            if replay.now() < due:
                replay.suspend(SuspendReason.RETRY, due)
        replay.before_new_step(key)
        self._register()
        # A step's start is its first attempt's, even when later attempts run in later passes.
        self.started_at = (failed[0].started_at if failed else None) or replay.now()
        self.with_context = wants_context(self.callback)
        while True:
            value = await self._attempt()
            if value is not _RETRIED:
                return value

    def _register(self) -> None:
        if self.registered is not None:
            self.replay.register_rollback(self.registered)

    async def _attempt(self) -> Any:
        """Run the callback once: the step's value, or ``_RETRIED`` once a retry is recorded."""
        call, attempt = self.call, self.attempt
        ctx = StepContext(StepIdentity(call.name, call.count), attempt, self.config.to_dict())
        args = (ctx,) if self.with_context else ()
        label = f"step {call.name!r} attempt {attempt}"
        scope = StepScope(call.key, call.name, attempt)
        token = SCOPE.set(scope)
        self.attempt_started_at = self.replay.now()
        try:
            body = self.replay.stand_in(ctx) or self.callback  # a test's mock, else the callback
            alone = self.replay.alone()
            value = await call_with_timeout(body, args, self.config.timeout, label, alone=alone)
            result = codec.encode(value, what=f"result of step {call.name!r}")
        except Exception as exc:
            if scope.suspended is not None:  # the callback caught a nested step's suspension
                self.replay.suspension_caught(scope.suspended, call.name)
            return await self._failed(exc, ctx)
        finally:
            SCOPE.reset(token)
        if scope.suspended is not None:
            self.replay.suspension_caught(scope.suspended, call.name)
        entry = call.entry(
            EntryKind.STEP,
            self.replay.now(),
            started_at=self.started_at,
            attempt_started_at=self.attempt_started_at,
            result=result,
            attempt=attempt,
            sensitive=self.config.sensitive,
        )
        return outcome(await self.replay.write(entry), self.callback)

    async def _failed(self, exc: Exception, ctx: StepContext) -> Any:
        """Record a failed attempt: the step's final error, or a retry and its delay.

        Called while handling ``exc``, so a final StepFailedError keeps it as its context.
        """
        call, attempt, replay = self.call, self.attempt, self.replay
        error = ErrorInfo(error_name(exc), error_message(exc), user_traceback(exc))
        log.info(
            "step %r attempt %d failed: %s: %s",
            call.name,
            attempt,
            error.name,
            error.message,
            extra={"step": call.name, "attempt": attempt},
        )
        retry = await next_retry(self.config, exc, error, ctx, f"step {call.name!r}")
        error, delay = retry.error, retry.delay
        if delay is None:
            final = call.entry(
                EntryKind.STEP,
                replay.now(),
                started_at=self.started_at,
                attempt_started_at=self.attempt_started_at,
                error=error,
                attempt=attempt,
            )
            return outcome(await replay.write(final), self.callback)
        retry_at = replay.now() + delay
        retried = call.entry(
            EntryKind.ATTEMPT,
            replay.now(),
            key=attempt_key(call.key, attempt),
            started_at=self.started_at,
            attempt_started_at=self.attempt_started_at,
            error=error,
            attempt=attempt,
            wake_at=retry_at,
        )
        await replay.write(retried)
        if retry_at > replay.now():
            replay.suspend(SuspendReason.RETRY, retry_at)
        self.attempt += 1
        replay.before_new_step(call.key)
        return _RETRIED
