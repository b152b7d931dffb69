"""Where a name used in a function was bound: a def-use view of one function and its nested ones.

The analyses that follow values (an alias of the event, a set iterated in hash order, module
state copied into a local) ask, for a name at one place, which assignment gave it its value.
The answer is the *last binding before that place* in source order, in the innermost scope that
binds the name (function, lambda or comprehension; ``global``/``nonlocal`` defer outwards); a
name bound nowhere in the function is the module's. Branches are not told apart and a loop's
later assignments are not seen by its earlier lines: precise enough for lint, and it gets
``emails = sorted(emails)`` right, which a flow-insensitive view would not.
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from dataclasses import dataclass
from typing import cast

from .apis import child_nodes

ASSIGN, ITERATE, PARAM, DEFINE, OTHER = "assign", "iterate", "param", "define", "other"
Position = tuple[int, int]
_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPE_KINDS = frozenset(_SCOPES)
_BINDERS = frozenset(
    {
        ast.Assign,
        ast.AnnAssign,
        ast.NamedExpr,
        ast.For,
        ast.AsyncFor,
        ast.Global,
        ast.Nonlocal,
        ast.ClassDef,
        ast.Import,
        ast.ImportFrom,
        ast.With,
        ast.AsyncWith,
        ast.ExceptHandler,
        ast.Delete,
    }
)


@dataclass(frozen=True, slots=True)
class Binding:
    """One place that gives a name a value.

    Attributes:
        kind: ``assign`` (``value`` is the assigned expression), ``iterate`` (the name is an
            element of ``value``, a ``for`` or comprehension iterable), ``param``, ``define``
            (``def``/``class``; ``node`` is the definition) or ``other`` (import, ``with``,
            ``except``: nothing known).
        value: the expression the name comes from, if any.
        unpacked: the name is one part of a tuple target (``k, v = ...``).
        node: the statement, comprehension or definition that binds it.
        position: where the binding takes effect.
    """

    kind: str
    value: ast.expr | None
    unpacked: bool
    node: ast.AST
    position: Position


class Scope:
    """The names one function, lambda or comprehension binds."""

    __slots__ = ("bindings", "node", "outer_names", "parent")

    def __init__(self, node: ast.AST, parent: Scope | None) -> None:
        self.node = node
        self.parent = parent
        self.bindings: dict[str, list[Binding]] = {}
        self.outer_names: set[str] = set()

    def bind(self, name: str, binding: Binding) -> None:
        """Record a binding (kept sorted by position)."""
        found = self.bindings.setdefault(name, [])
        index = bisect_left([b.position for b in found], binding.position)
        found.insert(index, binding)

    def binds(self, name: str) -> bool:
        """True when ``name`` is local to this scope."""
        return name in self.bindings and name not in self.outer_names


def position_of(node: ast.AST) -> Position:
    """Where ``node`` starts."""
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def end_of(node: ast.AST) -> Position:
    """Where ``node`` ends (a binding by an assignment takes effect there)."""
    line, column = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    if isinstance(line, int) and isinstance(column, int):
        return (line, column)
    return position_of(node)


class ScopeTree:
    """The scopes of one function and the bindings of each; answers "where was this bound"."""

    def __init__(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
        parents: dict[ast.AST, ast.AST] | None = None,
    ) -> None:
        """Build the scopes of ``function``; ``parents`` (child → parent for every node of it,
        each parent entered before its children, as :class:`~.run_model.RunAnalysis` keeps
        them) spares a walk of the function."""
        self.root = function
        self.parents: dict[ast.AST, ast.AST] = {}
        self._scope_of: dict[ast.AST, Scope] = {}
        self.scopes: list[Scope] = []
        if parents is None:
            self._build(function)
        else:
            self._build_from(function, parents)

    def _build_from(self, function: ast.AST, parents: dict[ast.AST, ast.AST]) -> None:
        root = Scope(function, None)
        self.scopes.append(root)
        self._scope_of[function] = root
        self.parents = parents
        _bind_parameters(root, function)
        runs_in: dict[ast.AST, Scope] = {function: root}
        scope_nodes = self._scope_of
        for child, parent in parents.items():
            kind = type(child)
            if kind is ast.Name or kind is ast.Constant:
                continue  # binds nothing (a stored name is bound by its statement)
            scope = runs_in.get(parent)
            if scope is None:
                continue
            if parent in scope_nodes and parent is not function:
                scope = self._child_scope(parent, child, scope, scope_nodes[parent])
            elif type(parent) is ast.comprehension:
                scope = self._child_scope(parent, child, scope, scope)
            runs_in[child] = scope
            if kind in _SCOPE_KINDS:
                self._enter(child, scope)
            elif kind in _BINDERS:
                _bind_statement(scope, child)

    def _build(self, function: ast.AST) -> None:
        root = Scope(function, None)
        self.scopes.append(root)
        self._scope_of[function] = root
        _bind_parameters(root, function)
        stack: list[tuple[ast.AST, Scope]] = [(child, root) for child in _body_of(function)]
        for child, _ in stack:
            self.parents[child] = function
        parents = self.parents
        while stack:
            node, scope = stack.pop()
            kind = type(node)
            if kind is ast.Name or kind is ast.Constant:
                continue
            if kind in _SCOPE_KINDS or kind is ast.comprehension:
                inner = self._enter(node, scope) if kind is not ast.comprehension else scope
                for child in child_nodes(node):
                    parents[child] = node
                    stack.append((child, self._child_scope(node, child, scope, inner)))
                continue
            if kind in _BINDERS:
                _bind_statement(scope, node)
            for child in child_nodes(node):
                parents[child] = node
                stack.append((child, scope))

    def _enter(self, node: ast.AST, scope: Scope) -> Scope:
        """Record what ``node`` binds in ``scope``; a new scope for functions/comprehensions."""
        if isinstance(node, _SCOPES):
            inner = Scope(node, scope)
            self.scopes.append(inner)
            self._scope_of[node] = inner
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                scope.bind(node.name, Binding(DEFINE, None, False, node, position_of(node)))
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                _bind_generators(inner, node)
            else:
                _bind_parameters(inner, node)
            return inner
        _bind_statement(scope, node)
        return scope

    def _child_scope(self, node: ast.AST, child: ast.AST, scope: Scope, inner: Scope) -> Scope:
        """Defaults, decorators and a comprehension's first iterable belong to the outer scope."""
        if isinstance(node, ast.comprehension):
            owner = self.parents.get(node)
            first = isinstance(owner, _COMPREHENSIONS) and owner.generators[0] is node
            return (scope.parent or scope) if first and child is node.iter else scope
        if inner is scope or not _runs_outside(node, child):
            return inner
        return scope

    def scope_at(self, node: ast.AST) -> Scope:
        """The innermost scope whose code contains ``node``."""
        below: ast.AST | None = None
        current = node
        while True:
            parent = self.parents.get(current)
            if parent is None:
                return self.scopes[0]
            scope = self._scope_of.get(parent)
            if scope is not None and not _runs_outside(parent, current, below):
                return scope
            below, current = current, parent

    def binding(self, name: str, at: ast.AST) -> Binding | None:
        """The binding of ``name`` as seen at ``at``, or None when it is the module's (or a
        builtin's). A name bound only after ``at`` in its scope gives that later binding (a
        loop reads what its previous turn assigned)."""
        scope: Scope | None = self.scope_at(at)
        where = position_of(at)
        while scope is not None:
            if name in scope.outer_names:
                if _is_global(scope, name):
                    return None
            elif name in scope.bindings:
                found = scope.bindings[name]
                earlier = [b for b in found if b.position <= where]
                return earlier[-1] if earlier else found[-1]
            scope = scope.parent
        return None

    def is_module_name(self, name: str, at: ast.AST) -> bool:
        """True when ``name`` at ``at`` is bound by no scope of this function (or is declared
        ``global``)."""
        return self.binding(name, at) is None


