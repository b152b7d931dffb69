"""One pass over a module: imports, clients, helpers, workflow classes and their run() methods.

What it finds here is what the per-function checks need to know about the rest of the file:
which names are AWS/HTTP clients or workflow clients, which helper functions read the clock or
randomness (calling them outside a step is as bad as calling ``random`` directly), which
helpers race awaitables, and which functions are workflow bodies to check.
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from dataclasses import dataclass, field

from .apis import (
    CLIENT_FACTORIES,
    TIMEOUT_CONTEXTS,
    WORKFLOW_CREATE,
    ImportAliases,
    child_nodes,
    is_blocking_sleep,
    is_non_deterministic,
    url_host,
)
from .call_graph import FunctionIndex
from .process_state import ProcessState, find_process_state
from .scopes import ScopeCache

_BINDING_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
# Objects made by the standard library or builtins (loggers, locks, patterns, dicts) are local
# helpers, not services, whatever their name.
_LOCAL_ORIGINS = frozenset(sys.stdlib_module_names) | frozenset(dir(builtins))
_FUNCTIONS = ast.FunctionDef | ast.AsyncFunctionDef
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPING = _LOOPS + _COMPREHENSIONS

HelperKey = tuple[str, str]  # (class name or "", function name)


@dataclass(slots=True)
class WorkflowFunction:
    """A function whose body is workflow code: ``run()`` or a helper that takes the step.

    Attributes:
        node: the function definition.
        self_name: its ``self`` parameter, ``None`` for a module-level function.
        event_name: the parameter holding the event, if any.
        step_name: the parameter holding the step.
        class_name: the workflow class it belongs to ("" for a module-level function).
    """

    node: ast.FunctionDef | ast.AsyncFunctionDef
    self_name: str | None
    event_name: str | None
    step_name: str
    class_name: str


@dataclass(slots=True)
class ModuleFacts:
    """What the checks need to know about a module as a whole."""

    aliases: ImportAliases = field(default_factory=ImportAliases)
    clients: dict[str, str] = field(default_factory=dict)
    workflow_clients: set[str] = field(default_factory=set)
    bindings: set[str] = field(default_factory=set)
    url_constants: dict[str, str] = field(default_factory=dict)
    non_deterministic: set[HelperKey] = field(default_factory=set)
    racing: set[HelperKey] = field(default_factory=set)
    sleeping: set[HelperKey] = field(default_factory=set)
    index: FunctionIndex = field(default_factory=lambda: FunctionIndex(ast.Module([], [])))
    module_values: dict[str, ast.expr] = field(default_factory=dict)
    scopes: ScopeCache = field(default_factory=ScopeCache)
    tree: ast.Module = field(default_factory=lambda: ast.Module([], []))
    helper_calls: list[tuple[ast.Call, HelperKey, str | None]] = field(default_factory=list)
    racing_found: set[HelperKey] = field(default_factory=set)
    _state: ProcessState | None = None

    def process_state(self) -> ProcessState:
        """Module and class state that workflow code changes (worked out when first asked)."""
        if self._state is None:
            entry_points = [(w.node, (w.class_name, w.node.name)) for w in self.workflows]
            self._state = find_process_state(self.tree, self, entry_points)
        return self._state

    self_clients: dict[tuple[str, str], str] = field(default_factory=dict)
    workflows: list[WorkflowFunction] = field(default_factory=list)
    create_calls: list[tuple[ast.Call, bool]] = field(default_factory=list)

    def promote(self, found: list[WorkflowFunction]) -> None:
        """Check ``found`` (helpers that workflow code passes its step to) as workflow code.

        ``await self.ship(step, order)`` runs ``ship``'s steps as part of ``run()``: its body is
        then checked like ``run()``'s, and it is no longer classified as a helper (its clock
        reads, sleeps or races are reported where they are, inside or outside its steps).
        """
        self.workflows += found
        keys = {(w.class_name, w.node.name) for w in found}
        calls = [entry for entry in self.helper_calls if entry[1] not in keys]
        _classify_helpers(self, calls, self.racing_found - keys)
        self._state = None

    def helper_key(
        self, call: ast.Call, class_name: str, self_name: str | None
    ) -> HelperKey | None:
        """The helper a call invokes: ``helper(...)`` or ``self.helper(...)``."""
        func = call.func
        if isinstance(func, ast.Name):
            return ("", func.id)
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == self_name
        ):
            return (class_name, func.attr)
        return None


def is_workflow_class(node: ast.ClassDef) -> bool:
    """True for ``class X(WorkflowEntrypoint)`` (any base whose name ends like that)."""
    for base in node.bases:
        while isinstance(base, ast.Subscript):
            base = base.value
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        if name.endswith("WorkflowEntrypoint"):
            return True
    return False


def _annotation_name(node: ast.expr | None) -> str:
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.rpartition(".")[2]
    return ""


def workflow_function(
    node: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str
) -> WorkflowFunction | None:
    """Describe ``node`` as workflow code, or ``None`` when it is not.

    In a workflow class, ``run(self, event, step)`` is (names taken by position). Any function
    with a parameter annotated ``WorkflowStep`` is too: it is ``run()`` code moved to a helper.
    """
    params = [*node.args.posonlyargs, *node.args.args]
    is_method = bool(class_name) and not any(
        isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list
    )
    self_name = params[0].arg if is_method and params else None
    if class_name and node.name == "run" and len(params) >= 3:
        return WorkflowFunction(node, self_name, params[1].arg, params[2].arg, class_name)
    all_params = [*params, *node.args.kwonlyargs]
    kinds = {_annotation_name(p.annotation): p.arg for p in all_params}
    step = kinds.get("WorkflowStep")
    if step is None:
        return None
    return WorkflowFunction(node, self_name, kinds.get("WorkflowEvent"), step, class_name)


def is_racing_call(call: ast.Call, aliases: ImportAliases) -> bool:
    """``asyncio.wait(..., FIRST_COMPLETED / timeout=)``, ``as_completed``, ``wait_for``."""
    qualname = aliases.qualify(call.func)
    if qualname in ("asyncio.as_completed", "asyncio.wait_for"):
        return True
    if qualname != "asyncio.wait":
        return False
    for keyword in call.keywords:
        if keyword.arg == "timeout" and not (
            isinstance(keyword.value, ast.Constant) and keyword.value.value is None
        ):
            return True
        if keyword.arg == "return_when":
            value = aliases.qualify(keyword.value) or getattr(keyword.value, "value", "")
            if not str(value).endswith("ALL_COMPLETED"):
                return True
    return False


def _record_binding(facts: ModuleFacts, target: ast.expr, value: ast.expr | None) -> None:
    if not isinstance(target, ast.Name):
        return
    if value is not None:
        facts.module_values[target.id] = value
    host = url_host(value)
    if host is not None:
        facts.url_constants[target.id] = host
    if not isinstance(value, ast.Call):
        return
    qualname = facts.aliases.qualify(value.func) or ""
    if qualname in CLIENT_FACTORIES:
        facts.clients[target.id] = CLIENT_FACTORIES[qualname]
    elif qualname.rpartition(".")[2] in ("Workflow", "workflow"):
        facts.workflow_clients.add(target.id)
    if _BINDING_NAME.match(target.id) and qualname.partition(".")[0] not in _LOCAL_ORIGINS:
        facts.bindings.add(target.id)


def _module_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Top-level statements, looking into ``if``/``try`` blocks (guarded imports)."""
    found: list[ast.stmt] = []
    for statement in body:
        found.append(statement)
        if isinstance(statement, ast.If):
            found.extend(_module_statements(statement.body + statement.orelse))
        elif isinstance(statement, ast.Try):
            blocks = statement.body + statement.orelse + statement.finalbody
            for handler in statement.handlers:
                blocks += handler.body
            found.extend(_module_statements(blocks))
    return found


