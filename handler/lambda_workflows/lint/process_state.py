"""State that outlives one run(): module globals and class attributes that workflow code changes.

The engine builds a new workflow object for every replay, so ``self.counter = 0`` at the top
of ``run()`` starts from zero each time; but a module's globals and a class's own attributes
live as long as the process. In a warm Lambda (or the local runtime) a ``global counter;
counter += 1`` keeps counting across instances and replays, and a step name built from it
differs on every replay.

:func:`find_process_state` finds, among the functions workflow code can reach (``run()``, the
helpers and callbacks it calls or passes, at any depth), the module names and class attributes
they change: rebinding a ``global``, changing in place (``append``, ``d[k] = v``, ``del``,
``next(counter)``), ``Cls.attr += 1``, ``type(self).attr = ...``, or changing a mutable
class-level attribute through ``self`` (``self.seen.append``) that no method rebinds on the
instance. Module state set up at import time (a registry filled by decorators) is not touched
by workflow code and does not count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from .apis import IN_PLACE_FUNCTIONS, MUTATING_METHODS, ImportAliases
from .call_graph import FunctionIndex, FunctionKey
from .scopes import ScopeTree

StateKey = tuple[str, str]  # ("", module name) or (class name, attribute)
_FUNCTIONS = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(slots=True)
class ProcessState:
    """What workflow code changes that survives a replay.

    Attributes:
        names: module-level names changed.
        class_attributes: ``(class, attribute)`` pairs changed.
        helpers: functions of the module that read or change any of it.
    """

    names: set[str] = field(default_factory=set)
    class_attributes: set[StateKey] = field(default_factory=set)
    helpers: set[FunctionKey] = field(default_factory=set)


class _Module:
    """Reads one function of the module in terms of the state it touches."""

    def __init__(self, tree: ast.Module, index: FunctionIndex, aliases: ImportAliases) -> None:
        self.index = index
        self.aliases = aliases
        self.globals = _module_names(tree)
        self.class_values = {
            (name, attr): value
            for name, cls in index.classes.items()
            for attr, value in _class_attributes(cls).items()
        }
        self.instance_attrs = {
            name: _instance_attributes(cls) for name, cls in index.classes.items()
        }

    def state_of(
        self, node: ast.AST, key: FunctionKey, scopes: ScopeTree, self_name: str | None
    ) -> StateKey | None:
        """The state ``node`` (a name or an attribute chain) denotes, if any."""
        if isinstance(node, ast.Name):
            if node.id in self.globals and scopes.is_module_name(node.id, node):
                return ("", node.id)
            return None
        if not isinstance(node, ast.Attribute):
            return None
        owner = _class_of(node.value, key[0], self_name, self.index)
        if owner is None:
            return None
        state = (owner[0], node.attr)
        if owner[1] == "instance":
            value = self.class_values.get(state)
            if value is None or node.attr in self.instance_attrs.get(owner[0], set()):
                return None
            return state if _is_mutable(value) else None
        return state if state in self.class_values else None

    def changes(
        self, function: ast.AST, key: FunctionKey, self_name: str | None
    ) -> Iterator[StateKey]:
        """The state one function (nested functions included) changes."""
        scopes = ScopeTree(function)  # type: ignore[arg-type]
        for node in ast.walk(function):
            for changed in _changed_objects(node, self.aliases):
                state = self._state_at_root(changed, key, scopes, self_name)
                if state is not None:
                    yield state

    def _state_at_root(
        self, node: ast.AST, key: FunctionKey, scopes: ScopeTree, self_name: str | None
    ) -> StateKey | None:
        """The state whose object (or part of it) ``node`` is: walks down ``a.b[c].d``."""
        current = node
        while True:
            state = self.state_of(current, key, scopes, self_name)
            if state is not None:
                return state
            if isinstance(current, ast.Attribute | ast.Subscript):
                current = current.value
            else:
                return None


def _module_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for statement in tree.body:
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
            targets = [statement.target]
        for target in targets:
            names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _class_attributes(cls: ast.ClassDef) -> dict[str, ast.expr]:
    found: dict[str, ast.expr] = {}
    for statement in cls.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = statement.value
        elif (
            isinstance(statement, ast.AnnAssign)
            and statement.value is not None
            and isinstance(statement.target, ast.Name)
        ):
            found[statement.target.id] = statement.value
    return found


def _instance_attributes(cls: ast.ClassDef) -> set[str]:
    """Attributes some method rebinds on ``self`` (each object then has its own)."""
    found: set[str] = set()
    for method in cls.body:
        if not isinstance(method, _FUNCTIONS) or not method.args.args:
            continue
        self_name = method.args.args[0].arg
        for node in ast.walk(method):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign | ast.AugAssign):
                targets = [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == self_name
                ):
                    found.add(target.attr)
    return found


def _is_mutable(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp):
        return True
    return isinstance(value, ast.Call)


def _class_of(
    node: ast.expr, class_name: str, self_name: str | None, index: FunctionIndex
) -> tuple[str, str] | None:
    """``(class, "class")`` for ``Cls``/``type(self)``/``self.__class__``/``cls``,
    ``(class, "instance")`` for ``self``, else None."""
    if isinstance(node, ast.Name):
        if node.id in index.classes:
            return (node.id, "class")
        if class_name and node.id == self_name:
            return (class_name, "instance")
        if class_name and node.id == "cls":
            return (class_name, "class")
        return None
    if not class_name or self_name is None:
        return None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == self_name
    ):
        return (class_name, "class")
    if (
        isinstance(node, ast.Attribute)
        and node.attr == "__class__"
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    ):
        return (class_name, "class")
    return None


def _changed_objects(node: ast.AST, aliases: ImportAliases) -> Iterator[ast.AST]:
    """The expressions ``node`` changes (a target rebinding a name counts as that name)."""
    if isinstance(node, ast.Assign | ast.Delete):
        yield from node.targets
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        yield node.target
    elif isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in MUTATING_METHODS:
            yield func.value
        elif node.args and (
            aliases.qualify(func) in IN_PLACE_FUNCTIONS or aliases.qualify(func) == "next"
        ):
            yield node.args[0]


def _self_name(function: ast.AST, key: FunctionKey) -> str | None:
    if not key[0] or not isinstance(function, _FUNCTIONS):
        return None
    params = [*function.args.posonlyargs, *function.args.args]
    return params[0].arg if params else None


def _callees(function: ast.AST, key: FunctionKey, index: FunctionIndex) -> set[FunctionKey]:
    """Functions of the module that ``function`` calls or passes on (as a callback)."""
    self_name = _self_name(function, key)
    found: set[FunctionKey] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and ("", node.id) in index.functions:
            found.add(("", node.id))
        elif isinstance(node, ast.Attribute):
            method = index.method_key(node, key[0], self_name)
            if method is not None:
                found.add(method)
    return found


def find_process_state(
    tree: ast.Module,
    index: FunctionIndex,
    aliases: ImportAliases,
    entry_points: Sequence[tuple[ast.AST, FunctionKey]],
) -> ProcessState:
    """The state the functions reachable from ``entry_points`` (workflow code) change."""
    module = _Module(tree, index, aliases)
    functions: dict[FunctionKey, ast.AST] = {key: node for node, key in entry_points}
    pending = list(functions)
    edges: dict[FunctionKey, set[FunctionKey]] = {}
    while pending:
        key = pending.pop()
        edges[key] = _callees(functions[key], key, index)
        for callee in edges[key] - functions.keys():
            functions[callee] = index.functions[callee]
            pending.append(callee)
    state = ProcessState()
    for key, function in functions.items():
        for found in module.changes(function, key, _self_name(function, key)):
            if found[0]:
                state.class_attributes.add(found)
            else:
                state.names.add(found[1])
    _mark_helpers(state, module, functions, edges)
    return state


def _mark_helpers(
    state: ProcessState,
    module: _Module,
    functions: dict[FunctionKey, ast.AST],
    edges: dict[FunctionKey, set[FunctionKey]],
) -> None:
    """Helpers that read or change the state, directly or through the helpers they call."""
    if not state.names and not state.class_attributes:
        return
    for key, function in functions.items():
        scopes = ScopeTree(function)  # type: ignore[arg-type]
        self_name = _self_name(function, key)
        for node in ast.walk(function):
            found = module.state_of(node, key, scopes, self_name)
            if found is not None and (
                found in state.class_attributes or (not found[0] and found[1] in state.names)
            ):
                state.helpers.add(key)
                break
    changed = True
    while changed:
        changed = False
        for caller, callees in edges.items():
            if caller not in state.helpers and callees & state.helpers:
                state.helpers.add(caller)
                changed = True
