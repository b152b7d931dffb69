"""``lambda-workflows init``: a new project that depends on the engine instead of holding it.

The project's files are package data (``files/``, the ``.tmpl`` ones Python sources with
placeholders); its ``template.yaml`` is the engine's own template, rendered for the project by
:func:`project_template` (one source: the repository's ``template.yaml`` is the same file), so
a project deploys exactly the resources the engine was tested on.
"""

from __future__ import annotations

import keyword
import re
import sys
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from .template import ARCHITECTURE, PYTHON_VERSION, project_template

__all__ = ["Project", "StarterError", "init_project", "project_template"]

WORKFLOW = "hello"
CLASS = "HelloWorkflow"
_PROJECT = re.compile(r"[a-z][a-z0-9-]{0,62}")


class StarterError(ValueError):
    """The folder or the name cannot take a new project; the message says why and what to do."""


@dataclass(frozen=True)
class Project:
    """The names of a new project: its distribution and stack (``project``), its import
    package (``package``), and the starter workflow's registration name and class."""

    project: str
    package: str
    workflow: str = WORKFLOW
    cls: str = CLASS

    @classmethod
    def named(cls, name: str) -> Project:
        """The names derived from ``name`` (``My_App`` → project ``my-app``, package ``my_app``).

        Raises:
            StarterError: the name cannot be a project, stack and package name.
        """
        project = name.strip().lower().replace("_", "-").replace(" ", "-")
        package = project.replace("-", "_")
        if not _PROJECT.fullmatch(project) or project.endswith("-") or "--" in project:
            raise StarterError(
                f"project name {name!r} is not usable: it names the Python package and the "
                "CloudFormation stack, so it must start with a letter and hold only letters, "
                "digits and single dashes or underscores (at most 63), e.g. --name my-orders"
            )
        taken = package in sys.stdlib_module_names or package in {"lambda_workflows", "tests"}
        if keyword.iskeyword(package) or taken:
            raise StarterError(
                f"project name {name!r} gives the package {package!r}, which would shadow "
                f"{'a Python keyword' if keyword.iskeyword(package) else 'a module you import'}"
                "; pick another with --name"
            )
        return cls(project=project, package=package)

    @property
    def spec(self) -> str:
        """The ``WORKFLOWS`` entry of the starter workflow."""
        return f"{self.workflow}={self.package}.workflows:{self.cls}"


def init_project(directory: Path, name: str | None = None) -> list[Path]:
    """Write a new project into ``directory`` (created if missing; it must be empty).

    Args:
        directory: where the project goes.
        name: the project's name; the folder's name when None.

    Returns:
        The files written, relative to ``directory``.

    Raises:
        StarterError: ``directory`` is a file or not empty, or the name is not usable;
            nothing is written then.
    """
    directory = Path(directory)
    project = Project.named(name if name is not None else directory.resolve().name)
    if directory.exists() and not directory.is_dir():
        raise StarterError(f"{directory} is a file: init writes a project into a folder")
    if directory.is_dir() and any(directory.iterdir()):
        shown = ", ".join(sorted(p.name for p in directory.iterdir())[:3])
        raise StarterError(
            f"{directory} is not empty (it holds {shown}, ...): init writes a new project only "
            "into an empty or new folder, so it never overwrites your files; pick another folder"
        )
    contents = dict(_rendered(files(__package__) / "files", project))
    contents[Path("template.yaml")] = project_template(project.spec, project.project)
    for relative, text in contents.items():
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return sorted(contents)


def _rendered(root: Traversable, project: Project) -> list[tuple[Path, str]]:
    from lambda_workflows.distribution import installed_version
    from lambda_workflows.infra.versioning import engine_template_version

    engine = installed_version()
    values = {
        "__project__": project.project,
        "__package__": project.package,
        "__workflow__": project.workflow,
        "__Class__": project.cls,
        "__requirement__": f">={engine}" if engine[:1].isdigit() else "",
        "__architecture__": ARCHITECTURE,
        "__python_version__": PYTHON_VERSION,
        "__template_version__": str(engine_template_version()),
    }
    pattern = re.compile("|".join(re.escape(key) for key in values))
    out: list[tuple[Path, str]] = []
    for path, source in _walk(root, Path()):
        name = {"gitignore": ".gitignore"}.get(path.name, path.name.removesuffix(".tmpl"))
        relative = Path(pattern.sub(lambda m: values[m.group(0)], str(path.with_name(name))))
        out.append((relative, pattern.sub(lambda m: values[m.group(0)], source.read_text())))
    return out


def _walk(folder: Traversable, relative: Path) -> list[tuple[Path, Traversable]]:
    found: list[tuple[Path, Traversable]] = []
    for entry in folder.iterdir():
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            found.extend(_walk(entry, relative / entry.name))
        else:
            found.append((relative / entry.name, entry))
    return found
