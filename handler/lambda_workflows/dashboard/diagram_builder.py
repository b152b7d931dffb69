"""Build a workflow's :class:`~.diagram.Diagram` from its source, with the linter's model.

The linter (:mod:`lambda_workflows.lint`) already knows what the diagram needs:
:func:`~lambda_workflows.lint.module_facts.collect_module` finds the workflow classes' ``run()`` and
the helpers that take the step (a parameter annotated ``WorkflowStep``), resolves imports
(``from asyncio import gather as g``) and knows which helpers race awaitables;
:class:`~lambda_workflows.lint.run_model.RunAnalysis` tells which calls are step calls on
``run()``'s own step parameter. This module walks ``run()``'s statements in order and gives each
control-flow statement that holds steps its node: ``if``/``match`` a branch, ``for``/``while``/a
comprehension a loop, ``asyncio.gather`` a parallel group, ``try`` its except paths. A helper
that takes the step, or a local function called in ``run()``, is drawn where it is called; a
``do`` step's callback, when it takes steps itself, holds them.

What cannot be seen statically is not guessed: a step call the walk did not reach (stored in a
variable, called through a dict) is listed after the rest, under "elsewhere", so none is lost.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lambda_workflows.lint.module_facts import ModuleFacts, WorkflowFunction, collect_module
from lambda_workflows.lint.run_model import RunAnalysis

from .diagram import Diagram, Node, NodeKind, Path

__all__ = ["DiagramError", "build_diagram"]

_LABEL = 72  # characters of code shown in a header; the rest is cut with "…"
_GATHER = frozenset({"asyncio.gather"})
_RACES = frozenset({"asyncio.wait", "asyncio.as_completed", "asyncio.wait_for"})
_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_LocalDef = ast.FunctionDef | ast.AsyncFunctionDef


class DiagramError(Exception):
    """The source holds no ``run()`` of the class asked for (the message says why)."""


def build_diagram(source: str | bytes, class_name: str, class_line: int = 0) -> Diagram:
    """The diagram of ``class_name``'s ``run()`` in ``source``.

    Args:
        source: a module's source.
        class_name: the workflow class (a ``...WorkflowEntrypoint`` subclass defining ``run``).
        class_line: the class's line, to tell apart two classes of that name in one file.

    Raises:
        DiagramError: the source does not parse, or has no such class with a ``run()``.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        raise DiagramError(f"the source does not parse: {exc}") from None
    facts = collect_module(tree)
    runs = [
        found
        for found in facts.workflows
        if found.class_name == class_name and found.node.name == "run"
    ]
    if not runs:
        raise DiagramError(
            f"no class {class_name} with an async def run(self, event, step) in the source"
        )
    run = min(runs, key=lambda found: (found.node.lineno < class_line, found.node.lineno))
    walker = _Walker(facts)
    nodes = walker.function(run)
    notes: tuple[str, ...] = ()
    if missed := walker.missed():
        elsewhere = (Path("", tuple(missed)),)
        nodes.append(Node(NodeKind.CALL, "elsewhere", missed[0].line, paths=elsewhere))
        notes = (
            f"{len(missed)} step call(s) are not reached by the walk of run() (stored in a "
            "variable, or called indirectly): drawn last, under 'elsewhere'",
        )
    return Diagram(class_name, run.node.lineno, tuple(nodes), notes=notes)


@dataclass
class _Scope:
    """One function being walked: its step parameter, its local functions."""

    analysis: RunAnalysis
    function: WorkflowFunction
    local_defs: dict[str, _LocalDef] = field(default_factory=dict)


