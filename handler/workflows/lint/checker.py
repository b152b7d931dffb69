"""Linting a source text or files: parse, run the checks, apply suppressions, sort."""

from __future__ import annotations

import ast
import os
import tokenize
from collections.abc import Iterator, Sequence
from pathlib import Path

from .checks_clients import check_clients
from .checks_run import check_run
from .checks_step import check_steps
from .findings import Finding, Issue
from .module_facts import collect_module
from .parallel import default_jobs, map_in_processes
from .rules import RULES
from .run_model import RunAnalysis
from .services import Services
from .suppression import is_suppressed

# Files mentioning none of these cannot break a rule, so they are not even parsed.
_MARKERS = ("WorkflowEntrypoint", "WorkflowStep", "create")
_SKIPPED_DIRECTORIES = frozenset({"__pycache__", "node_modules", "site-packages"})


def lint_source(
    source: str, filename: str = "<string>", *, honor_ignores: bool = True
) -> list[Finding]:
    """Check one module's source text against the rules of Workflows.

    Args:
        source: the module's text.
        filename: the path reported in findings.
        honor_ignores: apply ``# workflows: ignore[...]`` comments (False reports everything).

    Returns:
        The findings, sorted by line and column.
    """
    if not any(marker in source for marker in _MARKERS):
        return []
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as error:
        line, col = error.lineno or 1, error.offset or 1
        message = f"cannot parse the file ({error.msg}); fix the syntax error first"
        return [_finding(filename, line, col, Issue(ast.Pass(), "WF100", message))]
    except ValueError as error:  # e.g. a NUL byte in the source
        message = f"cannot parse the file ({error}); fix the file first"
        return [_finding(filename, 1, 1, Issue(ast.Pass(), "WF100", message))]
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
    issues: list[Issue] = []
    for function in facts.workflows:
        analysis = RunAnalysis(function, facts)
        services = Services(analysis)
        issues += check_run(analysis, services)
        issues += check_steps(analysis, services)
        facts.create_calls += [(c, analysis.in_loop(c)) for c in analysis.create_calls]
    issues += check_clients(facts)
    return issues


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


def iter_python_files(paths: Sequence[str | Path]) -> Iterator[Path]:
    """The files to lint: each file given, and every ``*.py`` under each directory given.

    Hidden directories, ``__pycache__``, ``node_modules`` and virtualenvs are skipped.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    for given in paths:
        path = Path(given)
        if path.is_dir():
            yield from _walk_directory(path)
        elif path.exists():
            yield path
        else:
            raise FileNotFoundError(f"no such file or directory: {given}")


def _walk_directory(top: Path) -> Iterator[Path]:
    for directory, subdirectories, files in os.walk(top):
        subdirectories[:] = sorted(
            name
            for name in subdirectories
            if not name.startswith(".")
            and name not in _SKIPPED_DIRECTORIES
            and not os.path.exists(os.path.join(directory, name, "pyvenv.cfg"))
        )
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(directory, name)


def read_source(path: Path) -> str:
    """The text of a Python file, decoded as Python does (PEP 263 encoding cookie).

    Raises:
        OSError: the file cannot be read.
        SyntaxError: the bytes cannot be decoded (reported as WF100 by :func:`lint_paths`).
    """
    with tokenize.open(path) as handle:
        return handle.read()


def lint_paths(
    paths: Sequence[str | Path], *, honor_ignores: bool = True, jobs: int | None = None
) -> list[Finding]:
    """Lint files and directories (walked recursively for ``*.py``).

    Args:
        paths: files and directories.
        honor_ignores: apply ``# workflows: ignore[...]`` comments.
        jobs: worker processes; ``None`` picks by CPU count and file count, 1 is serial.

    Returns:
        The findings of all files, sorted by path, line and column.

    Raises:
        OSError: a path does not exist or a file cannot be read.
    """
    files = list(iter_python_files(paths))  # every path is checked before any file is read
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
