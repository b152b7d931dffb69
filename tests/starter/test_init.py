"""``lambda-workflows init``: what it writes, the names it derives, and what it refuses (with
nothing written)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from lambda_workflows.cli import main
from lambda_workflows.infra.template import load_template
from lambda_workflows.infra.versioning import engine_template_version, template_version
from lambda_workflows.lint import lint_paths
from lambda_workflows.starter import Project, StarterError, init_project

PLACEHOLDER = re.compile(r"__[A-Za-z_]+__(?<!__init__)(?<!__future__)(?<!__pycache__)")
FILES = [
    ".gitignore",
    "README.md",
    "engine/Makefile",
    "pyproject.toml",
    "samconfig.toml",
    "src/my_app/__init__.py",
    "src/my_app/workflows.py",
    "src/requirements.txt",
    "template.yaml",
    "tests/test_my_app.py",
]


def test_init_writes_a_project_that_depends_on_the_engine(tmp_path: Path) -> None:
    # WHEN a project is written into a new folder
    written = init_project(tmp_path / "my-app")
    project = tmp_path / "my-app"
    # THEN it holds exactly the project's files, with no placeholder left
    assert [str(p) for p in written] == FILES
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == FILES
    for path in FILES:
        assert not PLACEHOLDER.search((project / path).read_text()), path
    # AND it depends on the engine; its template names the starter and is versioned
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    assert pyproject["project"]["name"] == "my-app"
    assert pyproject["project"]["dependencies"][0].startswith("lambda-workflows")
    template = load_template(project / "template.yaml")
    assert template["Parameters"]["Workflows"]["Default"] == "hello=my_app.workflows:HelloWorkflow"
    assert template_version(template) == engine_template_version()
    samconfig = tomllib.loads((project / "samconfig.toml").read_text())
    assert samconfig["default"]["global"]["parameters"]["stack_name"] == "my-app"
    # AND its sources parse, and its workflow keeps the rules of Workflows
    for source in ("src/my_app/workflows.py", "tests/test_my_app.py"):
        ast.parse((project / source).read_text())
    assert lint_paths([project / "src"]) == []
    assert (
        '$(LAMBDA_WORKFLOWS) layer "$(ARTIFACTS_DIR)"'
        in (project / "engine" / "Makefile").read_text()
    )


@pytest.mark.parametrize(
    ("name", "project", "package"),
    [("my-app", "my-app", "my_app"), ("Orders_2", "orders-2", "orders_2"), ("a", "a", "a")],
)
def test_names_are_derived_for_the_stack_and_the_package(
    name: str, project: str, package: str
) -> None:
    names = Project.named(name)
    assert (names.project, names.package) == (project, package)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("2fast", "must start with a letter"),
        ("my app!", "must start with a letter"),
        ("a--b", "single dashes"),
        ("x" * 64, "at most 63"),
        ("json", "shadow"),
        ("class", "keyword"),
        ("lambda_workflows", "shadow"),
    ],
)
def test_an_unusable_name_is_refused_and_nothing_is_written(
    tmp_path: Path, name: str, says: str
) -> None:
    with pytest.raises(StarterError, match=says):
        init_project(tmp_path / "new", name)
    assert not (tmp_path / "new").exists()


def test_a_folder_that_is_not_empty_is_refused_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a folder holding a file of the user's
    (tmp_path / "notes.txt").write_text("mine")
    # WHEN init is asked to write there THEN it exits 2 saying so, and writes nothing
    assert main(["init", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is not empty" in err and "notes.txt" in err and "pick another folder" in err
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(StarterError, match="is a file"):
        init_project(tmp_path / "f", "app")


def test_init_into_an_empty_folder_named_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an empty folder WHEN init writes there under another name
    assert main(["init", str(tmp_path), "--name", "orders"]) == 0
    # THEN the package is named after --name, and the output lists each file and what is next
    out = capsys.readouterr()
    assert (tmp_path / "src" / "orders" / "workflows.py").is_file()
    assert str(tmp_path / "template.yaml") in out.out.splitlines()
    assert "pip install -e '.[dev]'" in out.err