class _Walker:
    """Walks workflow functions, statement by statement, into nodes."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.helpers = {(w.class_name, w.node.name): w for w in facts.workflows}
        self.scopes: list[_Scope] = []
        self.expanding: set[int] = set()  # functions being walked: a recursive call stops
        self.seen: set[int] = set()  # step calls drawn
        self.all_steps: dict[int, ast.Call] = {}

    # --- functions -------------------------------------------------------------------------

    def function(self, workflow: WorkflowFunction) -> list[Node]:
        """The nodes of a workflow function (``run()`` or a helper taking the step)."""
        analysis = RunAnalysis(workflow, self.facts)
        scope = _Scope(analysis, workflow)
        for node in ast.walk(workflow.node):
            if isinstance(node, _FUNCTION_DEFS) and node is not workflow.node:
                scope.local_defs.setdefault(node.name, node)
        for found in analysis.steps:
            if found.region.where() != "opaque":  # a def nobody calls: never runs
                self.all_steps.setdefault(id(found.call), found.call)
        self.scopes.append(scope)
        self.expanding.add(id(workflow.node))
        try:
            return self.block(workflow.node.body)
        finally:
            self.expanding.discard(id(workflow.node))
            self.scopes.pop()

    def missed(self) -> list[Node]:
        """Step calls of the walked functions that no statement led to."""
        calls = [call for key, call in self.all_steps.items() if key not in self.seen]
        ordered = sorted(calls, key=lambda c: (c.lineno, c.col_offset))
        return [self.step(call, expand=False) for call in ordered]

    @property
    def scope(self) -> _Scope:
        return self.scopes[-1]

    def local_body(self, found: _LocalDef) -> list[Node]:
        """The nodes of a local function of the function being walked."""
        self.expanding.add(id(found))
        try:
            return self.block(found.body)
        finally:
            self.expanding.discard(id(found))

    # --- statements ------------------------------------------------------------------------

    def block(self, statements: Sequence[ast.stmt]) -> list[Node]:
        nodes: list[Node] = []
        for statement in statements:
            nodes += self.statement(statement)
        return nodes

    def statement(self, node: ast.stmt) -> list[Node]:
        if isinstance(node, ast.If):
            return self.if_statement(node)
        if isinstance(node, ast.For | ast.AsyncFor):
            header = f"for {_code(node.target)} in {_code(node.iter)}"
            loop = _loop(header, node, self.block(node.body))
            return self.expr(node.iter) + loop + self.block(node.orelse)
        if isinstance(node, ast.While):
            body = self.expr(node.test) + self.block(node.body)
            return _loop(f"while {_code(node.test)}", node, body) + self.block(node.orelse)
        if isinstance(node, ast.Try | ast.TryStar):
            return self.try_statement(node)
        if isinstance(node, ast.With | ast.AsyncWith):
            items = [n for item in node.items for n in self.expr(item.context_expr)]
            return items + self.block(node.body)
        if isinstance(node, ast.Match):
            arms = [
                (f"case {_code(case.pattern)}", self.expr(case.guard) + self.block(case.body))
                for case in node.cases
            ]
            label = f"match {_code(node.subject)}"
            return self.expr(node.subject) + _branch(label, node, arms)
        if isinstance(node, _FUNCTION_DEFS):  # its body is drawn where it is called
            arguments = node.args
            made = [*node.decorator_list, *arguments.defaults, *arguments.kw_defaults]
            return [n for part in made for n in self.expr(part)]
        if isinstance(node, ast.ClassDef):
            return []
        return [n for child in ast.iter_child_nodes(node) for n in self.expr(child)]

    def if_statement(self, node: ast.If) -> list[Node]:
        arms = [(f"if {_code(node.test)}", self.block(node.body))]
        rest: list[ast.stmt] = node.orelse
        before: list[Node] = []
        while len(rest) == 1 and isinstance(rest[0], ast.If):  # elif
            elif_ = rest[0]
            before += self.expr(elif_.test)
            arms.append((f"elif {_code(elif_.test)}", self.block(elif_.body)))
            rest = elif_.orelse
        arms.append(("else", self.block(rest)))
        return self.expr(node.test) + before + _branch("if", node, arms)

    def try_statement(self, node: ast.Try | ast.TryStar) -> list[Node]:
        body = self.block(node.body)
        others = [
            (f"except {_code(h.type)}" if h.type else "except", self.block(h.body))
            for h in node.handlers
        ]
        if node.orelse:
            others.append(("else", self.block(node.orelse)))
        if node.finalbody:
            others.append(("finally", self.block(node.finalbody)))
        if not any(nodes for _, nodes in others):
            return body  # nothing but the try path takes steps: a plain sequence
        return [_container(NodeKind.TRY, "try", node, [("try", body), *others])]

    # --- expressions -----------------------------------------------------------------------

    def expr(self, node: ast.AST | None) -> list[Node]:
        """The steps an expression takes, in the order it evaluates them."""
        if node is None:
            return []
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.IfExp):
            arms = [(f"if {_code(node.test)}", self.expr(node.body))]
            arms.append(("else", self.expr(node.orelse)))
            return self.expr(node.test) + _branch("if", node, arms)
        if isinstance(node, _COMPREHENSIONS):
            return self.comprehension(node)
        if isinstance(node, ast.Lambda):
            return self.expr(node.body)
        return [n for child in ast.iter_child_nodes(node) for n in self.expr(child)]

    def comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> list[Node]:
        if isinstance(node, ast.DictComp):
            inner = self.expr(node.key) + self.expr(node.value)
        else:
            inner = self.expr(node.elt)
        first = self.expr(node.generators[0].iter)
        for generator in reversed(node.generators):
            conditions = [n for test in generator.ifs for n in self.expr(test)]
            header = f"for {_code(generator.target)} in {_code(generator.iter)}"
            header += "".join(f" if {_code(test)}" for test in generator.ifs)
            inner = _loop(header, node, conditions + inner)
        return first + inner

    def call(self, node: ast.Call) -> list[Node]:
        if self.scope.analysis.is_step_call(node):
            return [self.step(node)]
        qualified = self.facts.aliases.qualify(node.func) or ""
        arguments = [*node.args, *(k.value for k in node.keywords)]
        if qualified in _GATHER or qualified in _RACES or self.is_racing_helper(node):
            kind = NodeKind.PARALLEL if qualified in _GATHER else NodeKind.RACE
            paths = [("", self.expr(argument)) for argument in arguments]
            paths = [path for path in paths if path[1]]
            label = _code(node.func) + "(…)"
            return [_container(kind, label, node, paths)] if paths else []
        before = self.expr(node.func) + [n for a in arguments for n in self.expr(a)]
        label = _code(node.func) + "(…)"
        target = self.called_function(node)
        if target is None:
            return before
        if id(target.node if isinstance(target, WorkflowFunction) else target) in self.expanding:
            # recursion: the function's steps are drawn once, where it was first called
            return [*before, Node(NodeKind.CALL, f"{label} again", node.lineno)]
        if isinstance(target, WorkflowFunction):
            called = self.function(target)
        else:
            called = self.local_body(target)
        if not called:
            return before
        return [*before, _container(NodeKind.CALL, label, node, [("", called)])]

    def is_racing_helper(self, node: ast.Call) -> bool:
        function = self.scope.function
        key = self.facts.helper_key(node, function.class_name, function.self_name)
        return key is not None and key in self.facts.racing

    def called_function(self, node: ast.Call) -> _LocalDef | WorkflowFunction | None:
        """The function ``node`` calls when it is a local one or a helper taking the step."""
        if isinstance(node.func, ast.Name) and node.func.id in self.scope.local_defs:
            return self.scope.local_defs[node.func.id]
        function = self.scope.function
        key = self.facts.helper_key(node, function.class_name, function.self_name)
        return self.helpers.get(key) if key is not None else None

    # --- steps -----------------------------------------------------------------------------

    def step(self, node: ast.Call, *, expand: bool = True) -> Node:
        """A step node; ``expand``: with the steps its callback takes (needs its scope)."""
        self.seen.add(id(node))
        assert isinstance(node.func, ast.Attribute)
        method = node.func.attr
        positional = node.args
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        name = positional[0] if positional else keywords.get("name")
        paths: tuple[Path, ...] = ()
        detail = ""
        rollback = None
        if method == "do":
            config = positional[1] if len(positional) >= 3 else keywords.get("config")
            callback = positional[-1] if len(positional) >= 2 else keywords.get("callback")
            detail = _config(self.literal(config, node.lineno) if expand else config)
            if "rollback" in keywords:
                rollback = _callable_name(keywords["rollback"])
            inner = self.callback_steps(callback) if expand else []
            paths = (Path("inside", tuple(inner)),) if inner else ()
        elif method == "sleep":
            detail = _value(positional[1] if len(positional) > 1 else keywords.get("duration"))
        elif method == "sleep_until":
            until = positional[1] if len(positional) > 1 else keywords.get("when")
            detail = f"until {_value(until)}"
        elif method == "wait_for_event":
            detail = _event_wait(keywords)
        elif method == "run_workflow":
            child = keywords.get("workflow")
            shown = f'"{_value(child)}"' if isinstance(child, ast.Constant) else _code(child)
            detail = f"child workflow {shown}"
        return Node(NodeKind.STEP, _step_name(name), node.lineno, method, detail, rollback, paths)

    def literal(self, node: ast.expr | None, line: int) -> ast.expr | None:
        """A config passed by name: the dict literal last assigned to it before ``line``."""
        if not isinstance(node, ast.Name):
            return node
        assigned = [
            statement
            for statement in ast.walk(self.scope.function.node)
            if isinstance(statement, ast.Assign)
            and isinstance(statement.value, ast.Dict)
            and statement.lineno < line
            and any(isinstance(t, ast.Name) and t.id == node.id for t in statement.targets)
        ]
        return max(assigned, key=lambda a: a.lineno).value if assigned else node

    def callback_steps(self, callback: ast.expr | None) -> list[Node]:
        """Steps a ``do`` step's callback takes itself (a race of steps inside a step)."""
        if (
            isinstance(callback, ast.Call)
            and callback.args
            and (self.facts.aliases.qualify(callback.func) or "").endswith("partial")
        ):
            callback = callback.args[0]
        if isinstance(callback, ast.Lambda):
            return self.expr(callback.body)
        found = self.scope.local_defs.get(callback.id) if isinstance(callback, ast.Name) else None
        if found is None or id(found) in self.expanding:
            return []
        return self.local_body(found)


