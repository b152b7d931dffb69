"""Collections iterated in hash order, and the values that depend on that order.

A ``set`` (or ``frozenset``) of strings iterates in an order that depends on string hashing,
which Python randomises per process: two invocations of the same instance see different orders.
Steps named (or fed) while iterating one are called in a different order on replay, which the
engine reports as non-determinism. :class:`SetOrder` answers two questions about an
expression, following variables to the assignment that set them (see :mod:`.scopes`):

- :meth:`SetOrder.unordered`: is it a collection in hash order? Set displays and
  comprehensions, ``set(...)``/``frozenset(...)``, ``|``/``&``/``-``/``^`` of such sets (or of
  dict views), ``.union()``/``.difference()``..., and what keeps their order: ``list(s)``,
  ``tuple(s)``, ``enumerate(s)``, ``zip``, ``map``, ``dict.fromkeys(s)`` and its keys, a
  comprehension over one. ``sorted(...)`` is ordered again; a set of small integer literals
  (``{0, 1, 2}``) iterates the same in every process, and counts as ordered.
- :meth:`SetOrder.order_dependent`: does its value depend on that order? An element taken
  while iterating one (``for x in s``, ``enumerate(s)``'s index), ``s.pop()``, ``next(iter(s))``,
  ``list(s)[0]``, ``",".join(s)``, ``str(s)`` or an f-string of the set itself.
"""

from __future__ import annotations

import ast

from .apis import ImportAliases
from .scopes import ASSIGN, ITERATE, ScopeTree

_SET_OPERATORS = (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)
_SET_METHODS = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})
_VIEW_METHODS = frozenset({"keys", "values", "items"})
_ORDER_KEEPING = frozenset(
    {
        "list",
        "tuple",
        "iter",
        "reversed",
        "enumerate",
        "zip",
        "filter",
        "map",
        "dict",
        "dict.fromkeys",
        "collections.OrderedDict",
        "collections.OrderedDict.fromkeys",
        "collections.Counter",
        "collections.deque",
    }
)
_TEXT = frozenset({"str", "repr"})
_COMPREHENSIONS = (ast.ListComp, ast.GeneratorExp, ast.DictComp)


def _small_integers(node: ast.expr | None) -> bool:
    """``{0, 1, 2}``, ``[1, 2]``, ``range(4)``: integers, whose set order is their value's."""
    if isinstance(node, ast.Set | ast.List | ast.Tuple):
        return all(isinstance(e, ast.Constant) and type(e.value) in (int, bool) for e in node.elts)
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
    )