class ScopeCache:
    """One :class:`ScopeTree` per function, built when first asked for, shared by the checks."""

    def __init__(self) -> None:
        self._trees: dict[int, tuple[ast.AST, ScopeTree]] = {}
        self._parents: dict[int, tuple[ast.AST, dict[ast.AST, ast.AST]]] = {}

    def get(self, function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> ScopeTree:
        """The scope tree of ``function``."""
        found = self._trees.get(id(function))
        if found is None:
            parents = self._parents.pop(id(function), None)
            tree = ScopeTree(function, parents[1] if parents else None)
            found = (function, tree)  # keeps the node alive: ids stay unique
            self._trees[id(function)] = found
        return found[1]

    def adopt(self, function: ast.AST, parents: dict[ast.AST, ast.AST]) -> None:
        """Build ``function``'s tree from ``parents`` when it is first asked for."""
        if id(function) not in self._trees:
            self._parents[id(function)] = (function, parents)


def _runs_outside(parent: ast.AST, child: ast.AST, below: ast.AST | None = None) -> bool:
    """True for the parts of a function or comprehension that run in the enclosing scope:
    defaults and decorators, and the first iterable of a comprehension (``child`` is then its
    first generator and ``below`` that generator's ``iter``; given ``child`` alone, the
    generator counts as inside)."""
    if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        arguments = parent.args
        outer: list[ast.AST] = [*arguments.defaults]
        outer += [d for d in arguments.kw_defaults if d is not None]
        if not isinstance(parent, ast.Lambda):
            outer += parent.decorator_list
        return any(child is part for part in outer)
    if isinstance(parent, _COMPREHENSIONS):
        first = parent.generators[0]
        return child is first and below is not None and below is first.iter
    return False


def _is_global(scope: Scope, name: str) -> bool:
    for binding in scope.bindings.get(name, ()):
        if binding.kind == OTHER and isinstance(binding.node, ast.Global):
            return True
    return False


def _body_of(function: ast.AST) -> list[ast.AST]:
    if isinstance(function, ast.Lambda):
        return [function.body]
    return list(cast(ast.FunctionDef, function).body)


def _bind_parameters(scope: Scope, function: ast.AST) -> None:
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        return
    arguments = function.args
    names = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    names += [extra for extra in (arguments.vararg, arguments.kwarg) if extra is not None]
    for arg in names:
        scope.bind(arg.arg, Binding(PARAM, None, False, function, (0, 0)))


def _bind_generators(scope: Scope, node: ast.AST) -> None:
    for generator in cast(ast.ListComp, node).generators:
        _bind_target(scope, generator.target, ITERATE, generator.iter, generator, (0, 0))


def _bind_target(
    scope: Scope,
    target: ast.AST,
    kind: str,
    value: ast.expr | None,
    node: ast.AST,
    position: Position,
    unpacked: bool = False,
) -> None:
    if isinstance(target, ast.Name):
        scope.bind(target.id, Binding(kind, value, unpacked, node, position))
    elif isinstance(target, ast.Starred):
        _bind_target(scope, target.value, kind, value, node, position, True)
    elif isinstance(target, ast.Tuple | ast.List):
        pairs = (
            zip(target.elts, value.elts, strict=True)
            if kind == ASSIGN
            and isinstance(value, ast.Tuple | ast.List)
            and len(value.elts) == len(target.elts)
            else None
        )
        if pairs is not None:
            for part, part_value in pairs:
                _bind_target(scope, part, kind, part_value, node, position, unpacked)
            return
        for part in target.elts:
            _bind_target(scope, part, kind, value, node, position, True)


def _bind_statement(scope: Scope, node: ast.AST) -> None:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            _bind_target(scope, target, ASSIGN, node.value, node, end_of(node))
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        _bind_target(scope, node.target, ASSIGN, node.value, node, end_of(node))
    elif isinstance(node, ast.NamedExpr):
        _bind_target(_function_scope(scope), node.target, ASSIGN, node.value, node, end_of(node))
    elif isinstance(node, ast.For | ast.AsyncFor):
        _bind_target(scope, node.target, ITERATE, node.iter, node, end_of(node.iter))
    elif isinstance(node, ast.Global | ast.Nonlocal):
        scope.outer_names.update(node.names)
        for name in node.names:
            scope.bind(name, Binding(OTHER, None, False, node, (0, 0)))
    elif isinstance(node, ast.ClassDef):
        scope.bind(node.name, Binding(DEFINE, None, False, node, position_of(node)))
    elif isinstance(node, ast.Import | ast.ImportFrom):
        for alias in node.names:
            name = (alias.asname or alias.name).partition(".")[0]
            scope.bind(name, Binding(OTHER, None, False, node, position_of(node)))
    else:
        _bind_other(scope, node)


def _bind_other(scope: Scope, node: ast.AST) -> None:
    targets: list[ast.AST] = []
    if isinstance(node, ast.With | ast.AsyncWith):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    elif isinstance(node, ast.ExceptHandler) and node.name:
        scope.bind(node.name, Binding(OTHER, None, False, node, position_of(node)))
    elif isinstance(node, ast.Delete):
        targets = [t for t in node.targets if isinstance(t, ast.Name)]
    for target in targets:
        _bind_target(scope, target, OTHER, None, node, end_of(node))


def _function_scope(scope: Scope) -> Scope:
    """Where a ``:=`` inside a comprehension binds: the enclosing function's scope."""
    while scope.parent is not None and not isinstance(
        scope.node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    ):
        scope = scope.parent
    return scope
