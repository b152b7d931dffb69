"""``lambda-workflows init`` and ``layer``, and what every command reads from a project folder.

A project written by ``init`` keeps its workflows where it deploys them: ``template.yaml``'s
``Workflows`` parameter, their code under the functions' ``CodeUri``. Run from that folder with
``WORKFLOWS`` unset, the local commands (``dev``, ``run``, ``ui``, ``check-deploy``) register
the same workflows from the same code (:func:`use_project_workflows`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .console import CommandError, Console, Exit, add_command

__all__ = ["add_commands", "project_template_used", "put_first_on_path", "use_project_workflows"]

_used: list[Path] = []  # the template use_project_workflows took WORKFLOWS from, if it did


def add_commands(commands: Any) -> None:
    """Register ``init`` and ``layer``."""
    init = add_command(
        commands,
        "init",
        "write a new project that depends on lambda-workflows: a starter workflow, its tests, "
        "template.yaml and samconfig.toml",
        [
            "lambda-workflows init my-app                    a new folder my-app/",
            "lambda-workflows init . --name orders           this (empty) folder, named orders",
        ],
        init_command,
    )
    init.add_argument("directory", metavar="DIR", help="the new project's folder (new or empty)")
    init.add_argument(
        "--name", default=None, help="the project's name (default: the folder's name)"
    )
    layer = add_command(
        commands,
        "layer",
        "build the engine's Lambda layer into DIR (sam build runs it from engine/Makefile)",
        ['lambda-workflows layer "$ARTIFACTS_DIR" --architecture arm64 --python-version 3.11'],
        layer_command,
    )
    layer.add_argument("directory", metavar="DIR", help="where the layer goes (ARTIFACTS_DIR)")
    layer.add_argument("--architecture", choices=("arm64", "x86_64"), default="arm64")
    layer.add_argument("--python-version", default="3.11", metavar="X.Y")
    layer.add_argument(
        "--no-dependencies",
        action="store_true",
        help="copy the engine only; install nothing with pip",
    )


def init_command(args: argparse.Namespace, console: Console) -> int:
    """``lambda-workflows init DIR [--name NAME]``."""
    from lambda_workflows.starter import StarterError, init_project

    directory = Path(args.directory)
    try:
        written = init_project(directory, args.name)
    except StarterError as exc:
        raise CommandError(str(exc)) from None
    for path in written:
        console.data(str(directory / path))
    shown = directory if directory.is_absolute() else Path(os.curdir) / directory
    console.message(
        f"a new project in {shown}; next:\n"
        f"  cd {shown}\n"
        "  python -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]'\n"
        "  pytest && lambda-workflows dev"
    )
    return Exit.OK


def layer_command(args: argparse.Namespace, console: Console) -> int:
    """``lambda-workflows layer DIR``."""
    import subprocess

    from lambda_workflows.starter.layer import LayerError, build_layer

    try:
        site = build_layer(
            Path(args.directory),
            architecture=args.architecture,
            python_version=args.python_version,
            install_dependencies=not args.no_dependencies,
        )
    except LayerError as exc:
        raise CommandError(str(exc)) from None
    except subprocess.CalledProcessError as exc:
        raise CommandError(
            f"pip could not install the engine's dependencies for {args.architecture} "
            f"(exit {exc.returncode}); it needs the package index, as sam build does"
        ) from None
    console.message(f"the engine's layer is in {site}")
    return Exit.OK


def use_project_workflows(folder: Path | None = None) -> str | None:
    """With ``WORKFLOWS`` unset, register what ``folder``'s ``template.yaml`` deploys.

    Sets ``WORKFLOWS`` to the ``Workflows`` parameter's default and puts the functions'
    ``CodeUri`` first on ``sys.path``, when the template has both; returns the spec taken, or
    None (``WORKFLOWS`` set, no template, or a template registering nothing).
    """
    if "WORKFLOWS" in os.environ:
        return None
    template_path = (folder or Path.cwd()) / "template.yaml"
    if not template_path.is_file():
        return None
    from lambda_workflows.infra.template import code_root, load_template, parameter_defaults

    try:
        template = load_template(template_path)
    except (OSError, ValueError) as exc:
        raise CommandError(f"{template_path} cannot be read as a template: {exc}") from None
    default = parameter_defaults(template).get("Workflows", "")
    code = code_root(template, template_path.parent)
    if not isinstance(default, str) or not default.strip() or code is None:
        return None
    put_first_on_path(code)
    os.environ["WORKFLOWS"] = default
    _used[:] = [template_path]
    return default


def put_first_on_path(code: Path) -> None:
    """Make the modules of a project's code folder importable, ahead of anything installed."""
    if str(code) not in sys.path:
        sys.path.insert(0, str(code))


def project_template_used() -> Path | None:
    """The template whose ``Workflows`` default this process registered, if it did (and
    ``WORKFLOWS`` still holds it)."""
    if _used and "WORKFLOWS" in os.environ:
        return _used[0]
    return None
