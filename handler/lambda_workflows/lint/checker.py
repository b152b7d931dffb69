"""Linting a source text or files: parse, run the checks, apply suppressions, sort."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

from .checks_await import check_awaits
from .checks_clients import check_clients
from .checks_control import check_control
from .checks_names import check_names
from .checks_run import check_run
from .checks_schedules import check_schedules
from .checks_step import check_steps
from .event_flow import EventFlow
from .files import read_source, select_files
from .findings import Finding, Issue
from .module_facts import ModuleFacts, WorkflowFunction, collect_module
from .parallel import default_jobs, map_in_processes
from .rules import RULES
from .run_model import RunAnalysis, step_helpers
from .services import Services
from .suppression import is_suppressed

# Files mentioning none of these cannot break a rule of Workflows: they are only parsed (a
# syntax error is reported in every file), not checked.
_MARKERS = ("WorkflowEntrypoint", "WorkflowStep", "create")


def lint_source(
    source: str, filename: str = "<string>", *, honor_ignores: bool = True
) -> list[Finding]:
    """Check one module's source text against the rules of Workflows.

    Args:
        source: the module's text.
        filename: the path reported in findings.
        honor_ignores: apply ``# lambda-workflows: ignore[...]`` comments (False reports
        everything).

    Returns:
        The findings, sorted by line and column. A source that does not parse gives one WF100
        finding, whatever its comments say and whether or not ignores are honoured.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as error:
        line, col = error.lineno or 1, error.offset or 1
        message = f"cannot parse the file ({error.msg}); fix the syntax error first"
        return [_finding(filename, line, col, Issue(ast.Pass(), "WF100", message))]
    except ValueError as error:  # e.g. a NUL byte in the source
        message = f"cannot parse the file ({error}); fix the file first"
        return [_finding(filename, 1, 1, Issue(ast.Pass(), "WF100", message))]
    if not any(marker in source for marker in _MARKERS):
        return []
    issues = _check_tree(tree)
    lines = source.splitlines()
    findings: set[Finding] = set()
    for issue in issues:
        line = getattr(issue.node, "lineno", 1)
        col = getattr(issue.node, "col_offset", 0) + 1
        if honor_ignores and 0 < line <= len(lines) and is_suppressed(issue.rule, lines[line - 1]):
            continue
        findings.add(_finding(filename, line, col, issue))
    return sorted(findings)


def _check_tree(tree: ast.Module) -> list[Issue]:
    facts = collect_module(tree)
    flow = EventFlow(facts.index, facts.aliases, facts.scopes)
    issues: list[Issue] = []
    for analysis in _analyses(facts):
        facts.scopes.adopt(analysis.function.node, analysis.parents)
        services = Services(analysis)
        issues += check_run(analysis, services, flow)
        issues += check_steps(analysis, services)
        issues += check_control(analysis)
        issues += check_awaits(analysis)
        issues += check_names(analysis)
        facts.create_calls += [(c, analysis.in_loop(c)) for c in analysis.create_calls]
    issues += check_clients(facts)
    issues += check_schedules(tree)
    return issues


def _analyses(facts: ModuleFacts) -> list[RunAnalysis]:
    """The workflow functions of the module, and the helpers they pass their step to (at any
    depth), each analysed once."""
    known = {id(w.node) for w in facts.workflows}
    analyses = [RunAnalysis(function, facts) for function in facts.workflows]
    pending = list(analyses)
    promoted: list[WorkflowFunction] = []
    while pending:
        found = step_helpers(pending.pop(), known)
        promoted += found
        new = [RunAnalysis(function, facts) for function in found]
        pending += new
        analyses += new
    if promoted:
        facts.promote(promoted)
    return analyses


def _finding(path: str, line: int, col: int, issue: Issue) -> Finding:
    rule = RULES[issue.rule]
    return Finding(
        path=path,
        line=line,
        col=col,
        rule=rule.id,
        severity=rule.severity,
        message=issue.message,
        workflow_rule=issue.workflow_rule or rule.workflow_rule,
    )


def lint_paths(
    paths: Sequence[str | Path], *, honor_ignores: bool = True, jobs: int | None = None
) -> list[Finding]:
    """Lint files and directories (walked recursively for ``*.py``); files given that are not
    Python are skipped (see :mod:`.files`).

    Args:
        paths: files and directories.
        honor_ignores: apply ``# lambda-workflows: ignore[...]`` comments.
        jobs: worker processes; ``None`` picks by CPU count and file count, 1 is serial.

    Returns:
        The findings of all files, sorted by path, line and column.

    Raises:
        OSError: a path does not exist or a file cannot be read.
    """
    files = select_files(paths).files  # every path is checked before any file is read
    workers = default_jobs(len(files)) if jobs is None else jobs
    chunk_lint = _lint_honoring_ignores if honor_ignores else _lint_reporting_all
    findings = map_in_processes(chunk_lint, files, workers)
    if findings is None:
        findings = _lint_files(files, honor_ignores)
    return sorted(findings)


def _lint_files(files: Sequence[Path], honor_ignores: bool) -> list[Finding]:
    findings: list[Finding] = []
    for path in files:
        try:
            source = read_source(path)
        except (SyntaxError, UnicodeDecodeError) as error:
            message = f"cannot decode the file ({error}); save it as UTF-8"
            issue = Issue(ast.Pass(), "WF100", message)
            findings.append(_finding(str(path), 1, 1, issue))
            continue
        findings += lint_source(source, str(path), honor_ignores=honor_ignores)
    return findings


def _lint_honoring_ignores(files: list[Path]) -> list[Finding]:
    return _lint_files(files, honor_ignores=True)


def _lint_reporting_all(files: list[Path]) -> list[Finding]:
    return _lint_files(files, honor_ignores=False)
