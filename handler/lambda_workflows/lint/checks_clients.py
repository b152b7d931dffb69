"""Checks of how a file creates workflow instances, anywhere in it: WF110 and WF111.

These rules of Workflows ("Batch multiple Workflow invocations", "Instance IDs are unique")
are about the code that *starts* workflows (an API handler, a trigger), so they look at
every ``.create(...)`` on a workflow client in the file, not only in ``run()``.
"""

from __future__ import annotations

import ast
import re

from .findings import Issue
from .module_facts import ModuleFacts
from .services import is_workflow_client

# A bare per-entity identifier: user_id, customerId, account, email, get_user_id(...).
_ENTITY_ID = re.compile(r"(user|customer|account|tenant|merchant|member|email|username)(id)?$")


def check_clients(facts: ModuleFacts) -> list[Issue]:
    """All WF110 and WF111 issues of a module."""
    issues: list[Issue] = []
    for call, in_loop in facts.create_calls:
        func = call.func
        if not isinstance(func, ast.Attribute):
            continue
        receiver = func.value
        self_name = "self" if _rooted_at(receiver, "self") else None
        if not is_workflow_client(receiver, facts.workflow_clients, self_name):
            continue
        if func.attr == "create" and in_loop:
            message = (
                "instances are created one at a time in a loop, which hits the creation rate "
                "limit sooner; collect them and call .create_batch([...]) once per 100"
            )
            issues.append(Issue(call, "WF110", message))
        if func.attr == "create":
            _entity_id(call, issues)
    return issues


def _rooted_at(node: ast.expr, name: str) -> bool:
    while isinstance(node, ast.Attribute | ast.Call):
        node = node.value if isinstance(node, ast.Attribute) else node.func
    return isinstance(node, ast.Name) and node.id == name


def _identifier(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
    if isinstance(node, ast.Call):
        return _identifier(node.func)
    return None


def _entity_id(call: ast.Call, issues: list[Issue]) -> None:
    """WF111: ``create(id=user_id)``, an id that the next instance for that user reuses."""
    given = call.args[0] if call.args else None
    for keyword in call.keywords:
        if keyword.arg in ("id", "instance_id"):
            given = keyword.value
    if given is None:
        return
    identifier = _identifier(given)
    if identifier is None or not _ENTITY_ID.search(identifier.lower().replace("_", "")):
        return
    message = (
        f"instance id `{identifier}` identifies a user/customer, not this run: the next "
        "instance for the same entity gets the same id and is refused; use a unique id "
        '(an order or transaction id, or f"{user_id}-{uuid4().hex[:6]}") and store the '
        "mapping if you need to find instances by user"
    )
    issues.append(Issue(given, "WF111", message))
