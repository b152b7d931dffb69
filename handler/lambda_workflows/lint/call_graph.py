"""The module's own functions, and which of them a call runs with which arguments.

Rules of Workflows are broken just as well one call away from ``run()``: a helper in the same
module that changes the event it was given, sleeps, or runs steps inside ``except
BaseException``. :class:`FunctionIndex` resolves ``helper(...)``, ``self.helper(...)`` and
``Class.helper(...)`` to their definitions (a ``def`` nested in the caller is found through
its :class:`~lambda_workflows.lint.scopes.ScopeTree`) and binds the call's arguments to the
callee's parameters.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .scopes import DEFINE, ScopeTree

AnyDef = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
FunctionKey = tuple[str, str]  # (class name or "", function name)


@dataclass(frozen=True, slots=True)
class Callee:
    """A resolved call.

    Attributes:
        function: the definition called.
        key: its key in the index, or None for a nested def or a lambda.
        arguments: parameter name → the expression passed for it.
    """

    function: AnyDef
    key: FunctionKey | None
    arguments: dict[str, ast.expr]


def _is_static(function: AnyDef) -> bool:
    if isinstance(function, ast.Lambda):
        return True
    return any(
        isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
        for d in function.decorator_list
    )


def bind_arguments(function: AnyDef, call: ast.Call, skip_first: bool) -> dict[str, ast.expr]:
    """Which expression of ``call`` each parameter of ``function`` receives.

    ``skip_first`` drops the first parameter (``self`` of a method called on an instance).
    Arguments after a ``*args`` in the call are not bound.
    """
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    if skip_first:
        positional = positional[1:]
    bound: dict[str, ast.expr] = {}
    for param, arg in zip(positional, call.args, strict=False):
        if isinstance(arg, ast.Starred):
            break
        bound[param.arg] = arg
    names = {p.arg for p in (*positional, *arguments.kwonlyargs)}
    for keyword in call.keywords:
        if keyword.arg is not None and keyword.arg in names:
            bound[keyword.arg] = keyword.value
    return bound


class FunctionIndex:
    """The module-level functions and the methods of every class of one module."""

    def __init__(self, tree: ast.Module) -> None:
        self.functions: dict[FunctionKey, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self._attributes: dict[str, set[str]] = {}
        for statement in tree.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[("", statement.name)] = statement
            elif isinstance(statement, ast.ClassDef):
                self.classes[statement.name] = statement
                for member in statement.body:
                    if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                        self.functions[(statement.name, member.name)] = member

    def class_attributes(self, class_name: str) -> set[str]:
        """The names a class body assigns (its class-level attributes)."""
        found = self._attributes.get(class_name)
        if found is None:
            found = set()
            for statement in self.classes[class_name].body:
                targets = statement.targets if isinstance(statement, ast.Assign) else []
                if isinstance(statement, ast.AnnAssign) and statement.value is not None:
                    targets = [statement.target]
                found.update(t.id for t in targets if isinstance(t, ast.Name))
            self._attributes[class_name] = found
        return found

    def method_key(
        self, node: ast.expr, class_name: str, self_name: str | None
    ) -> FunctionKey | None:
        """``self.m`` (in a method of ``class_name``) or ``Class.m`` → the method's key."""
        if not isinstance(node, ast.Attribute) or not isinstance(node.value, ast.Name):
            return None
        owner = node.value.id
        if owner == self_name and class_name:
            key = (class_name, node.attr)
        elif owner in self.classes:
            key = (owner, node.attr)
        else:
            return None
        return key if key in self.functions else None

    def resolve(
        self,
        call: ast.Call,
        scopes: ScopeTree | None,
        class_name: str = "",
        self_name: str | None = None,
    ) -> Callee | None:
        """The function ``call`` runs, with its arguments bound, if it is defined here."""
        func = call.func
        if isinstance(func, ast.Name):
            return self._resolve_name(func, call, scopes)
        key = self.method_key(func, class_name, self_name)
        if key is None:
            return None
        function = self.functions[key]
        on_instance = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == (
            self_name
        )
        skip = on_instance and not _is_static(function)
        return Callee(function, key, bind_arguments(function, call, skip))

    def _resolve_name(
        self, func: ast.Name, call: ast.Call, scopes: ScopeTree | None
    ) -> Callee | None:
        binding = scopes.binding(func.id, func) if scopes is not None else None
        if binding is not None:
            local: AnyDef | None = None
            if binding.kind == DEFINE and isinstance(
                binding.node, ast.FunctionDef | ast.AsyncFunctionDef
            ):
                local = binding.node
            elif isinstance(binding.value, ast.Lambda) and not binding.unpacked:
                local = binding.value
            if local is None:
                return None
            return Callee(local, None, bind_arguments(local, call, False))
        function = self.functions.get(("", func.id))
        if function is None:
            return None
        return Callee(function, ("", func.id), bind_arguments(function, call, False))
