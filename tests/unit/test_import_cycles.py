"""No import cycle in ``handler/lambda_workflows``, not even behind ``TYPE_CHECKING``.

Two modules that import each other are one module split in two files: neither can be read,
tested or replaced without the other, and which one loads first decides what works. The graph
is read from the source (every ``import`` and ``from ... import``, at module level, inside
functions and under ``if TYPE_CHECKING:``, relative or absolute; ``from package import module``
imports the module). An import by name in a string (``importlib.import_module``) is not seen.

A cycle is reported as its strongly connected component: the modules that all reach one
another through imports. None is left (ALLOWED_CYCLES is empty, and stays so).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "handler"
PACKAGE = "lambda_workflows"

# Cycles still to break, each as the set of modules it joins. None is left: never add one.
ALLOWED_CYCLES: frozenset[frozenset[str]] = frozenset()


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` under ``root``, by dotted name (a package by its own)."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imported_names(module: str, path: Path) -> Iterator[str]:
    """Every dotted name ``module``'s source imports, or may import (``from a import b``: both
    ``a`` and ``a.b``), wherever the import statement is."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, is_package, node.level, node.module)
            yield target
            yield from (f"{target}.{alias.name}" for alias in node.names)


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of ``from <level dots><name> import ...`` written in ``module``."""
    if level == 0:
        return name or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    base = parts[: len(parts) - level + 1]
    return ".".join(base + ([name] if name else []))


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of ``package`` it imports."""
    found = modules(root, package)
    return {
        module: {name for name in imported_names(module, path) if name in found and name != module}
        for module, path in found.items()
    }


def cycles(graph: Mapping[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph.get(module, ())):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = set()
            while not component or module not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.add(frozenset(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def describe(component: frozenset[str], graph: Mapping[str, set[str]]) -> str:
    """A cycle's modules, each with the modules of the cycle it imports."""
    return "\n".join(
        f"  {module} -> {', '.join(sorted(graph[module] & component))}"
        for module in sorted(component)
    )


def test_no_module_of_the_package_is_in_an_import_cycle() -> None:
    graph = import_graph(ROOT, PACKAGE)
    assert len(graph) > 100, "handler/lambda_workflows not found from the tests folder?"
    new = [c for c in cycles(graph) if not any(c <= allowed for allowed in ALLOWED_CYCLES)]
    assert not new, "import cycles; break them (a protocol both sides import, or move the " + (
        "shared types down a layer):\n" + "\n\n".join(describe(c, graph) for c in new)
    )


def test_the_allowed_cycles_are_still_cycles_as_listed() -> None:
    # a cycle broken, or with fewer modules, is taken off or shrunk, so that it stays broken
    found = cycles(import_graph(ROOT, PACKAGE))
    stale = [sorted(allowed) for allowed in ALLOWED_CYCLES if allowed not in found]
    assert not stale, f"shrink ALLOWED_CYCLES to the cycles found: {sorted(map(sorted, found))}"


def write(root: Path, files: Mapping[str, str]) -> None:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)


def test_an_import_under_type_checking_or_inside_a_function_closes_a_cycle(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "import typing\nif typing.TYPE_CHECKING:\n    from .b import B\n",
            "pkg/b.py": "def f():\n    from pkg.a import A\n",
            "pkg/c.py": "import pkg.d\n",
            "pkg/d.py": "x = 1\n",
        },
    )
    assert cycles(import_graph(tmp_path, "pkg")) == {frozenset({"pkg.a", "pkg.b"})}


def test_importing_a_module_from_its_package_counts_and_relative_levels_resolve(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "from . import sub\n",
            "pkg/sub/__init__.py": "from .. import top\n",
            "pkg/top.py": "from pkg.sub import leaf\n",
            "pkg/sub/leaf.py": "from ..top import x\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph == {
        "pkg": {"pkg.sub"},
        "pkg.sub": {"pkg", "pkg.top"},
        "pkg.top": {"pkg.sub", "pkg.sub.leaf"},
        "pkg.sub.leaf": {"pkg.top"},
    }
    assert cycles(graph) == {frozenset({"pkg", "pkg.sub", "pkg.top", "pkg.sub.leaf"})}