# --- labels ----------------------------------------------------------------------------------


def _code(node: ast.AST | None) -> str:
    """The source of ``node``, on one line and cut to :data:`_LABEL` characters."""
    if node is None:
        return ""
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= _LABEL else text[: _LABEL - 1] + "…"


def _step_name(node: ast.expr | None) -> str:
    """A step name as written: the string itself, an f-string with its ``{placeholders}``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append("{" + _code(value.value) + "}")
        return "".join(parts)
    return "{" + _code(node) + "}" if node is not None else "(no name)"


def _value(node: ast.expr | None) -> str:
    """A literal as its value (``"3 hours"`` → ``3 hours``), anything else as code."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    return _code(node)


def _callable_name(node: ast.expr) -> str:
    if isinstance(node, ast.Lambda):
        return "lambda"
    return _code(node)


def _event_wait(keywords: dict[str, ast.expr]) -> str:
    awaited = keywords.get("type")
    shown = f'"{_value(awaited)}"' if isinstance(awaited, ast.Constant) else _code(awaited)
    timeout = keywords.get("timeout")
    return f"type {shown}" + (f", timeout {_value(timeout)}" if timeout is not None else "")


def _config(node: ast.expr | None) -> str:
    """A step config in short: ``retries 4 × 5 seconds exponential, timeout 1 minute``."""
    if node is None:
        return ""
    if not isinstance(node, ast.Dict):
        return f"config {_code(node)}"
    entries = dict(_pairs(node))
    parts = []
    retries = entries.get("retries")
    if isinstance(retries, ast.Dict):
        limits = dict(_pairs(retries))
        words = [f"{_value(limits['limit'])} ×"] if "limit" in limits else []
        words += [_value(limits[k]) for k in ("delay", "backoff") if k in limits]
        parts.append("retries " + " ".join(words))
    elif retries is not None:
        parts.append(f"retries {_code(retries)}")
    if "timeout" in entries:
        parts.append(f"timeout {_value(entries['timeout'])}")
    return ", ".join(parts)


def _pairs(node: ast.Dict) -> Iterable[tuple[str, ast.expr]]:
    for key, value in zip(node.keys, node.values, strict=True):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            yield key.value, value


def _container(
    kind: NodeKind, label: str, node: ast.AST, paths: Sequence[tuple[str, list[Node]]]
) -> Node:
    line = getattr(node, "lineno", 0)
    return Node(kind, label, line, paths=tuple(Path(name, tuple(nodes)) for name, nodes in paths))


def _loop(header: str, node: ast.AST, body: list[Node]) -> list[Node]:
    """A loop node, when its body takes a step."""
    return [_container(NodeKind.LOOP, header, node, [("", body)])] if body else []


def _branch(label: str, node: ast.AST, arms: Sequence[tuple[str, list[Node]]]) -> list[Node]:
    """A branch node, when any arm takes a step (a branch without steps is not drawn)."""
    if not any(nodes for _, nodes in arms):
        return []
    return [_container(NodeKind.BRANCH, label, node, arms)]
