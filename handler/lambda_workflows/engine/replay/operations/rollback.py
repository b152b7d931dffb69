"""Rollbacks (sagas): undoing the steps of an instance that failed, last started first.

A ``step.do(..., rollback=undo)`` registers ``undo`` with the pass once the step has started
(see :mod:`.do`); a step replayed from the journal registers it again, so the rollbacks known
in any pass are those of the steps ``run()`` reached in it, whichever invocation ran them.

When the instance fails (an uncaught error from ``run()``) with rollbacks registered, the runner
records the failure on the instance (see :class:`~lambda_workflows.engine.instances.transitions.
StartRollback`) and replays in *rollback mode*: ``run()`` is replayed to register the rollbacks
again, no new forward work runs (the first step that would do some stops the forward part, as does a
pending sleep, wait or retry), and then :func:`run_chain` runs them, newest step first.
``terminate(rollback=True)`` starts the same mode.

Each rollback is a durable step of its own, keyed ``<step key>␟r``: a ``ROLLBACK`` entry records
its final outcome (it never runs again once recorded), a ``ROLLBACK_ATTEMPT`` entry each failed
attempt that is retried under its ``rollback_config``, with the retry time (the pass suspends
until then). A rollback that fails for good stops the chain: the ones after it do not run.
``undo(ctx, output, error)`` gets the step's context (``ctx.attempt``: the attempt the step
ended on; ``ctx.config``: the step's config), the step's recorded output (None when it failed
or never finished) and the failure, rebuilt from what was recorded as an
:class:`~lambda_workflows.engine.errors.InstanceFailedError`. What it returns is not kept.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from lambda_workflows.engine import codec
from lambda_workflows.engine.errors import (
    InstanceFailedError,
    SuspendReason,
    error_message,
    error_name,
)
from lambda_workflows.engine.model import EntryKind, ErrorInfo, JournalEntry
from lambda_workflows.engine.replay.callbacks import call_with_timeout
from lambda_workflows.engine.replay.caught import caught_error
from lambda_workflows.engine.replay.journal import attempt_key, rollback_key, shifted
from lambda_workflows.engine.step import StepContext, StepIdentity
from lambda_workflows.engine.tracebacks import user_traceback

from .base import SCOPE, Pass, Registered, StepScope
from .retries import next_retry

__all__ = ["ChainEnd", "run_chain"]

log = logging.getLogger("lambda_workflows.replay")

ChainEnd = tuple[tuple[str, int], ErrorInfo] | None
"""How a chain ended: None when every rollback returned, else the ``(name, count)`` of the
step whose rollback failed for good, and that rollback's error."""


async def run_chain(replay: Pass, registered: Iterable[Registered], cause: ErrorInfo) -> ChainEnd:
    """Run every registered rollback not yet recorded, in reverse step-start order.

    Stops at the first rollback that failed for good (recorded now or earlier). Raises
    :class:`~lambda_workflows.engine.errors.Suspend` (through ``replay.suspend``) when a rollback
    waits for its retry delay or a control signal stops the pass.
    """
    newest_first = sorted(registered, key=lambda r: r.call.position or 0, reverse=True)
    for one in newest_first:
        ended = await _Rollback(replay, one, cause).run()
        if ended.error is not None:
            return (one.call.name, one.call.count), ended.error
    return None


