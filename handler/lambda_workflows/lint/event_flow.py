"""WF105: the event changed, directly, through an alias, or by a helper of the same module.

The engine deep-freezes the event: changing it raises ``EventMutationError`` (rules of
Workflows: "Don't mutate your incoming events"). This module follows the event's parts through
a function: ``p = event.payload``, ``item`` of ``for item in event.payload["items"]``,
``meta = event.payload.get("meta", {})``, ``k, v`` of ``.items()``, a ``:=``. A shallow copy
(``dict(p)``, ``list(p)``, ``p.copy()``, ``{**p}``, ``sorted(p)``, a slice) is a new container
holding the same frozen parts: changing the copy is fine, changing what it holds is not.
``copy.deepcopy`` / ``copy.copy`` make a thawed copy.

A change counts wherever it happens: an assignment or ``del`` on a part, ``+=`` of a list onto
one, a mutating method (``append``, ``update``, ``setdefault``, ``sort``...), ``setattr``,
``operator.setitem``, ``random.shuffle``, ``dict.update(p, ...)``, and a call of a function of
the module (``normalise(event.payload)``, ``self._enrich(event)``, a nested ``def``, the
function given to ``map``) that changes the parameter receiving the part, at any depth of
calls. Each function's changes to its parameters are worked out once.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from .apis import IN_PLACE_FUNCTIONS, MUTATING_METHODS, ImportAliases
from .call_graph import AnyDef, Callee, FunctionIndex, bind_arguments
from .scopes import ASSIGN, ITERATE, PARAM, Binding, ScopeCache

_DUNDER_MUTATORS = frozenset({"__setitem__", "__delitem__", "__iadd__", "__ior__", "__setattr__"})
_ELEMENT_METHODS = frozenset({"get", "setdefault", "pop"})
_VIEW_METHODS = frozenset({"keys", "values", "items"})
_SHALLOW_COPIES = frozenset(
    {"dict", "list", "tuple", "sorted", "reversed", "collections.OrderedDict", "frozenset", "set"}
)
_STORES = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete})
_ITERATORS = frozenset({"enumerate", "iter", "zip"})
_CONTAINER_DISPLAYS = (ast.List, ast.ListComp, ast.Tuple, ast.Dict, ast.DictComp, ast.Set)
_BUILTIN_TYPES = ("dict.", "list.", "set.")


@dataclass(frozen=True, slots=True)
class Part:
    """A value that is (part of) a parameter being followed.

    Attributes:
        root: the parameter.
        depth: how many attribute/item steps below it (0: the parameter itself).
        shell: a fresh shallow copy: itself mutable, its contents the parameter's.
    """

    root: str
    depth: int
    shell: bool = False

    def element(self) -> Part:
        """What ``part[...]`` / ``part.attr`` / an iteration of it gives."""
        return Part(self.root, self.depth + 1)


@dataclass(frozen=True, slots=True)
class Change:
    """A change to a followed parameter.

    Attributes:
        node: where it happens in the function analysed (the call, for a helper's change).
        root: the parameter changed.
        depth: the depth below it of the object changed.
        via: the helper making the change (``"normalise()"``), None when it is direct.
        line: the line of the change itself (inside the helper, for ``via``).
    """

    node: ast.AST
    root: str
    depth: int
    via: str | None
    line: int


class EventFlow:
    """Finds the changes a function makes to some of its parameters."""

    def __init__(self, index: FunctionIndex, aliases: ImportAliases, scopes: ScopeCache) -> None:
        self.index = index
        self.aliases = aliases
        self.scopes = scopes
        self._summaries: dict[int, dict[str, list[Change]]] = {}
        self._returns: dict[int, list[Part]] = {}

    def changes(
        self, function: AnyDef, roots: set[str], class_name: str, self_name: str | None
    ) -> list[Change]:
        """Every change ``function`` makes to the parameters ``roots`` (at any depth)."""
        return list(_Walker(self, function, roots, class_name, self_name).changes())

    def summary(self, callee: Callee, class_name: str) -> dict[str, list[Change]]:
        """The changes a called function makes to each of its parameters."""
        key = id(callee.function)
        if key not in self._summaries:
            self._summaries[key] = {}  # a recursive call sees no changes while this is computed
            function = callee.function
            owner = callee.key[0] if callee.key is not None else class_name
            params = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
            self_name = params[0].arg if owner and params and callee.key is not None else None
            roots = {p.arg for p in params if p.arg != self_name}
            found: dict[str, list[Change]] = {}
            for change in self.changes(function, roots, owner, self_name):
                found.setdefault(change.root, []).append(change)
            self._summaries[key] = found
        return self._summaries[key]

    def returned(self, callee: Callee, class_name: str) -> list[Part]:
        """What a called function returns of its parameters: ``return payload`` gives
        ``Part("payload", 0)``, ``return evt.payload["meta"]`` ``Part("evt", 2)``."""
        key = id(callee.function)
        if key not in self._returns:
            self._returns[key] = []  # a recursive call returns nothing known meanwhile
            function = callee.function
            owner = callee.key[0] if callee.key is not None else class_name
            params = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
            self_name = params[0].arg if owner and params and callee.key is not None else None
            roots = {p.arg for p in params if p.arg != self_name}
            walker = _Walker(self, function, roots, owner, self_name)
            values = [function.body] if isinstance(function, ast.Lambda) else _returns(function)
            self._returns[key] = [p for p in map(walker.part_of, values) if p is not None]
        return self._returns[key]


def _returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """The values of the function's own ``return`` statements (not those of nested ones)."""
    found: list[ast.expr] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            found.append(node.value)
        pending.extend(ast.iter_child_nodes(node))
    return found


class _Walker:
    """One function: where its followed parameters go, and what changes them."""

    def __init__(
        self,
        flow: EventFlow,
        function: AnyDef,
        roots: set[str],
        class_name: str,
        self_name: str | None,
    ) -> None:
        self.flow = flow
        self.function = function
        self.roots = roots
        self.class_name = class_name
        self.self_name = self_name
        self.scopes = flow.scopes.get(function)
        self._visiting: set[int] = set()

    def part_of(self, node: ast.AST | None) -> Part | None:
        """What ``node``'s value is of a followed parameter, if anything."""
        if isinstance(node, ast.Name):
            return self._part_of_name(node)
        if isinstance(node, ast.Attribute):
            base = self.part_of(node.value)
            return base.element() if base else None
        if isinstance(node, ast.Subscript):
            base = self.part_of(node.value)
            if base is None:
                return None
            return (
                Part(base.root, base.depth, True)
                if isinstance(node.slice, ast.Slice)
                else (base.element())
            )
        if isinstance(node, ast.Call):
            return self._part_of_call(node)
        if isinstance(node, ast.Dict | ast.List | ast.Tuple | ast.Set):
            return self._part_of_display(node)
        if isinstance(node, ast.IfExp):
            return self.part_of(node.body) or self.part_of(node.orelse)
        if isinstance(node, ast.BoolOp):
            return next((p for p in map(self.part_of, node.values) if p), None)
        if isinstance(node, ast.NamedExpr | ast.Starred | ast.Await):
            return self.part_of(node.value)
        return None

    def _part_of_name(self, node: ast.Name) -> Part | None:
        binding = self.scopes.binding(node.id, node)
        if binding is None:
            return None
        if binding.kind == PARAM:
            root_scope = binding.node is self.function
            return Part(node.id, 0) if root_scope and node.id in self.roots else None
        if binding.kind not in (ASSIGN, ITERATE) or id(binding) in self._visiting:
            return None
        self._visiting.add(id(binding))
        try:
            return self._part_of_binding(binding)
        finally:
            self._visiting.discard(id(binding))

    def _part_of_binding(self, binding: Binding) -> Part | None:
        found = self.part_of(binding.value)
        if found is None:
            return None
        if binding.kind == ITERATE or binding.unpacked:
            return found.element()
        return found

    def _part_of_call(self, call: ast.Call) -> Part | None:
        func = call.func
        if isinstance(func, ast.Attribute):
            base = self.part_of(func.value)
            if base is not None:
                if func.attr in _ELEMENT_METHODS:
                    return base.element()
                if func.attr in _VIEW_METHODS:
                    return base
                if func.attr == "copy":
                    return Part(base.root, base.depth, True)
                return None
        qualname = self.flow.aliases.qualify(func)
        if qualname == "getattr" and call.args:
            base = self.part_of(call.args[0])
            return base.element() if base else None
        if qualname in _ITERATORS and call.args:
            return self.part_of(call.args[0])  # enumerate(p): its elements are p's (in pairs)
        if qualname in _SHALLOW_COPIES and call.args:
            base = self.part_of(call.args[0])
            return Part(base.root, base.depth, True) if base else None
        return self._returned_by(call)

    def _returned_by(self, call: ast.Call) -> Part | None:
        """``clean = prepare(event.payload)`` where ``prepare`` returns what it was given."""
        callee = self._resolve(call)
        if callee is None:
            return None
        for returned in self.flow.returned(callee, self.class_name):
            base = self.part_of(callee.arguments.get(returned.root))
            if base is None:
                continue
            if returned.depth == 0:
                return Part(base.root, base.depth, base.shell or returned.shell)
            return Part(base.root, base.depth + returned.depth, returned.shell)
        return None

    def _part_of_display(self, node: ast.Dict | ast.List | ast.Tuple | ast.Set) -> Part | None:
        """``{**p, "k": v}`` and ``[*p]`` are shallow copies of ``p``."""
        unpacked: list[ast.expr] = []
        if isinstance(node, ast.Dict):
            unpacked = [v for k, v in zip(node.keys, node.values, strict=True) if k is None]
        else:
            unpacked = [e.value for e in node.elts if isinstance(e, ast.Starred)]
        for value in unpacked:
            base = self.part_of(value)
            if base is not None:
                return Part(base.root, base.depth, True)
        return None

    def changes(self) -> Iterator[Change]:
        """Every change to a followed parameter in the function (nested functions included)."""
        for node in self.scopes.parents:  # every node of the function but itself
            kind = type(node)
            if kind is ast.Call:
                yield from self._called(node)  # type: ignore[arg-type]
            elif kind in _STORES:
                yield from self._stored(node)  # type: ignore[arg-type]

    def _change(self, node: ast.AST, changed: ast.AST | None) -> Iterator[Change]:
        part = self.part_of(changed)
        if part is not None and not part.shell:
            yield Change(node, part.root, part.depth, None, getattr(node, "lineno", 0))

    def _stored(
        self, node: ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Delete
    ) -> Iterator[Change]:
        targets: list[ast.expr] = (
            list(node.targets) if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        )
        for target in _flat(targets):
            if isinstance(target, ast.Attribute | ast.Subscript):
                yield from self._change(target, target.value)
            elif (
                isinstance(node, ast.AugAssign)
                and isinstance(target, ast.Name)
                and isinstance(node.value, _CONTAINER_DISPLAYS)
            ):
                yield from self._change(node, target)  # list += [...] extends it in place

    def _called(self, call: ast.Call) -> Iterator[Change]:
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and (func.attr in MUTATING_METHODS or func.attr in _DUNDER_MUTATORS)
            and self.part_of(func.value) is not None
        ):
            yield from self._change(call, func.value)
            return
        qualname = self.flow.aliases.qualify(func) or ""
        method = qualname.partition(".")[2]
        if call.args and (
            qualname in IN_PLACE_FUNCTIONS
            or (qualname.startswith(_BUILTIN_TYPES) and method in MUTATING_METHODS)
        ):
            yield from self._change(call, call.args[0])
            return
        if qualname in ("map", "filter") and len(call.args) >= 2:
            yield from self._mapped(call)
            return
        if qualname.endswith("partial") and call.args:
            # partial(normalise, event.payload): the arguments go to normalise when it runs
            bound = ast.Call(func=call.args[0], args=call.args[1:], keywords=call.keywords)
            yield from self._called(ast.copy_location(bound, call))
            return
        callee = self._resolve(call)
        if callee is not None:
            for param, argument in callee.arguments.items():
                yield from self._through(call, callee, param, self.part_of(argument))

    def _resolve(self, call: ast.Call) -> Callee | None:
        """The function ``call`` runs: of the module, nested here, or a lambda written inline."""
        if isinstance(call.func, ast.Lambda):
            return Callee(call.func, None, bind_arguments(call.func, call, False))
        return self.flow.index.resolve(call, self.scopes, self.class_name, self.self_name)

    def _mapped(self, call: ast.Call) -> Iterator[Change]:
        """``map(reset, p)``: ``reset`` receives each element of ``p``."""
        target = call.args[0]
        fake = ast.Call(func=target, args=[ast.Name(id="_", ctx=ast.Load())], keywords=[])
        callee = self._resolve(ast.copy_location(fake, call))
        base = self.part_of(call.args[1])
        if callee is None or base is None or not callee.arguments:
            return
        param = next(iter(callee.arguments))
        yield from self._through(call, callee, param, base.element())

    def _through(
        self, call: ast.Call, callee: Callee, param: str, given: Part | None
    ) -> Iterator[Change]:
        if given is None:
            return
        name = getattr(callee.function, "name", "lambda")
        for change in self.flow.summary(callee, self.class_name).get(param, ()):
            if given.shell and change.depth == 0:
                continue  # the helper changes the copy itself, not what it holds
            yield Change(call, given.root, given.depth + change.depth, f"{name}()", change.line)


def _flat(targets: list[ast.expr]) -> Iterator[ast.expr]:
    for target in targets:
        if isinstance(target, ast.Tuple | ast.List):
            yield from _flat(target.elts)
        elif isinstance(target, ast.Starred):
            yield from _flat([target.value])
        else:
            yield target
