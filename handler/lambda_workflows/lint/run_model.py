"""The shape of one workflow function: which code runs inside a step callback, which outside.

``run()`` is replayed from the top on every resume, so code *outside* a step callback runs
again and again while a callback's code runs until its step is recorded. Every function found
in ``run()`` becomes a :class:`Region`:

- the body of ``run()`` itself is *outside*;
- a lambda or def passed as the callback of ``step.do(...)`` (directly, by name, or through
  ``functools.partial``), or as its ``rollback=``, is a *callback*, and so is a local helper
  called only from callbacks;
- a local helper called from ``run()`` directly, and any other lambda, runs where it is
  called, so it is *inline* (transparent);
- a local def that is never called nor passed to ``step.do`` is *opaque* and not checked
  (it may run anywhere).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

from .apis import STEP_METHODS, WORKFLOW_CREATE, ImportAliases, child_nodes, walk
from .module_facts import ModuleFacts, WorkflowFunction, parameter_given

RUN, CALLBACK, INLINE, OPAQUE, PENDING = "run", "callback", "inline", "opaque", "pending"
_FUNCTIONS = ast.FunctionDef | ast.AsyncFunctionDef
_STORE_KINDS = frozenset(
    {ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.For, ast.AsyncFor}
)
AnyFunction = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
_LOOPING = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


class Region:
    """A function inside a workflow function, and whether its code runs inside a step."""

    __slots__ = ("callback", "declared_outer", "function", "kind", "locals", "opaque", "parent")

    def __init__(self, kind: str, function: AnyFunction, parent: Region | None) -> None:
        self.kind = kind
        self.function = function
        self.parent = parent
        self.locals: set[str] = set()
        self.declared_outer: set[str] = set()
        self.callback: Region | None = None
        self.opaque = False
        arguments = function.args
        for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            self.locals.add(arg.arg)
        for extra in (arguments.vararg, arguments.kwarg):
            if extra is not None:
                self.locals.add(extra.arg)

    @property
    def outside(self) -> bool:
        """True when this code runs in ``run()`` itself, outside any step callback."""
        return self.callback is None and not self.opaque

    def where(self) -> str:
        """``"inside"``, ``"outside"``, ``"opaque"`` or ``"unknown"`` (while resolving)."""
        region: Region | None = self
        while region is not None:
            if region.kind == CALLBACK:
                return "inside"
            if region.kind in (OPAQUE, PENDING):
                return "opaque" if region.kind == OPAQUE else "unknown"
            region = region.parent
        return "outside"


@dataclass(slots=True)
class StepCall:
    """A ``step.do/sleep/sleep_until/wait_for_event/run_workflow(...)`` call."""

    call: ast.Call
    method: str
    region: Region

    @property
    def name_arg(self) -> ast.expr | None:
        """The step name expression (first argument)."""
        if self.call.args:
            return self.call.args[0]
        return next((k.value for k in self.call.keywords if k.arg == "name"), None)


class RunAnalysis:
    """Everything the checks need about one workflow function, from one walk of its body."""

    def __init__(self, function: WorkflowFunction, facts: ModuleFacts) -> None:
        self.function = function
        self.facts = facts
        self.aliases: ImportAliases = facts.aliases
        self.parents: dict[ast.AST, ast.AST] = {}
        self.calls: list[tuple[ast.Call, Region]] = []
        self.stores: list[tuple[ast.stmt, Region]] = []
        self.returns: list[tuple[ast.Return, Region]] = []
        self.withs: list[tuple[ast.With | ast.AsyncWith, Region]] = []
        self.tries: list[tuple[ast.Try | ast.TryStar, Region]] = []
        self.awaited: list[ast.Await] = []
        self.loads: list[ast.Name] = []
        self.create_calls: list[ast.Call] = []
        self.steps: list[StepCall] = []
        self.regions: list[Region] = []
        self._callback_nodes: set[int] = set()
        self._callback_names: set[str] = set()
        self._defs: dict[str, list[Region]] = {}
        self._call_sites: dict[str, list[Region]] = {}
        self.run_region = self._new_region(RUN, function.node, None)
        self._walk()
        self._resolve()

    def _new_region(self, kind: str, node: AnyFunction, parent: Region | None) -> Region:
        region = Region(kind, node, parent)
        self.regions.append(region)
        return region

    def _mark_callback(self, call: ast.Call) -> None:
        """Mark the step's callback (its last positional argument, or ``callback=``) and its
        ``rollback=``: a rollback runs as a step of its own, so the same rules apply to it."""
        args = call.args
        target: ast.expr | None = args[-1] if len(args) >= 2 else None
        for keyword in call.keywords:
            if keyword.arg == "callback":
                target = keyword.value
            elif keyword.arg == "rollback":
                self._mark_target(keyword.value)
        self._mark_target(target)

    def _mark_target(self, target: ast.expr | None) -> None:
        if (
            isinstance(target, ast.Call)
            and target.args
            and (self.aliases.qualify(target.func) or "").endswith("partial")
        ):
            target = target.args[0]
        if isinstance(target, ast.Lambda):
            self._callback_nodes.add(id(target))
        elif isinstance(target, ast.Name):
            self._callback_names.add(target.id)

    def _enter_function(self, node: AnyFunction, region: Region) -> Region:
        if id(node) in self._callback_nodes:
            kind = CALLBACK
        elif isinstance(node, ast.Lambda):
            kind = INLINE
        else:
            kind = PENDING
        inner = self._new_region(kind, node, region)
        if not isinstance(node, ast.Lambda):
            region.locals.add(node.name)
            self._defs.setdefault(node.name, []).append(inner)
        return inner

    def _walk(self) -> None:
        """Visit every node once; a function body is visited in a new region."""
        step_name = self.function.step_name
        parents = self.parents
        loads = self.loads
        root = self.function.node
        for statement in root.body:
            parents[statement] = root
        stack: list[tuple[list[ast.AST], Region]] = [(list(root.body), self.run_region)]
        while stack:
            nodes, region = stack.pop()
            for node in nodes:  # children are appended to ``nodes`` while iterating
                kind = type(node)
                if kind is ast.Constant:
                    continue
                if type(node) is ast.Name:
                    if type(node.ctx) is ast.Store:
                        region.locals.add(node.id)
                    else:
                        loads.append(node)
                    continue
                if type(node) is ast.Attribute or type(node) is ast.keyword:
                    parents[node.value] = node
                    nodes.append(node.value)
                    continue
                if type(node) is ast.Call:
                    self._visit_call(node, region, step_name)
                elif isinstance(node, ast.Await):
                    self.awaited.append(node)
                elif kind in _STORE_KINDS:
                    self.stores.append((cast(ast.stmt, node), region))
                elif isinstance(node, ast.Return):
                    self.returns.append((node, region))
                elif isinstance(node, ast.With | ast.AsyncWith):
                    self.withs.append((node, region))
                elif isinstance(node, ast.Try | ast.TryStar):
                    self.tries.append((node, region))
                elif isinstance(node, ast.Nonlocal | ast.Global):
                    region.declared_outer.update(node.names)
                elif isinstance(node, ast.Import | ast.ImportFrom):
                    self.aliases.add(node)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    self._push_function(node, region, nodes, stack)
                    continue
                for child in child_nodes(node):
                    parents[child] = node
                    nodes.append(child)

    def _visit_call(self, node: ast.Call, region: Region, step_name: str) -> None:
        self.calls.append((node, region))
        func = node.func
        if isinstance(func, ast.Name):
            self._call_sites.setdefault(func.id, []).append(region)
        elif isinstance(func, ast.Attribute) and func.attr in WORKFLOW_CREATE:
            self.create_calls.append(node)
        elif (
            isinstance(func, ast.Attribute)
            and func.attr in STEP_METHODS
            and isinstance(func.value, ast.Name)
            and func.value.id == step_name
        ):
            self.steps.append(StepCall(node, func.attr, region))
            if func.attr == "do":
                self._mark_callback(node)

    def _push_function(
        self,
        node: AnyFunction,
        region: Region,
        nodes: list[ast.AST],
        stack: list[tuple[list[ast.AST], Region]],
    ) -> None:
        """Defaults and decorators run where the function is defined; its body in a region."""
        inner = self._enter_function(node, region)
        outer_parts: list[ast.AST] = [*node.args.defaults]
        outer_parts += [d for d in node.args.kw_defaults if d is not None]
        if not isinstance(node, ast.Lambda):
            outer_parts += node.decorator_list
        body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else [*node.body]
        for child in (*outer_parts, *body):
            self.parents[child] = node
        nodes.extend(outer_parts)
        stack.append((body, inner))

    def _resolve(self) -> None:
        """Decide for each local def whether it is a callback, inline or opaque."""
        for _ in range(4):
            pending = False
            for name, regions in self._defs.items():
                for region in regions:
                    if region.kind != PENDING:
                        continue
                    if name in self._callback_names:
                        region.kind = CALLBACK
                        continue
                    sites = [site.where() for site in self._call_sites.get(name, ())]
                    if not sites:
                        region.kind = OPAQUE
                    elif "outside" in sites:
                        region.kind = INLINE
                    elif all(site == "inside" for site in sites):
                        region.kind = CALLBACK
                    else:
                        pending = True
            if not pending:
                break
        for region in self.regions:  # parents were created before their children
            if region.kind == PENDING:
                region.kind = OPAQUE
            parent = region.parent
            region.callback = region if region.kind == CALLBACK else (parent and parent.callback)
            region.opaque = region.kind == OPAQUE or bool(parent and parent.opaque)

    def callbacks(self) -> Iterator[Region]:
        """The regions that are step callbacks (or helpers only they call)."""
        return (region for region in self.regions if region.kind == CALLBACK)

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node containing ``node`` within the workflow function, if any."""
        return self.parents.get(node)

    def is_step_call(self, node: ast.AST) -> bool:
        """True for ``step.<method>(...)`` calls of this workflow function's step."""
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in STEP_METHODS
            and isinstance(func.value, ast.Name)
            and func.value.id == self.function.step_name
        )

    def passes_step(self, call: ast.Call) -> bool:
        """True when ``call`` hands this function's step to another function
        (``await self.ship(step, order)``), which then runs steps of its own."""
        step_name = self.function.step_name
        values = [*call.args, *(k.value for k in call.keywords)]
        return not self.is_step_call(call) and any(
            isinstance(v, ast.Name) and v.id == step_name for v in values
        )

    def runs_steps(self, statements: list[ast.stmt]) -> bool:
        """True when ``statements`` call a step, or pass the step to a function that does."""
        return any(
            isinstance(node, ast.Call) and (self.is_step_call(node) or self.passes_step(node))
            for statement in statements
            for node in walk(statement)
        )

    def in_loop(self, node: ast.AST) -> bool:
        """True when ``node`` runs once per iteration of a loop of its own function."""
        current = self.parents.get(node)
        while current is not None and not isinstance(current, _FUNCTIONS | ast.Lambda):
            if isinstance(current, _LOOPING):
                return True
            current = self.parents.get(current)
        return False

    def resolves_to_run_scope(self, name: str, region: Region) -> bool:
        """True when ``name`` used in ``region`` is a variable of the workflow function."""
        current: Region | None = region
        while current is not None:
            if current is self.run_region:
                return name in current.locals
            if name in current.locals and name not in current.declared_outer:
                return False
            current = current.parent
        return False


def step_helpers(analysis: RunAnalysis, known: set[int]) -> list[WorkflowFunction]:
    """Functions of the module this workflow code passes its step to, not yet in ``known``
    (ids of the definitions already checked as workflow code; the found ones are added)."""
    function = analysis.function
    index = analysis.facts.index
    found: list[WorkflowFunction] = []
    for call, region in analysis.calls:
        if region.opaque or not analysis.passes_step(call):
            continue
        callee = index.resolve(call, None, function.class_name, function.self_name)
        if callee is None or callee.key is None or id(callee.function) in known:
            continue
        definition = callee.function
        step = parameter_given(callee.arguments, function.step_name)
        if step is None or isinstance(definition, ast.Lambda):
            continue
        event = parameter_given(callee.arguments, function.event_name)
        class_name = callee.key[0]
        params = [*definition.args.posonlyargs, *definition.args.args]
        self_name = params[0].arg if class_name and params else None
        known.add(id(definition))
        found.append(WorkflowFunction(definition, self_name, event, step, class_name))
    return found