class _Rollback:
    """The rollback of one step, from its recorded attempts on."""

    def __init__(self, replay: Pass, registered: Registered, cause: ErrorInfo) -> None:
        self.replay = replay
        self.registered = registered
        self.cause = cause
        self.key = rollback_key(registered.call.key)
        self.config = registered.rollback.config
        self.attempt = 1
        self.started_at = 0.0

    async def run(self) -> JournalEntry:
        """The rollback's final entry: recorded earlier, or recorded now."""
        replay, key = self.replay, self.key
        recorded = replay.journal.entries.get(key)
        if recorded is not None and recorded.kind is EntryKind.ROLLBACK:
            return recorded
        failed = replay.journal.attempts.get(key, [])
        if failed:
            last = failed[-1]
            self.attempt = last.attempt + 1
            due = shifted(last.wake_at or last.at, last.at, replay.pauses)
            if replay.now() < due:
                replay.suspend(SuspendReason.RETRY, due)
        self.started_at = (failed[0].started_at if failed else None) or replay.now()
        while True:
            replay.before_new_step(key)
            ended = await self._attempt()
            if ended is not None:
                return ended

    async def _attempt(self) -> JournalEntry | None:
        """Call ``undo`` once: the final entry, or None once a retry is recorded."""
        call, attempt = self.registered.call, self.attempt
        ctx, output = self._step_context()
        error = InstanceFailedError(self.cause.name, self.cause.message)
        label = f"rollback of step {call.name!r} attempt {attempt}"
        scope = StepScope(self.key, call.name, attempt)
        token = SCOPE.set(scope)
        attempt_started_at = self.replay.now()
        try:
            undo, timeout = self.registered.rollback.undo, self.config.timeout
            setting = f"rollback_config's 'timeout' of step {call.name!r}"
            alone = self.replay.alone()
            await call_with_timeout(
                undo, (ctx, output, error), timeout, label, setting, alone=alone
            )
        except Exception as exc:
            if scope.suspended is None:
                return await self._failed(exc, attempt_started_at)
        finally:
            SCOPE.reset(token)
        if scope.suspended is not None:
            # undo caught a nested step's suspension: it fails for good, naming the rule (the
            # chain stops here; the instance is failing already)
            caught = caught_error(scope.suspended, f"the rollback of step {call.name!r}")
            failure = ErrorInfo(type(caught).__name__, str(caught))
            return await self._write(EntryKind.ROLLBACK, attempt_started_at, failure)
        return await self._write(EntryKind.ROLLBACK, attempt_started_at)

    def _step_context(self) -> tuple[StepContext, Any]:
        """What ``undo`` gets of its step: the context of the attempt it ended on, and its
        recorded output (None when it failed, or is still retrying)."""
        journal, registered = self.replay.journal, self.registered
        call = registered.call
        ended = journal.entries.get(call.key)
        if ended is not None and ended.kind is EntryKind.STEP:
            attempt = ended.attempt
            output = None
            if ended.error is None:
                output = codec.decode(ended.result, codec.return_type(registered.callback))
        else:
            tried = journal.attempts.get(call.key, [])
            attempt, output = (tried[-1].attempt if tried else 1), None
        identity = StepIdentity(call.name, call.count)
        return StepContext(identity, attempt, registered.config.to_dict()), output

    async def _failed(self, exc: Exception, attempt_started_at: float) -> JournalEntry | None:
        """Record a failed attempt: the rollback's final error, or a retry and its delay."""
        call, attempt, replay = self.registered.call, self.attempt, self.replay
        error = ErrorInfo(error_name(exc), error_message(exc), user_traceback(exc))
        log.info(
            "rollback of step %r attempt %d failed: %s: %s",
            call.name,
            attempt,
            error.name,
            error.message,
            extra={"step": call.name, "attempt": attempt},
        )
        ctx = StepContext(StepIdentity(call.name, call.count), attempt, self.config.to_dict())
        retry = await next_retry(
            self.config, exc, error, ctx, f"the rollback of step {call.name!r}"
        )
        error, delay = retry.error, retry.delay
        if delay is None:
            return await self._write(EntryKind.ROLLBACK, attempt_started_at, error)
        retry_at = replay.now() + delay
        await self._write(EntryKind.ROLLBACK_ATTEMPT, attempt_started_at, error, retry_at)
        if retry_at > replay.now():
            replay.suspend(SuspendReason.RETRY, retry_at)
        self.attempt += 1
        return None

    async def _write(
        self,
        kind: EntryKind,
        attempt_started_at: float,
        error: ErrorInfo | None = None,
        retry_at: float | None = None,
    ) -> JournalEntry:
        call = self.registered.call
        key = self.key if kind is EntryKind.ROLLBACK else attempt_key(self.key, self.attempt)
        entry = JournalEntry(
            key=key,
            kind=kind,
            name=call.name,
            count=call.count,
            at=self.replay.now(),
            started_at=self.started_at,
            attempt_started_at=attempt_started_at,
            error=error,
            attempt=self.attempt,
            wake_at=retry_at,
        )
        return await self.replay.write(entry)
