"""The package map of docs/architecture.md holds: no package imports one its row does not name.

The imports are read from the source (the AST), so an import inside a function or behind
``TYPE_CHECKING`` counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "handler" / "lambda_workflows"
MAP = ROOT / "docs" / "architecture.md"
LAYERS = ("replay", "instances")  # the engine's layers below its vocabulary, a row each
ROW = re.compile(r"^\| `(?P<package>[a-z_.]+)` \| .* \| (?P<allowed>[^|]*) \|$")


def documented_map() -> dict[str, set[str]]:
    """Each package of the map's table, with the packages it may import."""
    text = MAP.read_text(encoding="utf-8").split("## The package map", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in text.splitlines():
        if match := ROW.match(line):
            named = set(re.findall(r"`([a-z_.]+)`", match["allowed"]))
            rows[match["package"]] = named
    return rows


def package_of(module: str) -> str:
    """The map's package of a dotted module name under ``lambda_workflows``."""
    parts = module.split(".")[1:]
    if not parts or not (PACKAGE / parts[0]).is_dir():
        return "lambda_workflows"
    if parts[0] == "engine" and len(parts) > 1 and parts[1] in LAYERS:
        return f"engine.{parts[1]}"
    return parts[0]


def module_name(path: Path) -> tuple[str, str]:
    """(the module's dotted name, the package its relative imports start from)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    base = name if parts[-1] == "__init__" else name.rsplit(".", 1)[0]
    return name, base


def imported(source: str, base: str) -> set[str]:
    """Every ``lambda_workflows`` module or package ``source`` imports, wherever the import
    is (``base``: the package its relative imports start from)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base.split(".")[: len(base.split(".")) - node.level + 1]
                found.add(".".join([*anchor, *([node.module] if node.module else [])]))
            else:
                found.add(node.module or "")
    return {m for m in found if m == "lambda_workflows" or m.startswith("lambda_workflows.")}


def actual_map() -> dict[str, dict[str, set[str]]]:
    """package → imported package → the modules that import it."""
    edges: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in sorted(PACKAGE.rglob("*.py")):
        name, base = module_name(path)
        source = package_of(name)
        for target in imported(path.read_text(encoding="utf-8"), base):
            if (to := package_of(target)) != source:
                edges[source][to].add(name)
    return edges


def test_every_package_has_a_row_of_the_map() -> None:
    packages = {package_of(module_name(p)[0]) for p in PACKAGE.rglob("*.py")}
    rows = documented_map()
    assert packages == set(rows), (
        f"rows missing: {packages - set(rows)}, extra: {set(rows) - packages}"
    )


def test_no_package_imports_one_its_row_does_not_name() -> None:
    rows = documented_map()
    broken = [
        f"{source} imports {target} (in {', '.join(sorted(modules))})"
        for source, targets in actual_map().items()
        for target, modules in targets.items()
        if target not in rows.get(source, set())
    ]
    assert not broken, (
        "imports the package map (docs/architecture.md) does not allow:\n" + "\n".join(broken)
    )


def test_the_map_check_sees_an_import_hidden_in_a_function_or_relative() -> None:
    # GIVEN a module of the dashboard that imports only inside a function, behind
    # TYPE_CHECKING, and relatively
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from lambda_workflows.cli import main\n"
        "def f():\n    import lambda_workflows.local.runtime\n"
        "    from ..aws import items\n"
    )
    # WHEN its imports are read the way the map check reads them
    found = {package_of(m) for m in imported(source, "lambda_workflows.dashboard")}
    # THEN every one counts, and the check would refuse the two the dashboard's row lacks
    assert found == {"cli", "local", "aws"}
    assert {"cli", "aws"}.isdisjoint(documented_map()["dashboard"])
