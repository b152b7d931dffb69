"""One composition root: the library's modules import each other without a cycle, nothing but
the Lambda process's own factory picks a process-wide runtime, and every entrypoint takes the
runtime it works on."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import lambda_workflows

HANDLER = Path(lambda_workflows.__file__).resolve().parents[1]
PACKAGE = HANDLER / "lambda_workflows"
ENTRYPOINTS = ("api", "runner", "trigger", "sweep")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(HANDLER).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, name: str) -> Iterator[str]:
    """Every module (or module attribute) ``path`` imports, at any depth, at run time: imports
    inside functions count, imports under ``if TYPE_CHECKING:`` do not."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            yield target
            yield from (f"{target}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {
        name: {t for t in imported(path, name) if t in modules and t != name}
        for name, path in modules.items()
    }


def cycle_through(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """A path of imports from ``start`` back to itself, if there is one."""
    pending = [(start, [start])]
    seen: set[str] = set()
    while pending:
        name, path = pending.pop()
        for target in sorted(graph[name]):
            if target == start:
                return [*path, start]
            if target not in seen:
                seen.add(target)
                pending.append((target, [*path, target]))
    return None


def test_no_module_of_the_library_imports_one_that_imports_it_back() -> None:
    # GIVEN every import in handler/lambda_workflows, deferred ones (inside functions) included
    graph = import_graph()
    assert "lambda_workflows.client" in graph and "lambda_workflows.aws.runtime" in graph
    # THEN no module reaches itself again
    cycles = [cycle for name in sorted(graph) if (cycle := cycle_through(graph, name))]
    assert not cycles, f"import cycles: {[' -> '.join(cycle) for cycle in cycles]}"


def test_the_cycle_check_finds_a_deferred_import_back(tmp_path: Path) -> None:
    # GIVEN two modules where one imports the other only inside a function
    graph = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    # THEN the cycle is found from either end, and a module outside it has none
    assert cycle_through(graph, "a") == ["a", "b", "a"]
    assert cycle_through(graph, "c") is None
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import typed_only\n"
        "def f():\n    import deferred\n"
    )
    assert set(imported(source, "mod")) == {"typing", "typing.TYPE_CHECKING", "deferred"}


def test_nothing_swaps_the_process_runtime_under_a_handler() -> None:
    # The local runtime, the test kit and the simulation hand their runtime to make_handler;
    # the process's runtime is only ever the one get_runtime builds from the environment.
    from lambda_workflows.aws import runtime

    assert not hasattr(runtime, "set_runtime")
    users = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "set_runtime" in path.read_text(encoding="utf-8")
    ]
    assert users == []


@pytest.mark.parametrize("entrypoint", ENTRYPOINTS)
def test_each_entrypoint_takes_the_runtime_it_works_on(entrypoint: str) -> None:
    module = importlib.import_module(f"lambda_workflows.entrypoints.{entrypoint}")
    assert callable(module.make_handler)
    assert callable(module.handler)  # make_handler(get_runtime): what template.yaml names


def test_a_module_name_says_its_role_once() -> None:
    # Two modules of one name made readers guess which was meant: the Lambda handler and the
    # engine's advance (runner.py), the step timeline and its text (timeline.py), the embedded
    # AWS and the adapters (local/aws.py reads like lambda_workflows.aws).
    names = {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")}
    assert {"entrypoints/runner.py", "engine/instances/advance.py"} <= names
    assert "engine/instances/runner.py" not in names
    assert {
        "engine/instances/timeline.py",
        "text_timeline.py",
    } <= names and "timeline.py" not in names
    assert "local/embedded.py" in names and "local/aws.py" not in names
    from lambda_workflows.entrypoints import api_models

    assert not {"NewInstance", "BatchResult"} & set(api_models.__all__)
