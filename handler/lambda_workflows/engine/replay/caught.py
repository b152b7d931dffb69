"""A suspension that did not reach the engine: which step, where, and what caught it.

A step that must wait (a sleep not over, an event not sent, a retry delay, a pause, a yield)
stops ``run()`` by raising through it: the step parks and the driver cancels ``run()`` (see
:mod:`.parking`); a step nested in a callback raises :class:`~.errors.Suspend` through the
callback. Code that catches that and goes on (``except BaseException``, ``except
asyncio.CancelledError``, a bare ``except:``, a ``return`` in ``finally``) would compute the rest
of ``run()``, or the step's result, without the step's outcome: the pass fails the instance with
:class:`~.errors.SuspensionCaughtError` instead, never records it complete.

The error says where: the user's frames around the step, read only when a step suspends (the
chain of awaits of a parked ``run()``, or the callers of a nested step), never on a step that
runs; and the handler that can have caught it, found in the source of those frames, read only
once a suspension was caught.
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
from collections.abc import Iterator
from types import FrameType
from typing import Any

from lambda_workflows.engine.errors import Suspend, SuspendReason, SuspensionCaughtError
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.tracebacks import is_user_file

__all__ = ["RULE", "Site", "Suspension", "awaiting_sites", "calling_sites", "caught_error"]

RULE = (
    "do not catch BaseException / asyncio.CancelledError, use a bare except:, or return from "
    "finally around steps: the engine suspends run() by raising through it; catch Exception "
    "(or StepFailedError) instead, and let anything else propagate (rules of Workflows: always "
    "await your steps)"
)
"""The rule a caught suspension breaks, as every :class:`SuspensionCaughtError` states it."""

_WHY = {
    SuspendReason.SLEEP: "its sleep is not over",
    SuspendReason.RETRY: "it waits for a retry delay",
    SuspendReason.EVENT: "it waits for an event or a child workflow",
    SuspendReason.PAUSE: "a pause was requested",
    SuspendReason.YIELD: "the invocation is near its time limit",
    SuspendReason.TERMINATE: "the instance was terminated",
    SuspendReason.RESTART: "the instance was restarted",
    SuspendReason.LOST: "another runner took the instance over",
    SuspendReason.INFRA: "the store failed",
    SuspendReason.RELOAD: "the journal changed under the pass",
    SuspendReason.ROLLBACK: "the instance rolls back",
}
# What can catch each kind: run() gets asyncio.CancelledError, a callback gets Suspend itself.
_IN_RUN = frozenset({"BaseException", "CancelledError"})
_IN_CALLBACK = frozenset({"BaseException"})


@immutable
class Site:
    """A line of the workflow author's code."""

    filename: str
    line: int

    def __str__(self) -> str:
        name = self.filename
        try:
            relative = os.path.relpath(name)
        except ValueError:  # another drive (Windows)
            relative = name
        return f"{name if relative.startswith('..') else relative}:{self.line}"


@immutable
class Suspension:
    """A step's suspension on its way to the engine: the step, the signal, and the author's
    frames that awaited it, innermost first (empty when none is known)."""

    step: str
    signal: Suspend
    sites: tuple[Site, ...] = ()


def awaiting_sites(coro: Any) -> tuple[Site, ...]:
    """The author's frames along the chain of awaits of a suspended coroutine, innermost first:
    where a parked ``run()`` waits (a step's ``await``, or the ``gather`` around it)."""
    sites: list[Site] = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None and _authors(frame.f_code.co_filename):
            sites.append(Site(frame.f_code.co_filename, frame.f_lineno))
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return tuple(reversed(sites))