def collect_module(tree: ast.Module) -> ModuleFacts:
    """Walk ``tree`` once and return what the checks need to know about it.

    The bodies of workflow functions are not walked here: :class:`RunAnalysis` walks them.
    """
    facts = ModuleFacts(index=FunctionIndex(tree), tree=tree)
    helper_calls: list[tuple[ast.Call, HelperKey, str | None]] = []
    self_assigns: list[tuple[ast.Assign, str]] = []
    racing: set[HelperKey] = set()
    stack: list[tuple[ast.AST, bool, HelperKey | None, str | None]] = [(tree, False, None, None)]
    while stack:
        node, in_loop, key, self_name = stack.pop()
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in WORKFLOW_CREATE:
                facts.create_calls.append((node, in_loop))
            if key is not None:
                helper_calls.append((node, key, self_name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            facts.aliases.add(node)
        elif isinstance(node, ast.ClassDef):
            _enter_class(node, facts, stack)
            continue
        elif isinstance(node, ast.Assign) and key is not None and key[0]:
            self_assigns.append((node, key[0]))
        elif isinstance(node, ast.With | ast.AsyncWith) and key is not None:
            for item in node.items:
                expr = item.context_expr
                if isinstance(expr, ast.Call) and (
                    facts.aliases.qualify(expr.func) in TIMEOUT_CONTEXTS
                ):
                    racing.add(key)
        if isinstance(node, _FUNCTIONS | ast.Lambda):
            in_loop = False
            if isinstance(node, _FUNCTIONS) and key is None:
                key = ("", node.name)
                found = workflow_function(node, "")
                if found is not None:
                    facts.workflows.append(found)
                    continue
        looping = in_loop or isinstance(node, _LOOPING)
        stack.extend((child, looping, key, self_name) for child in child_nodes(node))
    _record_module_bindings(facts, tree)
    facts.helper_calls, facts.racing_found = helper_calls, set(racing)
    _classify_helpers(facts, helper_calls, racing)
    _record_self_clients(facts, self_assigns)
    return facts


def _record_module_bindings(facts: ModuleFacts, tree: ast.Module) -> None:
    """Module-level values: clients, URL constants, bindings (``UPPER_CASE`` objects)."""
    for statement in _module_statements(tree.body):
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                _record_binding(facts, target, statement.value)
        elif isinstance(statement, ast.AnnAssign):
            _record_binding(facts, statement.target, statement.value)
        elif isinstance(statement, ast.ImportFrom) and statement.module:
            if statement.module.partition(".")[0] in _LOCAL_ORIGINS:
                continue
            for alias in statement.names:
                local = alias.asname or alias.name
                if _BINDING_NAME.match(local):
                    facts.bindings.add(local)


def _enter_class(
    node: ast.ClassDef,
    facts: ModuleFacts,
    stack: list[tuple[ast.AST, bool, HelperKey | None, str | None]],
) -> None:
    """Queue a class body: methods get a helper key, workflow code is registered."""
    workflow = is_workflow_class(node)
    for statement in node.body:
        if isinstance(statement, _FUNCTIONS):
            found = workflow_function(statement, node.name) if workflow else None
            if found is not None:
                facts.workflows.append(found)
                continue
            params = statement.args.posonlyargs + statement.args.args
            self_name = params[0].arg if params else None
            stack.append((statement, False, (node.name, statement.name), self_name))
        else:
            stack.append((statement, False, None, None))
    for other in (*node.bases, *node.decorator_list, *node.keywords):
        stack.append((other, False, None, None))


def _classify_helpers(
    facts: ModuleFacts,
    calls: list[tuple[ast.Call, HelperKey, str | None]],
    racing: set[HelperKey],
) -> None:
    """Find helpers that read time/randomness or race awaitables (directly or via helpers)."""
    aliases = facts.aliases
    non_deterministic: set[HelperKey] = set()
    sleeping: set[HelperKey] = set()
    edges: list[tuple[HelperKey, HelperKey]] = []
    for call, key, self_name in calls:
        qualname = aliases.qualify(call.func)
        if qualname is not None and is_non_deterministic(qualname, call):
            non_deterministic.add(key)
        if is_blocking_sleep(call, aliases):
            sleeping.add(key)
        if is_racing_call(call, aliases):
            racing.add(key)
        callee = facts.helper_key(call, key[0], self_name)
        if callee is not None and callee != key:
            edges.append((key, callee))
    changed = bool(edges)
    while changed:
        changed = False
        for caller, callee in edges:
            for found in (non_deterministic, racing, sleeping):
                if callee in found and caller not in found:
                    found.add(caller)
                    changed = True
    facts.non_deterministic = non_deterministic
    facts.racing = racing
    facts.sleeping = sleeping


def parameter_given(arguments: dict[str, ast.expr], name: str | None) -> str | None:
    """The parameter that receives the variable ``name`` itself."""
    if name is None:
        return None
    return next(
        (param for param, arg in arguments.items() if isinstance(arg, ast.Name) and arg.id == name),
        None,
    )


def _record_self_clients(facts: ModuleFacts, assigns: list[tuple[ast.Assign, str]]) -> None:
    """``self.s3 = boto3.client("s3")`` in any method makes ``self.s3`` a client."""
    for assign, class_name in assigns:
        value = assign.value
        if not isinstance(value, ast.Call):
            continue
        qualname = facts.aliases.qualify(value.func) or ""
        kind = CLIENT_FACTORIES.get(qualname)
        if kind is None and qualname.rpartition(".")[2] in ("Workflow", "workflow"):
            kind = "workflow"
        if kind is None:
            continue
        for target in assign.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                facts.self_clients[(class_name, target.attr)] = kind
