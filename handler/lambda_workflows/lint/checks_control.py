"""Checks of how run() waits and handles errors: WF113 (real-time sleep) and WF114 (a catcher
that swallows the suspension of a step).

A step that must wait (``step.sleep``, ``step.wait_for_event``, a retry delay) suspends the
instance: the engine ends the ``run()`` pass by cancelling it, with a ``BaseException``, and
replays it when the wait is over. A real-time sleep in ``run()`` instead holds the invocation
and is slept again on every replay; an ``except BaseException`` (or a bare ``except``, or
``except asyncio.CancelledError``) around a step catches the suspension and goes on as if the
step had run.
"""

from __future__ import annotations

import ast

from .apis import SUSPENSION_CATCHERS, is_blocking_sleep
from .findings import Issue
from .run_model import RunAnalysis


def check_control(analysis: RunAnalysis) -> list[Issue]:
    """All WF113 and WF114 issues of one workflow function."""
    issues: list[Issue] = []
    _blocking_sleeps(analysis, issues)
    _swallowed_suspensions(analysis, issues)
    return issues


def _sleep_label(analysis: RunAnalysis, call: ast.Call) -> str | None:
    if is_blocking_sleep(call, analysis.aliases):
        return f"{ast.unparse(call.func)}(...)"
    function = analysis.function
    key = analysis.facts.helper_key(call, function.class_name, function.self_name)
    if key is not None and key in analysis.facts.sleeping:
        return f"{key[1]}() (it sleeps)"
    return None


def _blocking_sleeps(analysis: RunAnalysis, issues: list[Issue]) -> None:
    """WF113: a real-time sleep in run() outside a step."""
    for call, region in analysis.calls:
        if not region.outside:
            continue
        label = _sleep_label(analysis, call)
        if label is None:
            continue
        message = (
            f"{label} in run() outside a step waits in real time: the invocation is held (and "
            "billed) while it sleeps, a crash loses the wait, and every replay of run() sleeps "
            'again; use `await step.sleep("name", "1 hour")` (or step.sleep_until), which '
            "suspends the instance and wakes it up on time without holding anything"
        )
        issues.append(Issue(call, "WF113", message))


def _catches_suspension(analysis: RunAnalysis, handler: ast.ExceptHandler) -> str | None:
    """``"a bare except"``, ``"except BaseException"``... when ``handler`` catches it."""
    if handler.type is None:
        return "a bare `except:`"
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for kind in kinds:
        qualname = analysis.aliases.qualify(kind)
        if qualname in SUSPENSION_CATCHERS:
            return f"`except {qualname.rpartition('.')[2]}`"
    return None


def _re_raises(handler: ast.ExceptHandler) -> bool:
    """True when the handler raises what it caught again (``raise`` or ``raise exc``)."""
    for node in _own_nodes(handler.body):
        if isinstance(node, ast.Raise) and (
            node.exc is None or (isinstance(node.exc, ast.Name) and node.exc.id == handler.name)
        ):
            return True
    return False


def _own_nodes(statements: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of ``statements``, without the bodies of functions defined in them."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        found.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return found


def _swallow_message(what: str) -> str:
    return (
        f"{what} around a step catches the engine's suspension of that step (a sleep, an event "
        "wait or a retry delay ends the run() pass with a BaseException): the code after it "
        "runs as if the step had finished, without its result, and a run() that keeps doing "
        "so fails the instance; catch `Exception` instead (the step's own errors), or "
        "re-raise with a bare `raise`"
    )


def _swallowed_suspensions(analysis: RunAnalysis, issues: list[Issue]) -> None:
    """WF114: a catcher of BaseException/CancelledError (or a ``finally`` that returns) around
    code that runs steps, directly or through a function it passes the step to."""
    for try_node, region in analysis.tries:
        if region.opaque or not analysis.runs_steps(try_node.body):
            continue
        for handler in try_node.handlers:
            what = _catches_suspension(analysis, handler)
            if what is not None and not _re_raises(handler):
                issues.append(Issue(handler, "WF114", _swallow_message(what)))
        for node in _finally_exits(try_node.finalbody):
            word = type(node).__name__.lower()
            issues.append(Issue(node, "WF114", _swallow_message(f"`{word}` in a `finally:`")))
    _swallowing_wrappers(analysis, issues)
    for with_node, region in analysis.withs:
        if region.opaque or not analysis.runs_steps(with_node.body):
            continue
        for item in with_node.items:
            expr = item.context_expr
            if not isinstance(expr, ast.Call):
                continue
            if analysis.aliases.qualify(expr.func) != "contextlib.suppress":
                continue
            caught = [analysis.aliases.qualify(arg) for arg in expr.args]
            if any(name in SUSPENSION_CATCHERS for name in caught):
                issues.append(Issue(expr, "WF114", _swallow_message("`suppress(...)`")))


def _finally_exits(finalbody: list[ast.stmt]) -> list[ast.stmt]:
    """``return``, and ``break``/``continue`` of an outer loop, directly in a ``finally:``."""
    found: list[ast.stmt] = []
    pending: list[tuple[ast.AST, bool]] = [(s, False) for s in finalbody]
    while pending:
        node, in_loop = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return) or (
            isinstance(node, ast.Break | ast.Continue) and not in_loop
        ):
            found.append(node)
        inner_loop = in_loop or isinstance(node, ast.For | ast.AsyncFor | ast.While)
        pending.extend((child, inner_loop) for child in ast.iter_child_nodes(node))
    return found


def _swallowing_wrappers(analysis: RunAnalysis, issues: list[Issue]) -> None:
    """WF114 for ``await quietly(step.do(...))``: a function of the module that awaits what it
    is given inside ``try: ... except BaseException:``."""
    function = analysis.function
    for call, region in analysis.calls:
        if region.opaque or not any(analysis.is_step_call(arg) for arg in call.args):
            continue
        callee = analysis.facts.index.resolve(call, None, function.class_name, function.self_name)
        if callee is None or isinstance(callee.function, ast.Lambda):
            continue
        given = {p for p, arg in callee.arguments.items() if analysis.is_step_call(arg)}
        what = _swallowed_in(analysis, callee.function, given)
        if what is not None:
            name = callee.function.name
            message = _swallow_message(f"{what} in {name}(), which awaits the step it is given,")
            issues.append(Issue(call, "WF114", message))


def _swallowed_in(
    analysis: RunAnalysis, function: ast.FunctionDef | ast.AsyncFunctionDef, params: set[str]
) -> str | None:
    """How ``function`` swallows a suspension while awaiting one of ``params``, if it does."""
    for node in _own_nodes(function.body):
        if not isinstance(node, ast.Try | ast.TryStar):
            continue
        awaits = any(
            isinstance(inner, ast.Await)
            and isinstance(inner.value, ast.Name)
            and inner.value.id in params
            for statement in node.body
            for inner in ast.walk(statement)
        )
        if not awaits:
            continue
        for handler in node.handlers:
            what = _catches_suspension(analysis, handler)
            if what is not None and not _re_raises(handler):
                return what
    return None
