"""WF104: a step (or a coroutine that runs steps) that nothing awaits before run() returns.

A step call's awaitable is *consumed* when it is awaited, returned, or handed to something
whose own result is consumed: ``asyncio.gather``/``wait``/``wait_for``/``shield``,
``create_task``/``ensure_future`` (the task must then be awaited in turn), a list that is
gathered, a variable awaited later, a ``for`` that awaits each element. A task spawned in an
``async with TaskGroup() as group`` is awaited by the group. Anything else (a task kept in a
set, a gather nobody awaits, ``self.helper(step, ...)`` without ``await``) leaves the step
running, or never started, when run() returns: the engine then fails the instance with
``UnawaitedStepError``.
"""

from __future__ import annotations

import ast

from .apis import dotted_name, root_name, walk
from .findings import Issue
from .run_model import RunAnalysis

_COLLECTORS = frozenset({"append", "extend", "add", "insert", "appendleft"})
_SPAWNERS = frozenset({"create_task", "start_soon", "start"})
# Builtins that look at an awaitable without awaiting it: len(tasks), print(task)...
_INSPECTORS = frozenset({"len", "print", "repr", "str", "bool", "id", "isinstance", "type", "hash"})
_CONSUMERS = (ast.Await, ast.Return, ast.Yield, ast.YieldFrom, ast.Lambda)


class _Flow:
    """Follows an awaitable through expressions and variables to an ``await`` (or not)."""

    def __init__(self, analysis: RunAnalysis) -> None:
        self.analysis = analysis
        self.loads: dict[str, list[ast.expr]] = {}
        for load in analysis.loads:
            self.loads.setdefault(load.id, []).append(load)
        self._attributes_read = False
        self.groups = _task_groups(analysis)

    def consumed(self, node: ast.AST, seen: set[str] | None = None) -> bool:
        """True when the value of ``node`` ends up awaited (or gathered, returned...)."""
        seen = set() if seen is None else seen
        current, parent = node, self.analysis.parent(node)
        while parent is not None:
            if isinstance(parent, _CONSUMERS) or (
                isinstance(parent, ast.AsyncFor) and current is parent.iter
            ):
                return True
            if isinstance(parent, ast.Call):
                if current is parent.func:
                    return False
                verdict = self._through_call(parent, seen)
                if verdict is not None:
                    return verdict
            elif isinstance(parent, ast.Attribute):
                return False  # task.add_done_callback(...): used, not awaited
            elif isinstance(parent, ast.stmt | ast.comprehension | ast.NamedExpr):
                return self._names_consumed(_bound_names(parent, current), seen)
            current, parent = parent, self.analysis.parent(parent)
        return False

    def _through_call(self, call: ast.Call, seen: set[str]) -> bool | None:
        """A spawn in a task group is awaited by the group; ``x.append(aw)`` moves ``aw`` into
        ``x``; any other call (gather, create_task, a helper) passes it on in its result."""
        func = call.func
        if isinstance(func, ast.Name) and func.id in _INSPECTORS:
            return False
        if isinstance(func, ast.Attribute):
            receiver = root_name(func.value)
            if func.attr in _SPAWNERS and receiver in self.groups:
                return True
            if func.attr in _COLLECTORS:
                return self._names_consumed([receiver] if receiver else [], seen)
        return None

    def _read_attributes(self) -> None:
        """Index ``self._task``-like loads too (only when a task was stored on one)."""
        self._attributes_read = True
        for node in walk(self.analysis.function.node):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                dotted = dotted_name(node)
                if dotted is not None:
                    self.loads.setdefault(dotted, []).append(node)

    def _names_consumed(self, names: list[str], seen: set[str]) -> bool:
        if not self._attributes_read and any("." in name for name in names):
            self._read_attributes()
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            if any(self.consumed(load, seen) for load in self.loads.get(name, ())):
                return True
        return False


def _bound_names(parent: ast.AST, current: ast.AST) -> list[str]:
    """The variables an assignment, ``for`` or comprehension binds the value of ``current`` to."""
    targets: list[ast.AST] = []
    if isinstance(parent, ast.Assign):
        targets = list(parent.targets)
    elif isinstance(parent, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) or (
        isinstance(parent, ast.For | ast.comprehension) and current is parent.iter
    ):
        targets = [parent.target]
    names: list[str] = []
    for target in targets:
        if isinstance(target, ast.Attribute):
            names += [dotted] if (dotted := dotted_name(target)) else []
        else:
            names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return names


def _task_groups(analysis: RunAnalysis) -> set[str]:
    """Names of task groups (``async with asyncio.TaskGroup() as group``, or ``async with
    group`` for a group made earlier): they await the tasks spawned in them."""
    groups: set[str] = set()
    for with_node, _region in analysis.withs:
        if not isinstance(with_node, ast.AsyncWith):
            continue
        for item in with_node.items:
            for part in (item.optional_vars, item.context_expr):
                if isinstance(part, ast.Name):
                    groups.add(part.id)
    return groups


def check_awaits(analysis: RunAnalysis) -> list[Issue]:
    """WF104: every step call, and every call of a coroutine of this module that runs steps,
    whose awaitable is never consumed."""
    flow = _Flow(analysis)
    issues: list[Issue] = []
    for step in analysis.steps:
        if flow.consumed(step.call):
            continue
        method = step.method
        message = (
            f"step.{method}(...) is not awaited: the step never completes, its result and "
            f"errors are lost and later steps do not wait for it; write `await step.{method}"
            "(...)` or pass it to asyncio.gather(...) (a task made with create_task must be "
            "awaited too, before run() returns)"
        )
        issues.append(Issue(step.call, "WF104", message))
    function = analysis.function
    for call, region in analysis.calls:
        if region.opaque or not analysis.passes_step(call):
            continue
        callee = analysis.facts.index.resolve(call, None, function.class_name, function.self_name)
        if callee is None or not isinstance(callee.function, ast.AsyncFunctionDef):
            continue
        if flow.consumed(call):
            continue
        name = callee.function.name
        message = (
            f"{name}(...) runs steps but its coroutine is never awaited: its steps do not run "
            f"(or still run when run() returns, which fails the instance); write `await "
            f"{ast.unparse(call.func)}(...)` or pass it to asyncio.gather(...)"
        )
        issues.append(Issue(call, "WF104", message))
    return issues