class SetOrder:
    """Answers "is this in hash order" and "does this depend on it" within one function."""

    def __init__(
        self,
        scopes: ScopeTree,
        aliases: ImportAliases,
        module_values: dict[str, ast.expr],
        self_sets: frozenset[str] = frozenset(),
        self_name: str | None = None,
    ) -> None:
        """``self_sets``: the attributes of ``self_name`` that hold a set (:func:`self_sets`)."""
        self.scopes = scopes
        self.aliases = aliases
        self.module_values = module_values
        self.self_sets = self_sets
        self.self_name = self_name
        self._visiting: set[int] = set()

    def _guarded(self, node: ast.AST, question: str) -> bool:
        key = id(node)
        if key in self._visiting:
            return False
        self._visiting.add(key)
        try:
            if question == "unordered":
                return self.unordered(node)  # type: ignore[arg-type]
            return self.order_dependent(node)
        finally:
            self._visiting.discard(key)

    def unordered(self, node: ast.expr | None) -> bool:
        """True when ``node`` is a collection that iterates in hash order."""
        if isinstance(node, ast.Set):
            return not _small_integers(node)
        if isinstance(node, ast.SetComp):
            return True
        if isinstance(node, ast.Call):
            return self._unordered_call(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, _SET_OPERATORS):
            return any(self.unordered(side) or _is_view(side) for side in (node.left, node.right))
        if isinstance(node, _COMPREHENSIONS):
            return self.unordered(node.generators[0].iter)
        if isinstance(node, ast.Name):
            return self._unordered_name(node)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return node.value.id == self.self_name and node.attr in self.self_sets
        if isinstance(node, ast.IfExp):
            return self.unordered(node.body) or self.unordered(node.orelse)
        if isinstance(node, ast.NamedExpr):
            return self.unordered(node.value)
        return False

    def _unordered_call(self, call: ast.Call) -> bool:
        qualname = self.aliases.qualify(call.func)
        if qualname in ("set", "frozenset"):
            return not call.args or not _small_integers(call.args[0])
        if qualname in _ORDER_KEEPING:
            args = call.args[1:] if qualname in ("map", "filter") else call.args
            return any(self.unordered(a) for a in args)
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _SET_METHODS | _VIEW_METHODS:
            return self.unordered(func.value)
        return False

    def _unordered_name(self, node: ast.Name) -> bool:
        binding = self.scopes.binding(node.id, node)
        if binding is None:
            value = self.module_values.get(node.id)
            return value is not None and self._guarded(value, "unordered")
        if binding.kind != ASSIGN or binding.unpacked or binding.value is None:
            return False
        return self._guarded(binding.value, "unordered")

    def order_dependent(self, node: ast.AST | None) -> bool:
        """True when the value of ``node`` depends on the order of a collection in hash order."""
        if node is None:
            return False
        pending: list[ast.AST] = [node]
        while pending:
            current = pending.pop()
            if self._depends_here(current):
                return True
            pending.extend(ast.iter_child_nodes(current))
        return False

    def _depends_here(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            return self._dependent_name(node)
        if isinstance(node, ast.FormattedValue):
            return self.unordered(node.value)
        if isinstance(node, ast.Subscript):
            index = node.slice
            return (
                isinstance(index, ast.Constant)
                and type(index.value) is int
                and self.unordered(node.value)
            )
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr == "pop" and not node.args:
                return self.unordered(func.value)
            if func.attr == "join" and node.args:
                return self.unordered(node.args[0])
        qualname = self.aliases.qualify(func)
        if qualname == "next" and node.args:
            return self.unordered(node.args[0])
        return qualname in _TEXT and bool(node.args) and self.unordered(node.args[0])

    def _dependent_name(self, node: ast.Name) -> bool:
        binding = self.scopes.binding(node.id, node)
        if binding is None or binding.value is None:
            return False
        if binding.kind == ITERATE:
            return self.unordered(binding.value) or self._guarded(binding.value, "dependent")
        if binding.kind == ASSIGN:
            return self._guarded(binding.value, "dependent")
        return False


def self_sets(cls: ast.ClassDef | None, aliases: ImportAliases) -> frozenset[str]:
    """The attributes (``regions``) the class sets to a set: in its body
    (``regions = {"us", "eu"}``) or on ``self`` in a method (``self.seen = set()``)."""
    if cls is None:
        return frozenset()
    found: set[str] = set()
    for statement in cls.body:
        if isinstance(statement, ast.Assign) and _builds_a_set(statement.value, aliases):
            found.update(t.id for t in statement.targets if isinstance(t, ast.Name))
        if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        params = statement.args.args
        owner = params[0].arg if params else None
        for node in ast.walk(statement):
            if isinstance(node, ast.Assign) and _builds_a_set(node.value, aliases):
                found.update(
                    t.attr
                    for t in node.targets
                    if isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == owner
                )
    return frozenset(found)


def _builds_a_set(value: ast.expr, aliases: ImportAliases) -> bool:
    return isinstance(value, ast.Set | ast.SetComp | ast.Call) and makes_a_set(value, aliases)


def makes_a_set(node: ast.AST, aliases: ImportAliases) -> bool:
    """A quick test: does ``node`` build a set (display, comprehension, ``set()``,
    ``frozenset()``, ``a | b``, ``d.keys() - x``)? A function with no such node (and reading no
    module-level set) has nothing in hash order, and :class:`SetOrder` need not look at it."""
    if isinstance(node, ast.Set):
        return not _small_integers(node)
    if isinstance(node, ast.SetComp):
        return True
    if isinstance(node, ast.Call):
        return aliases.qualify(node.func) in ("set", "frozenset")
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.BitOr | ast.BitAnd | ast.BitXor):
            return True
        return isinstance(node.op, ast.Sub) and _is_view(node.left)
    return False


def _is_view(node: ast.expr) -> bool:
    """``d.keys()``/``d.items()``: their ``|``, ``&``, ``-`` give sets."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _VIEW_METHODS
    )
