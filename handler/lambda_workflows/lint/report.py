"""Rendering findings: one line per finding for people, a JSON list for tools."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict

from .findings import Finding
from .rules import rule_of_workflows


def format_text(findings: Sequence[Finding]) -> str:
    """One line per finding, ending with the rule of Workflows it comes from.

    ``file:line:col: RULE severity: message (rules of Workflows: name steps deterministically)``
    """
    return "\n".join(_line(f) for f in findings)


def _line(f: Finding) -> str:
    line = f"{f.path}:{f.line}:{f.col}: {f.rule} {f.severity}: {f.message}"
    if f.workflow_rule is None:
        return line
    return f"{line} (rules of Workflows: {rule_of_workflows(f.workflow_rule)})"


def format_json(findings: Sequence[Finding]) -> str:
    """A JSON list of objects with the fields of :class:`~lambda_workflows.lint.Finding`."""
    return json.dumps([asdict(f) for f in findings], indent=2, ensure_ascii=False)


def summary(findings: Sequence[Finding], files: int | None = None) -> str:
    """``"checked 3 files, no problems"``, ``"checked 3 files, 3 problems (2 errors, 1
    warning)"``; without ``files``, only the problems: ``"3 problems (2 errors, 1 warning)"``."""
    if not findings:
        problems = "no problems"
    else:
        errors = sum(1 for f in findings if f.severity == "error")
        warnings = len(findings) - errors
        problems = (
            f"{_count(len(findings), 'problem')} ({_count(errors, 'error')}, "
            f"{_count(warnings, 'warning')})"
        )
    return problems if files is None else f"checked {_count(files, 'file')}, {problems}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"
