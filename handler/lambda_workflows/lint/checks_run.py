"""Checks of a workflow function's body: WF101 to WF107.

Each check reads a :class:`~lambda_workflows.lint.run_model.RunAnalysis` and appends
:class:`~lambda_workflows.lint.findings.Issue` objects; none of them walks the whole function again.
"""

from __future__ import annotations

import ast

from .apis import (
    MUTATING_METHODS,
    TIMEOUT_CONTEXTS,
    is_non_deterministic,
    root_name,
    walk,
)
from .event_flow import Change, EventFlow
from .findings import Issue
from .module_facts import is_racing_call
from .run_model import Region, RunAnalysis
from .services import Services


def check_run(analysis: RunAnalysis, services: Services, flow: EventFlow) -> list[Issue]:
    """All WF101-WF107 issues of one workflow function."""
    issues: list[Issue] = []
    in_names = {id(node) for step in analysis.steps for node in walk(step.name_arg)}
    tainted = _non_determinism_outside(analysis, in_names, issues)
    _step_names(analysis, tainted, issues)
    for call, region in analysis.calls:
        if region.outside:
            effect = services.side_effect(call)
            if effect is not None:
                issues.append(Issue(call, "WF103", _side_effect_message(effect)))
    roots = _event_roots(analysis)
    _event_mutations(analysis, flow, issues)
    _state_mutations(analysis, roots, issues)
    _races(analysis, issues)
    return issues


def non_deterministic_label(analysis: RunAnalysis, call: ast.Call) -> str | None:
    """``"random.random()"``-like label when the call's value changes on replay, else None."""
    qualname = analysis.aliases.qualify(call.func)
    if qualname is not None and is_non_deterministic(qualname, call):
        return f"{qualname}()"
    function = analysis.function
    key = analysis.facts.helper_key(call, function.class_name, function.self_name)
    if key is not None and key in analysis.facts.non_deterministic:
        return f"{key[1]}() (it reads the clock or randomness)"
    return None


def _statement_of(analysis: RunAnalysis, node: ast.AST) -> tuple[ast.AST | None, bool]:
    """The statement containing ``node`` and whether ``node`` sits in a branch condition."""
    current = node
    while True:
        parent = analysis.parent(current)
        if parent is None:
            return None, False
        if isinstance(parent, ast.If | ast.While | ast.IfExp) and parent.test is current:
            return parent, True
        if isinstance(parent, ast.comprehension) and current in parent.ifs:
            return parent, True
        if isinstance(parent, ast.stmt):
            return parent, False
        current = parent


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    return [n.id for n in walk(target) if isinstance(n, ast.Name)]


def _non_determinism_outside(
    analysis: RunAnalysis, in_names: set[int], issues: list[Issue]
) -> set[str]:
    """WF102; returns the variables that hold such values (to catch them in step names)."""
    tainted: set[str] = set()
    for call, region in analysis.calls:
        if not region.outside or id(call) in in_names:
            continue
        label = non_deterministic_label(analysis, call)
        if label is None:
            continue
        statement, in_condition = _statement_of(analysis, call)
        if in_condition:
            message = (
                f"branching on {label} outside a step: a replay may take the other branch and "
                "no longer match the recorded steps; decide inside a step "
                '(`go = await step.do("decide", lambda: ...)`) and branch on its result'
            )
            issues.append(Issue(call, "WF102", message, "conditional-logic"))
        else:
            message = (
                f"{label} outside a step gives a different value each time run() is replayed; "
                f'compute it inside a step (`value = await step.do("...", lambda: ...)`) so '
                "the recorded value is reused"
            )
            issues.append(Issue(call, "WF102", message))
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                tainted.update(_target_names(target))
        elif isinstance(statement, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
            tainted.update(_target_names(statement.target))
    return tainted


def _step_names(analysis: RunAnalysis, tainted: set[str], issues: list[Issue]) -> None:
    """WF101: the name of a step changes from one replay to the next."""
    for step in analysis.steps:
        name = step.name_arg
        culprit: str | None = None
        for node in walk(name):
            if isinstance(node, ast.Call):
                culprit = non_deterministic_label(analysis, node)
            elif isinstance(node, ast.Name) and node.id in tainted:
                culprit = f"`{node.id}` (set from a non-deterministic value)"
            elif isinstance(node, ast.Name):
                culprit = _module_value_label(analysis, node)
            if culprit is not None:
                break
        if culprit is None or name is None:
            continue
        message = (
            f"step name uses {culprit}, so it differs on every replay: the recorded result is "
            "never found and the step runs again; use a fixed name and put dynamic values in "
            "the step's result or a log line inside the step"
        )
        issues.append(Issue(name, "WF101", message))


def _module_value_label(analysis: RunAnalysis, node: ast.Name) -> str | None:
    """```RUN_ID`` (set at import from uuid.uuid4())`` for a module-level name computed from the
    clock or randomness when the module was imported: each process has its own value."""
    value = analysis.facts.module_values.get(node.id)
    if value is None:
        return None
    for part in walk(value):
        if isinstance(part, ast.Call):
            qualname = analysis.aliases.qualify(part.func)
            if qualname is not None and is_non_deterministic(qualname, part):
                scopes = analysis.facts.scopes.get(analysis.function.node)
                if scopes.binding(node.id, node) is None:
                    return f"`{node.id}` (set at import from {qualname}(), once per process)"
    return None


def _side_effect_message(effect: str) -> str:
    return (
        f"{effect} in run() outside a step, so it is repeated every time run() is replayed; "
        'move it into a step callback (`await step.do("...", callback)`), which runs until it '
        "succeeds once and is then replayed from its recorded result"
    )


def _event_roots(analysis: RunAnalysis) -> set[str]:
    """The event parameter and the variables that alias it or a part of it."""
    event = analysis.function.event_name
    if event is None:
        return set()
    roots = {event}
    for statement, _region in analysis.stores:
        if not isinstance(statement, ast.Assign):
            continue
        value = statement.value
        aliasing = isinstance(value, ast.Name | ast.Attribute | ast.Subscript)
        if aliasing and root_name(value) == event:
            roots.update(t.id for t in statement.targets if isinstance(t, ast.Name))
    return roots


def _store_targets(statement: ast.stmt) -> list[ast.expr]:
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AugAssign | ast.AnnAssign):
        targets = [statement.target]
    elif isinstance(statement, ast.Delete):
        targets = statement.targets
    else:
        return []
    found: list[ast.expr] = []
    for target in targets:
        while isinstance(target, ast.Starred):
            target = target.value
        if isinstance(target, ast.Tuple | ast.List):
            found.extend(target.elts)
        else:
            found.append(target)
    return found


