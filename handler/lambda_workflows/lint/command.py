"""``lambda-workflows lint PATH... [--format text|json] [--no-ignore]``.

Findings go to stdout, one line each (or a JSON list), then a one-line summary: on stdout when
there is nothing to report (``checked 3 files, no problems``), else on stderr. In JSON the
summary always goes to stderr, so stdout stays one JSON document. A file given by name that is
not Python is skipped with a note on stderr.

Exit status: 0 when nothing is found, 1 when any finding (error or warning) is printed, 2 on
bad usage or a path that cannot be read.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .checker import lint_paths
from .files import select_files
from .report import format_json, format_text, summary
from .rules import RULES, RULES_OF_WORKFLOWS_URL

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
_SUPPRESS_HINT = "Silence a finding with `# lambda-workflows: ignore[WF1xx]` on its line."
_EXAMPLES = """examples:
  lambda-workflows lint handler/                  every .py file under handler/
  lambda-workflows lint orders.py --format json   findings as JSON, for tools
  lambda-workflows lint src/ --no-ignore          findings on suppressed lines too"""
_RULES_HINT = f"Each finding names the rule of Workflows it breaks: {RULES_OF_WORKFLOWS_URL}"


def _parser() -> argparse.ArgumentParser:
    rules = "\n".join(f"  {r.id}  {r.severity:<7}  {r.title}" for r in RULES.values())
    parser = argparse.ArgumentParser(
        prog="lambda-workflows lint",
        description="Check workflow code against the rules of Workflows.",
        epilog=f"rules:\n{rules}\n\n{_RULES_HINT}\n{_SUPPRESS_HINT}\n\n{_EXAMPLES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or directories to check (default: the functions' code, template.yaml's "
        "CodeUri, in a project folder; else .)",
    )
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default text)"
    )
    parser.add_argument(
        "--no-ignore",
        action="store_true",
        help="report findings even on lines with a `# lambda-workflows: ignore` comment",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the linter as a command and return its exit status.

    Args:
        argv: the arguments after ``lambda-workflows lint`` (``sys.argv[1:]`` when None).

    Returns:
        0 clean, 1 findings, 2 bad usage or unreadable path.
    """
    try:
        options = _parser().parse_args(argv)
    except SystemExit as exit_:  # argparse has printed the usage and the error
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        selection = select_files(options.paths or [_default_path()])
        findings = lint_paths(selection.files, honor_ignores=not options.no_ignore)
    except OSError as error:
        print(f"lambda-workflows lint: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    for path in selection.skipped:
        print(f"lambda-workflows lint: skipped {path}: not a Python file", file=sys.stderr)
    if options.format == "json":
        print(format_json(findings), flush=True)
    elif findings:
        print(format_text(findings), flush=True)
    clean = not findings and options.format == "text"
    print(summary(findings, len(selection.files)), file=sys.stdout if clean else sys.stderr)
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def _default_path() -> str:
    """The code to check when no path is given: a project's (its template's ``CodeUri``), or
    the current folder."""
    template = Path("template.yaml")
    if template.is_file():
        from lambda_workflows.infra.template import code_root, load_template

        try:
            code = code_root(load_template(template), Path())
        except (OSError, ValueError):
            return "."
        if code is not None and code.is_dir():
            return os.path.relpath(code)
    return "."
