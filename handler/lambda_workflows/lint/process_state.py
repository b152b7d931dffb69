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
from typing import Protocol

from .apis import IN_PLACE_FUNCTIONS, MUTATING_METHODS, ImportAliases, walk
from .call_graph import FunctionIndex, FunctionKey
from .scopes import ScopeCache

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


@dataclass(slots=True)
class _Function:
    """What one function refers to and changes, from a single walk of it."""

    node: ast.AST
    key: FunctionKey
    self_name: str | None
    callees: set[FunctionKey] = field(default_factory=set)
    changed: list[ast.AST] = field(default_factory=list)
    refs: list[ast.AST] = field(default_factory=list)


class _Module:
    """Reads the functions of a module in terms of the state they touch."""

    def __init__(self, tree: ast.Module, facts: _Facts) -> None:
        self.index = facts.index
        self.aliases = facts.aliases
        self.cache = facts.scopes
        self.globals = _module_names(tree)
        self.class_values = {
            (name, attr): value
            for name, cls in self.index.classes.items()
            for attr, value in _class_attributes(cls).items()
        }
        self._instance_attrs: dict[str, set[str]] = {}

    def read(self, node: ast.AST, key: FunctionKey) -> _Function:
        """One walk of ``node``: its callees, what it changes, what state it may refer to."""
        found = _Function(node, key, _self_name(node, key))
        for part in walk(node):
            kind = type(part)
            if kind is ast.Name:
                name = part.id  # type: ignore[attr-defined]
                if ("", name) in self.index.functions:
                    found.callees.add(("", name))
                if name in self.globals:
                    found.refs.append(part)
            elif kind is ast.Attribute:
                method = self.index.method_key(part, key[0], found.self_name)  # type: ignore[arg-type]
                if method is not None:
                    found.callees.add(method)
                found.refs.append(part)
            found.changed += _changed_objects(part, self.aliases)
        return found

    def instance_attrs(self, class_name: str) -> set[str]:
        if class_name not in self._instance_attrs:
            cls = self.index.classes[class_name]
            self._instance_attrs[class_name] = _instance_attributes(cls)
        return self._instance_attrs[class_name]

    def state_of(self, node: ast.AST, function: _Function) -> StateKey | None:
        """The state ``node`` (a name or an attribute chain) denotes, if any."""
        if isinstance(node, ast.Name):
            if node.id not in self.globals:
                return None
            scopes = self.cache.get(function.node)  # type: ignore[arg-type]
            return ("", node.id) if scopes.is_module_name(node.id, node) else None
        if not isinstance(node, ast.Attribute):
            return None
        owner = _class_of(node.value, function.key[0], function.self_name, self.index)
        if owner is None:
            return None
        state = (owner[0], node.attr)
        if owner[1] == "instance":
            value = self.class_values.get(state)
            if value is None or node.attr in self.instance_attrs(owner[0]):
                return None
            return state if _is_mutable(value) else None
        return state if state in self.class_values else None

    def state_at_root(self, node: ast.AST, function: _Function) -> StateKey | None:
        """The state whose object (or part of it) ``node`` is: walks down ``a.b[c].d``."""
        current = node
        while True:
            state = self.state_of(current, function)
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
        for node in walk(method):
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
            return (class_name, "class" if self_name == "cls" else "instance")
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
    """The first parameter of a method; ``"cls"`` for a classmethod, whatever its name."""
    if not key[0] or not isinstance(function, _FUNCTIONS):
        return None
    params = [*function.args.posonlyargs, *function.args.args]
    if not params:
        return None
    if any(isinstance(d, ast.Name) and d.id == "classmethod" for d in function.decorator_list):
        return "cls"
    return params[0].arg


class _Facts(Protocol):
    """What :func:`find_process_state` needs of the module's facts."""

    index: FunctionIndex
    aliases: ImportAliases
    scopes: ScopeCache


def find_process_state(
    tree: ast.Module, facts: _Facts, entry_points: Sequence[tuple[ast.AST, FunctionKey]]
) -> ProcessState:
    """The state the functions reachable from ``entry_points`` (workflow code) change."""
    module = _Module(tree, facts)
    functions: dict[FunctionKey, _Function] = {}
    pending = [module.read(node, key) for node, key in entry_points]
    while pending:
        function = pending.pop()
        functions[function.key] = function
        for callee in function.callees:
            if callee not in functions and all(p.key != callee for p in pending):
                pending.append(module.read(facts.index.functions[callee], callee))
    state = ProcessState()
    for function in functions.values():
        for changed in function.changed:
            found = module.state_at_root(changed, function)
            if found is None:
                continue
            if found[0]:
                state.class_attributes.add(found)
            else:
                state.names.add(found[1])
    _mark_helpers(state, module, functions)
    return state


def _mark_helpers(
    state: ProcessState, module: _Module, functions: dict[FunctionKey, _Function]
) -> None:
    """Helpers that read or change the state, directly or through the helpers they call."""
    if not state.names and not state.class_attributes:
        return
    for key, function in functions.items():
        for node in function.refs:
            found = module.state_of(node, function)
            if found is not None and (
                found in state.class_attributes or (not found[0] and found[1] in state.names)
            ):
                state.helpers.add(key)
                break
    changed = True
    while changed:
        changed = False
        for key, function in functions.items():
            if key not in state.helpers and function.callees & state.helpers:
                state.helpers.add(key)
                changed = True
