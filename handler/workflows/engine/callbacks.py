"""Calling a step callback: sync or async, with or without ``ctx``, under a timeout.

Sync callbacks run in a worker thread so they do not block concurrent async steps. A thread
cannot be killed: when a sync attempt times out it is abandoned and recorded as failed, but
its side effects may still complete later — keep such callbacks idempotent.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .durations import format_duration
from .errors import WorkflowTimeoutError

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
) -> Any:
    """Run one attempt of a callback; raise WorkflowTimeoutError past ``timeout`` seconds
    (its message says to raise ``setting``).

    A ``TimeoutError`` the callback raises itself (a client's own timeout) is its own error,
    not the step's timeout: it propagates as it is.
    """
    deadline = asyncio.timeout(timeout)
    try:
        async with deadline:
            if is_async(callback):
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
        raise WorkflowTimeoutError(
            f"{label} timed out after {format_duration(timeout)}; raise {setting} if it needs "
            "longer"
        ) from None


async def _await(awaitable: Any) -> Any:
    return await awaitable
