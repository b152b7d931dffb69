"""``lambda-workflows layer`` (the engine the functions run, without the examples or the
project starter) and the local commands reading a project's template for its workflows."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import pytest

import lambda_workflows
from lambda_workflows.cli import main
from lambda_workflows.cli.project import use_project_workflows
from lambda_workflows.starter import init_project
from lambda_workflows.starter.layer import LOCAL_ONLY, build_layer, runtime_requirements

ROOT = Path(__file__).resolve().parents[2]


def test_the_layer_holds_the_engine_without_its_examples_or_the_starter(tmp_path: Path) -> None:
    # WHEN the layer is built without pip (the engine's own files only)
    site = build_layer(tmp_path, install_dependencies=False)
    # THEN python/lambda_workflows is the package, minus examples/ and starter/
    assert site == tmp_path / "python"
    package = Path(lambda_workflows.__file__).parent
    copied = site / "lambda_workflows"
    assert (copied / "entrypoints" / "api.py").read_bytes() == (
        package / "entrypoints" / "api.py"
    ).read_bytes()
    assert not (copied / "examples").exists() and not (copied / "starter").exists()
    assert (package / "examples").is_dir()  # it was there to leave out
    # AND it is compiled for the functions' Python when that is this one
    if sys.version_info[:2] == (3, 11):
        assert list((copied / "engine" / "replay" / "__pycache__").glob("core.cpython-311.pyc"))


def test_the_layer_installs_the_runtime_dependencies_the_distribution_declares() -> None:
    # GIVEN the engine's declared dependencies (pyproject.toml)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {d.split("[")[0].split(">")[0].split("<")[0].split("=")[0] for d in declared}
    # THEN the layer takes each one but the local tooling, and none of that
    wanted = {
        r.split("[")[0].split(">")[0].split("<")[0].split("=")[0] for r in runtime_requirements()
    }
    assert wanted == {n for n in names if n.lower() not in LOCAL_ONLY}
    assert wanted == {"aws-lambda-powertools", "pydantic"}


def test_an_unknown_architecture_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Lambda has"):
        build_layer(tmp_path, architecture="sparc", install_dependencies=False)
    assert not (tmp_path / "python").exists()


def test_the_layer_command_writes_the_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["layer", str(tmp_path), "--no-dependencies"]) == 0
    assert (tmp_path / "python" / "lambda_workflows" / "entrypoints" / "runner.py").is_file()
    assert f"the engine's layer is in {tmp_path / 'python'}" in capsys.readouterr().err


def test_in_a_project_folder_the_templates_workflows_are_registered_from_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a project, and WORKFLOWS unset
    init_project(tmp_path / "proj", "project-defaults")
    monkeypatch.delenv("WORKFLOWS", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    # WHEN a command starts in its folder
    spec = use_project_workflows(tmp_path / "proj")
    # THEN WORKFLOWS is the template's default and its code root is importable
    assert spec == os.environ["WORKFLOWS"] == "hello=project_defaults.workflows:HelloWorkflow"
    assert sys.path[0] == str((tmp_path / "proj" / "src").resolve())
    from lambda_workflows.registry import load_workflows

    assert load_workflows()["hello"].__module__ == "project_defaults.workflows"


def test_workflows_when_set_wins_over_the_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    init_project(tmp_path / "proj", "project-set")
    monkeypatch.setenv("WORKFLOWS", "")
    assert use_project_workflows(tmp_path / "proj") is None
    assert os.environ["WORKFLOWS"] == ""


def test_this_repositorys_template_registers_nothing_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WORKFLOWS", raising=False)
    assert use_project_workflows(ROOT) is None
    assert "WORKFLOWS" not in os.environ
