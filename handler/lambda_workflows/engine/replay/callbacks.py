"""Calling a step callback: sync or async, with or without ``ctx``, under a timeout.

Async callbacks run on the event loop under ``asyncio.timeout``: cancelled at their deadline.
Sync callbacks run one of two ways:

- **In a worker thread** when another step of the pass is running or about to start (a
  gather's other steps): sync steps then run concurrently, and no step blocks another. A thread
  cannot be killed: past its timeout the attempt is recorded as failed and the thread is
  abandoned; its side effects may still complete later (keep such callbacks idempotent).
- **Inline**, on the event loop's own thread, when the step is alone (``alone``: no other step
  of the pass running or scheduled, as for every step of a sequential ``run()``). Nothing could
  run beside it, so blocking the loop delays no step and no timer of the pass (none is pending
  while a step runs alone), and the hop to a thread and back, most of a new step's cost, is
  saved.

What the step timeout becomes inline: the callback is interrupted at its deadline. A one-shot
``ITIMER_REAL`` fires SIGALRM there, whose handler raises a private BaseException inside the
callback: it unwinds through the callback's ``finally`` blocks and ``with`` exits (an ``except
Exception`` does not catch it), and the attempt fails with WorkflowTimeoutError as it did in a
thread; unlike a thread, the callback does not go on after its deadline. The limits, each
handled:

- A signal reaches only the main thread, and SIGALRM and ITIMER_REAL may be someone else's: the
  inline path is taken only on the main thread (a Lambda handler's), with SIGALRM at its
  default and no timer armed; otherwise the thread (``lambda-workflows dev`` runs instances in
  threads).
- Python runs the handler between bytecodes: a call into C that neither returns nor is
  interrupted by the signal (blocking sleeps, socket reads and lock waits are interrupted)
  delays it until it returns. Whatever an attempt returns or raises after its deadline (or if
  it caught the interruption and went on), it is a timeout: the outcome the thread records at
  the deadline, recorded late. A C call that never returns holds the invocation until Lambda's
  own timeout; the lease then expires and the attempt runs again, in a new invocation.
- A sync callback that returns an awaitable (``lambda: fetch()``) is called inline, and the
  awaitable awaited under what is left of the timeout.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib
import inspect
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import FrameType, FunctionType
from typing import Any

from lambda_workflows.engine.durations import format_duration
from lambda_workflows.engine.errors import WorkflowTimeoutError

_THREADS: ThreadPoolExecutor | None = None
MAX_THREADS = 32


def _threads() -> ThreadPoolExecutor:
    global _THREADS
    if _THREADS is None:
        _THREADS = ThreadPoolExecutor(max_workers=MAX_THREADS, thread_name_prefix="workflow-step")
    return _THREADS


@functools.lru_cache(maxsize=1024)
def _wants_context(code_or_callable: Any) -> bool:
    target = code_or_callable
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return bool(positional) or any(p.kind is p.VAR_POSITIONAL for p in params)


def wants_context(callback: Callable[..., Any]) -> bool:
    """True when the callback takes an argument (``ctx``)."""
    try:
        return _wants_context(callback)
    except TypeError:  # unhashable callable objects
        return _wants_context.__wrapped__(callback)


def is_async(callback: Callable[..., Any]) -> bool:
    """True for ``async def`` callbacks (also through functools.partial)."""
    if type(callback) is FunctionType:  # the common case, asked once per attempt: quick
        return bool(callback.__code__.co_flags & inspect.CO_COROUTINE)
    while isinstance(callback, functools.partial):
        callback = callback.func
    return inspect.iscoroutinefunction(callback) or inspect.iscoroutinefunction(
        getattr(callback, "__call__", None)  # noqa: B004 - async callable objects
    )


async def call_with_timeout(
    callback: Callable[..., Any],
    args: tuple[Any, ...],
    timeout: float,
    label: str,
    setting: str = "the step's 'timeout'",
    *,
    alone: bool = False,
) -> Any:
    """Run one attempt of a callback; raise WorkflowTimeoutError past ``timeout`` seconds
    (its message says to raise ``setting``).

    ``alone``: no other step of the pass is running or scheduled, so a sync callback may run
    inline (see the module's docstring).

    A ``TimeoutError`` the callback raises itself (a client's own timeout) is its own error,
    not the step's timeout: it propagates as it is.
    """
    budget, coroutine = timeout, is_async(callback)
    if alone and not coroutine and _inline_available():
        started = time.monotonic()
        result = _call_inline(callback, args, timeout, label, setting)
        if result is not _NOT_OURS:
            if not inspect.isawaitable(result):
                return result
            budget = max(timeout - (time.monotonic() - started), 0.0)
            callback, args, coroutine = _awaited(result), (), True
    deadline = asyncio.timeout(budget)
    try:
        async with deadline:
            if coroutine:
                return await callback(*args)
            loop = asyncio.get_running_loop()
            context = contextvars.copy_context()
            call = functools.partial(context.run, callback, *args)
            result = await loop.run_in_executor(_threads(), call)
            if inspect.isawaitable(result):  # a lambda returning a coroutine: `lambda: fetch()`
                return await _await(result)
            return result
    except TimeoutError:
        if not deadline.expired():
            raise
        raise _timed_out(label, timeout, setting) from None


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _awaited(awaitable: Any) -> Callable[[], Any]:
    """An async callable awaiting ``awaitable`` (the rest of an inline call)."""

    async def rest() -> Any:
        return await awaitable

    return rest


def _timed_out(label: str, timeout: float, setting: str) -> WorkflowTimeoutError:
    return WorkflowTimeoutError(
        f"{label} timed out after {format_duration(timeout)}; raise {setting} if it needs longer"
    )


# --- sync callbacks inline, under SIGALRM (see the module's docstring) ----------------------


class _Overrun(BaseException):
    """Raised inside a sync callback run inline when its deadline passes; never escapes."""


_HAS_ITIMER = hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")
# signal.signal and signal.getsignal wrap these C functions to convert handlers to enums, which
# costs a few µs a call (an exception per function handler): a tenth of a step. Same calls.
_C: Any = importlib.import_module("_signal") if _HAS_ITIMER else None
_NOT_OURS = object()  # SIGALRM or ITIMER_REAL is in use: the callback was not called
_armed = False  # an inline callback is running: SIGALRM is its deadline


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    global _armed
    # Raised in the callback only: if the callback already returned or raised (this frame
    # is ours), the deadline check after the call makes the attempt a timeout instead.
    if _armed and frame is not None and frame.f_code not in _OWN_CODE:
        _armed = False  # once: the timer is one-shot, and the cleanup must not be interrupted
        raise _Overrun


def _inline_available() -> bool:
    return _HAS_ITIMER and threading.current_thread() is threading.main_thread()


def _call_inline(
    callback: Callable[..., Any], args: tuple[Any, ...], timeout: float, label: str, setting: str
) -> Any:
    """Call a sync callback on this thread, interrupted at its deadline; ``_NOT_OURS``,
    without calling it, when SIGALRM or ITIMER_REAL is someone else's.

    Raises:
        WorkflowTimeoutError: the attempt ended (however) after its deadline.
        BaseException: what the callback raised before it.
    """
    global _armed
    if _C.getsignal(signal.SIGALRM) != _C.SIG_DFL or _C.getitimer(_C.ITIMER_REAL)[0]:
        return _NOT_OURS  # someone else's: left as it is
    _C.signal(signal.SIGALRM, _on_alarm)
    deadline = time.monotonic() + timeout
    context = contextvars.copy_context()
    around = sys.exception()  # what the caller is handling, if anything (see _detach)
    overran = False
    # As in a worker thread, no event loop runs here for the callback: one that calls
    # asyncio.run() (an async client used from sync code) may.
    loop = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    _armed = True
    _C.setitimer(_C.ITIMER_REAL, timeout)
    try:
        result = context.run(callback, *args)
    except _Overrun:
        overran = True
    except Exception as exc:
        if time.monotonic() < deadline:
            _detach(exc, around)
            raise
        overran = True  # it failed after its deadline: a timeout, as in a thread
    finally:
        _armed = False
        _C.setitimer(_C.ITIMER_REAL, 0)
        _C.signal(signal.SIGALRM, _C.SIG_DFL)
        asyncio.events._set_running_loop(loop)
    if overran or time.monotonic() >= deadline:
        raise _timed_out(label, timeout, setting) from None
    return result


def _detach(exc: BaseException, around: BaseException | None) -> None:
    """Cut the implicit context of ``exc``'s chain where it reaches ``around``, the exception
    the caller was handling (``asyncio.run`` called in an ``except`` block): raised in a
    worker thread, the callback's error would not have it, and the step's traceback must not
    show it."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while around is not None and link is not None and id(link) not in seen:
        seen.add(id(link))
        if link.__context__ is around:
            link.__context__ = None
            return
        link = link.__context__


_OWN_CODE = frozenset({_call_inline.__code__, _detach.__code__})
