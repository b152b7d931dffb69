"""WF112: a workflow class's ``schedules`` written as a literal that EventBridge Scheduler
would refuse, found before the workflow is registered (where the same check runs again)."""

from __future__ import annotations

import ast

from lambda_workflows.engine.instances.schedules import InvalidSchedule, parse_schedules

from .findings import Issue


def check_schedules(tree: ast.Module) -> list[Issue]:
    """An issue for each workflow class's ``schedules = <literal>`` that does not parse; a
    value computed at run time is left to registration."""
    issues: list[Issue] = []
    for node in _workflow_classes(tree):
        for statement in node.body:
            value = _schedules_value(statement)
            if value is None:
                continue
            try:
                literal = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue  # not a literal: registration checks it
            try:
                parse_schedules(literal)
            except InvalidSchedule as exc:
                issues.append(Issue(value, "WF112", f"class {node.name}: {exc}"))
    return issues


def _schedules_value(statement: ast.stmt) -> ast.expr | None:
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets = [statement.target]
    else:
        return None
    named = any(isinstance(t, ast.Name) and t.id == "schedules" for t in targets)
    return statement.value if named else None


def _workflow_classes(tree: ast.Module) -> list[ast.ClassDef]:
    """Classes deriving from a ``...WorkflowEntrypoint`` base, or from such a class of this
    file."""
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    found: dict[str, ast.ClassDef] = {}
    grew = True
    while grew:
        grew = False
        for node in classes:
            bases = {ast.unparse(base).rpartition(".")[2] for base in node.bases}
            if node.name not in found and ("WorkflowEntrypoint" in bases or bases & set(found)):
                found[node.name] = node
                grew = True
    return list(found.values())