def calling_sites(frame: FrameType | None) -> tuple[Site, ...]:
    """The author's frames from ``frame`` outwards, up to the first of the library's: who
    awaited a nested step (its callback, and the callback's own helpers)."""
    sites: list[Site] = []
    while frame is not None and _authors(frame.f_code.co_filename):
        sites.append(Site(frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return tuple(sites)


@functools.lru_cache(maxsize=1024)
def _authors(filename: str) -> bool:
    """True for the workflow author's code: neither the library's nor the standard library's
    (contextlib's ``__aexit__`` is not where a step was awaited)."""
    import sysconfig  # only once a step suspends: a cold start does not need it

    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
    return is_user_file(filename) and not os.path.realpath(filename).startswith(stdlib)


def caught_error(suspension: Suspension, callback: str | None = None) -> SuspensionCaughtError:
    """The error of an instance whose ``run()`` caught ``suspension`` and returned or raised
    something else (``callback``: what caught it instead, for a nested step: ``"the callback
    of step 'x'"``)."""
    where = f", awaited at {suspension.sites[0]}," if suspension.sites else ""
    found = _catching_handler(suspension.sites, _IN_RUN if callback is None else _IN_CALLBACK)
    by = f" by `{found[1]}` at {found[0]}" if found is not None else ""
    whose = callback or "run()"
    why = _WHY.get(suspension.signal.reason, str(suspension.signal.reason))
    return SuspensionCaughtError(
        f"step {suspension.step!r}{where} suspended the instance ({why}), and the suspension was "
        f"caught{by}: {whose} went on as if the step had finished, which would skip it; "
        f"{RULE}"
    )


def _catching_handler(sites: tuple[Site, ...], catches: frozenset[str]) -> tuple[Site, str] | None:
    """The innermost handler around one of ``sites`` that can end a suspension: an ``except``
    of one of ``catches`` (or a bare one) that does not re-raise, a ``finally`` that leaves
    with ``return``, ``break`` or ``continue``, or a ``with suppress(...)`` of one of
    ``catches``; None when the source shows none."""
    for site in sites:
        for node in _blocks_around(site):
            found = _ending(node, catches)
            if found is not None:
                return Site(site.filename, found[0]), found[1].format(_line(site, found[0]))
    return None


Block = ast.Try | ast.TryStar | ast.With | ast.AsyncWith


def _blocks_around(site: Site) -> list[Block]:
    """The ``try`` and ``with`` statements whose body holds ``site``, innermost first."""
    try:
        tree = ast.parse("".join(linecache.getlines(site.filename)))
    except (SyntaxError, ValueError):
        return []
    blocks = [
        node
        for node in ast.walk(tree)
        if isinstance(node, Block)
        and node.body[0].lineno <= site.line <= (node.body[-1].end_lineno or 0)
    ]
    return sorted(blocks, key=lambda node: node.lineno, reverse=True)


def _ending(node: Block, catches: frozenset[str]) -> tuple[int, str] | None:
    """Where ``node`` ends a suspension raised in its body, and how to quote it (``{}`` is the
    line's source), or None."""
    if isinstance(node, ast.With | ast.AsyncWith):
        calls = [item.context_expr for item in node.items]
        for call in calls:
            if not isinstance(call, ast.Call) or _named(call.func) != "suppress":
                continue
            if any(_catches(arg, catches) for arg in call.args):
                return node.lineno, "{}"
        return None
    for handler in node.handlers:
        if _catches(handler.type, catches) and not _reraises(handler):
            return handler.lineno, "{}"
    leaving = next(_leaving(node.finalbody), None)
    if leaving is not None:
        return leaving.lineno, "{}` in a `finally:"
    return None


def _named(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _catches(kind: ast.expr | None, catches: frozenset[str]) -> bool:
    if kind is None:
        return True  # a bare except:
    if isinstance(kind, ast.Tuple):
        return any(_catches(one, catches) for one in kind.elts)
    return _named(kind) in catches


def _reraises(handler: ast.ExceptHandler) -> bool:
    last = handler.body[-1] if handler.body else None
    return isinstance(last, ast.Raise) and last.exc is None


def _leaving(body: list[ast.stmt], in_loop: bool = False) -> Iterator[ast.stmt]:
    """The statements of a ``finally`` body that leave it (and so end what it was unwinding)."""
    for stmt in body:
        if isinstance(stmt, ast.Return) or (
            isinstance(stmt, ast.Break | ast.Continue) and not in_loop
        ):
            yield stmt
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        else:
            loop = isinstance(stmt, ast.For | ast.AsyncFor | ast.While)
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    yield from _leaving(inner, in_loop or (loop and field == "body"))


def _line(site: Site, line: int) -> str:
    return linecache.getline(site.filename, line).strip()
