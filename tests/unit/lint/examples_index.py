"""Where the ported examples of the rules of Workflows are, and where their bad constructs sit."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import lambda_workflows.examples

EXAMPLES_DIR = Path(lambda_workflows.examples.__file__).parent
EXAMPLE_MODULES = sorted(
    path for path in EXAMPLES_DIR.glob("*.py") if not path.name.startswith("_")
)
_IGNORE = re.compile(r"#\s*lambda-workflows:\s*ignore\[([A-Z0-9, ]+)\]")


@dataclass(frozen=True)
class Span:
    """A top-level class or function of an example module, by line range."""

    name: str
    first: int
    last: int

    @property
    def bad(self) -> bool:
        """Bad examples are named ``Bad...`` / ``bad_...``."""
        return self.name.lower().startswith("bad")


def example_path(module: str) -> Path:
    """The file of ``examples.<module>``."""
    return EXAMPLES_DIR / f"{module}.py"


def spans(path: Path) -> list[Span]:
    """The module's top-level classes and functions."""
    tree = ast.parse(path.read_text())
    return [
        Span(node.name, node.lineno, node.end_lineno or node.lineno)
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def marked(path: Path) -> set[tuple[int, str]]:
    """``(line, rule)`` for every ``# lambda-workflows: ignore[RULE]`` comment of the module."""
    found: set[tuple[int, str]] = set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = _IGNORE.search(line)
        if match:
            found.update((number, rule.strip()) for rule in match.group(1).split(","))
    return found


def line_of(path: Path, text: str, within: str | None = None) -> int:
    """The line number of the only line containing ``text`` (inside span ``within``)."""
    span = next((s for s in spans(path) if s.name == within), None) if within else None
    hits = [
        number
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if text in line and (span is None or span.first <= number <= span.last)
    ]
    assert len(hits) == 1, f"{text!r} found on lines {hits} of {path.name}"
    return hits[0]
