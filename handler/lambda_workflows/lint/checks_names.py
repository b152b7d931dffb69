"""Checks of what a step's name (and its callback's input) is built from: WF115 and WF116.

Both are "Name steps deterministically": a replay must call the same steps, with the same
names, in the same order. WF115 catches names built from state that outlives a replay
(:mod:`.process_state`); WF116 catches steps named or fed while iterating a collection in hash
order (:mod:`.set_order`).
"""

from __future__ import annotations

import ast

from .findings import Issue
from .process_state import ProcessState
from .run_model import RunAnalysis, StepCall
from .scopes import ASSIGN, ITERATE, ScopeTree
from .set_order import SetOrder, makes_a_set, self_sets


def check_names(analysis: RunAnalysis) -> list[Issue]:
    """All WF115 and WF116 issues of one workflow function's step calls."""
    scopes = analysis.facts.scopes.get(analysis.function.node)
    function = analysis.function
    cls = analysis.facts.index.classes.get(function.class_name)
    own_sets = self_sets(cls, analysis.aliases) if function.self_name else frozenset()
    values = analysis.facts.module_values
    order = SetOrder(scopes, analysis.aliases, values, own_sets, function.self_name)
    sets = bool(own_sets) or _builds_sets(analysis, scopes)
    state = _StateReader(analysis, scopes)
    issues: list[Issue] = []
    for step in analysis.steps:
        if step.region.opaque or step.name_arg is None:
            continue
        label = state.label(step.name_arg)
        if label is not None:
            issues.append(Issue(step.name_arg, "WF115", _state_message(label)))
        if sets:
            _set_order(order, step, issues)
    return issues


def _builds_sets(analysis: RunAnalysis, scopes: ScopeTree) -> bool:
    """True when the function builds a set, or reads a module-level one (a quick test before
    following values: most functions have none)."""
    aliases = analysis.aliases
    if any(makes_a_set(call, aliases) for call, _region in analysis.calls):
        return True
    module_sets = {
        name
        for name, value in analysis.facts.module_values.items()
        if any(makes_a_set(node, aliases) for node in ast.walk(value))
    }
    for node in scopes.parents:
        kind = type(node)
        if kind is ast.Name:
            if node.id in module_sets:  # type: ignore[attr-defined]
                return True
        elif kind in _SET_KINDS and makes_a_set(node, aliases):
            return True
    return False


_SET_KINDS = frozenset({ast.Set, ast.SetComp, ast.BinOp})


def _state_message(label: str) -> str:
    return (
        f"step name uses {label}, which workflow code changes and which outlives a replay "
        "(module and class state live as long as the process): in a warm invocation it still "
        "holds what earlier runs left, so the name differs on replay and the recorded step is "
        "not found; build names from the event, step results or variables of run()"
    )


def _set_order(order: SetOrder, step: StepCall, issues: list[Issue]) -> None:
    """WF116: the step's name, or what its callback is given, depends on a set's order."""
    name = step.name_arg
    if name is not None and order.order_dependent(name):
        message = (
            "step name depends on the iteration order of a set, which string hashing changes "
            "from one process to the next: a replay calls the steps in another order and the "
            "instance fails with a non-determinism error; iterate `sorted(...)` of the set"
        )
        issues.append(Issue(name, "WF116", message))
        return
    others = [*step.call.args[1:], *(k.value for k in step.call.keywords if k.arg != "name")]
    if any(order.order_dependent(other) for other in others):
        message = (
            "this step is fed an element taken in the iteration order of a set, which string "
            "hashing changes from one process to the next: on replay each recorded result "
            "comes back for another element; iterate `sorted(...)` of the set"
        )
        issues.append(Issue(step.call, "WF116", message))


class _StateReader:
    """Says whether an expression reads process state (directly or through a variable)."""

    def __init__(self, analysis: RunAnalysis, scopes: ScopeTree) -> None:
        self.analysis = analysis
        self.scopes = scopes
        self._state: ProcessState | None = None
        self._visiting: set[int] = set()

    @property
    def state(self) -> ProcessState:
        """The module's process state, worked out the first time a name may read it."""
        if self._state is None:
            self._state = self.analysis.facts.process_state()
        return self._state

    def label(self, node: ast.AST) -> str | None:
        """How the state is read (``"`counter`"``, ``"next_name()"``), or None."""
        for part in ast.walk(node):
            found = self._read_here(part)
            if found is not None:
                return found
        return None

    def _read_here(self, node: ast.AST) -> str | None:
        function = self.analysis.function
        facts = self.analysis.facts
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            return self._read_name(node)
        if isinstance(node, ast.Attribute):
            owner = _owner(node.value, function.class_name, function.self_name)
            if (
                owner in facts.index.classes
                and node.attr in facts.index.class_attributes(owner)
                and (owner, node.attr) in self.state.class_attributes
            ):
                return f"`{ast.unparse(node)}`"
        if isinstance(node, ast.Call):
            key = facts.helper_key(node, function.class_name, function.self_name)
            if key in facts.index.functions and key in self.state.helpers:
                return f"{key[1]}() (it reads or changes module state)"
        return None

    def _read_name(self, node: ast.Name) -> str | None:
        binding = self.scopes.binding(node.id, node)
        if binding is None:
            known = node.id in self.analysis.facts.module_values
            return f"`{node.id}`" if known and node.id in self.state.names else None
        if binding.kind not in (ASSIGN, ITERATE) or binding.value is None:
            return None
        if id(binding) in self._visiting:
            return None
        self._visiting.add(id(binding))
        try:
            found = self.label(binding.value)
        finally:
            self._visiting.discard(id(binding))
        return f"`{node.id}` (set from {found})" if found else None


def _owner(node: ast.expr, class_name: str, self_name: str | None) -> str | None:
    """The class whose attribute ``node.attr`` is: ``Cls``, ``type(self)``, ``self``..."""
    if isinstance(node, ast.Name):
        return class_name if node.id == self_name and class_name else node.id
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "type":
        return class_name or None
    if isinstance(node, ast.Attribute) and node.attr == "__class__":
        return class_name or None
    return None
