"""The one thing the linter produces: a :class:`Finding` at a place in a file."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True, order=True)
class Finding:
    """A broken rule of Workflows at a place in a file.

    Attributes:
        path: the file, as given (``"<string>"`` for :func:`~lambda_workflows.lint.lint_source`).
        line: 1-based line of the offending construct.
        col: 1-based column of the offending construct.
        rule: the stable rule id, e.g. ``"WF101"``.
        severity: ``"error"`` (breaks replay) or ``"warning"`` (works, but fragile or slow).
        message: what is wrong and how to fix it.
        workflow_rule: the rule of Workflows it comes from, a key of
            :data:`~lambda_workflows.lint.RULES_OF_WORKFLOWS` (None for a file that cannot be
            parsed).
    """

    path: str
    line: int
    col: int
    rule: str
    severity: Severity
    message: str
    workflow_rule: str | None


@dataclass(frozen=True, slots=True)
class Issue:
    """What a check reports before the file name, severity and suppression are applied.

    Attributes:
        node: the offending node (gives line and column).
        rule: the rule id.
        message: what is wrong and how to fix it.
        workflow_rule: overrides the lint rule's usual rule of Workflows when the context
            says better (a random branch condition is about conditional logic).
    """

    node: ast.AST
    rule: str
    message: str
    workflow_rule: str | None = None