def _is_event(analysis: RunAnalysis, node: ast.expr, roots: set[str], region: Region) -> bool:
    name = root_name(node)
    return name in roots and analysis.resolves_to_run_scope(name, region)


def _event_mutations(analysis: RunAnalysis, flow: EventFlow, issues: list[Issue]) -> None:
    """WF105: changes to the event, here or in a helper of the module it is passed to."""
    function = analysis.function
    event = function.event_name
    if event is None:
        return
    own_events = {(id(w.node), w.event_name) for w in analysis.facts.workflows}
    for change in flow.changes(function.node, {event}, function.class_name, function.self_name):
        if change.via is None:
            message = _EVENT_RULE
        elif _reports_itself(analysis, change, own_events):
            continue
        else:
            message = (
                f"{change.via} changes the event passed to it (line {change.line}); " + _EVENT_RULE
            )
        issues.append(Issue(change.node, "WF105", message))


def _reports_itself(
    analysis: RunAnalysis, change: Change, own_events: set[tuple[int, str | None]]
) -> bool:
    """A helper that is workflow code with the event as its own event parameter is checked on
    its own: its changes are reported where they are, not again at each call."""
    call = change.node
    if not isinstance(call, ast.Call):
        return False
    function = analysis.function
    callee = analysis.facts.index.resolve(call, None, function.class_name, function.self_name)
    if callee is None:
        return False
    return any(
        (id(callee.function), param) in own_events
        for param, arg in callee.arguments.items()
        if isinstance(arg, ast.Name) and arg.id == function.event_name
    )


_EVENT_RULE = (
    "the event is read-only: changing it raises EventMutationError at run time, and a change "
    "would not be kept anyway (a replay sees the original event); copy what you need "
    "(copy.deepcopy(event.payload)) or return the new value from a step and use its result"
)


def _state_message(name: str) -> str:
    return (
        f"this step callback changes `{name}`, which lives outside the step: the change is "
        "lost when the workflow resumes in a new invocation (only step results are kept). "
        f"Return the value from the step and build `{name}` from step results instead"
    )


def _state_mutations(analysis: RunAnalysis, roots: set[str], issues: list[Issue]) -> None:
    """WF106: a step callback changes a variable of run() or an attribute of self."""
    self_name = analysis.function.self_name
    for statement, region in analysis.stores:
        if region.callback is None or region.opaque:
            continue
        for target in _store_targets(statement):
            if isinstance(target, ast.Name):
                if target.id in region.declared_outer:
                    issues.append(Issue(target, "WF106", _state_message(target.id)))
                continue
            name = root_name(target)
            if name is None or name in roots:
                continue
            if name == self_name or analysis.resolves_to_run_scope(name, region):
                issues.append(Issue(target, "WF106", _state_message(name)))
    for call, region in analysis.calls:
        if region.callback is None or region.opaque:
            continue
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in MUTATING_METHODS:
            continue
        name = root_name(func.value)
        if name is None or name in roots or name == self_name:
            continue
        if analysis.resolves_to_run_scope(name, region) or name in region.declared_outer:
            issues.append(Issue(call, "WF106", _state_message(name)))


def _races(analysis: RunAnalysis, issues: list[Issue]) -> None:
    """WF107: a race between steps (or a step and a timer) outside a step callback."""
    message = (
        "{what} outside a step: which side wins can change on replay, so the workflow may "
        "follow a different path than the one recorded; wrap the race in its own step "
        '(`winner = await step.do("race", race)`) or use the step\'s "timeout" config'
    )
    function = analysis.function
    for call, region in analysis.calls:
        if not region.outside:
            continue
        if is_racing_call(call, analysis.aliases):
            what = f"{analysis.aliases.qualify(call.func)}() races awaitables"
        else:
            key = analysis.facts.helper_key(call, function.class_name, function.self_name)
            if key is None or key not in analysis.facts.racing:
                continue
            what = f"{key[1]}() races awaitables"
        issues.append(Issue(call, "WF107", message.format(what=what)))
    for with_node, region in analysis.withs:
        if not region.outside:
            continue
        for item in with_node.items:
            expr = item.context_expr
            if not isinstance(expr, ast.Call):
                continue
            qualname = analysis.aliases.qualify(expr.func)
            if qualname in TIMEOUT_CONTEXTS and analysis.runs_steps(with_node.body):
                what = f"{qualname}() around a step races it against a timer"
                issues.append(Issue(expr, "WF107", message.format(what=what)))
