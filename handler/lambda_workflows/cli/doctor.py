"""``lambda-workflows doctor``: is this project in step with the installed engine?

It checks, from a project's folder:

- ``template.yaml``'s engine template version (``Metadata.LambdaWorkflows.TemplateVersion``)
  against the version the installed engine expects: older means the engine needs resources,
  variables or permissions the template does not have yet (docs/deploy.md, "Upgrading");
- that the workflows its ``Workflows`` parameter registers import, from its ``CodeUri``;
- with ``--stack``, the deployed stack's ``TemplateVersion`` output, through CloudFormation:
  a stack deployed from an older template than the engine expects.

Exit status: 0 all in step; 1 something is out of step (each finding says what to do);
2 no template here, or the stack cannot be read.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .console import CommandError, Console, Exit, add_command

__all__ = ["add_commands", "doctor"]

UPGRADE = "see docs/deploy.md, 'Upgrading', for the steps"


def add_commands(commands: Any) -> None:
    """Register ``doctor``."""
    parser = add_command(
        commands,
        "doctor",
        "check that this project's template.yaml (and, with --stack, the deployed stack) is the "
        "engine template version the installed lambda-workflows expects",
        [
            "lambda-workflows doctor                       the template.yaml in this folder",
            "lambda-workflows doctor --stack my-app        and the stack deployed from it",
        ],
        doctor,
    )
    parser.add_argument(
        "--template",
        default="template.yaml",
        metavar="PATH",
        help="the project's template (default template.yaml)",
    )
    parser.add_argument(
        "--stack",
        default=None,
        metavar="NAME",
        help="also read this CloudFormation stack's TemplateVersion output (your AWS "
        "credentials and region, as the aws CLI finds them)",
    )


def doctor(args: argparse.Namespace, console: Console) -> int:
    """``lambda-workflows doctor``: one line per check, exit 1 when any is out of step."""
    from lambda_workflows.distribution import installed_version
    from lambda_workflows.infra.template import load_template
    from lambda_workflows.infra.versioning import engine_template_version, template_version

    path = Path(args.template)
    if not path.is_file():
        raise CommandError(
            f"no {path} here: run doctor in a project's folder (lambda-workflows init writes one)"
        )
    try:
        template = load_template(path)
    except (OSError, ValueError) as exc:
        raise CommandError(f"{path} cannot be read as a template: {exc}") from None
    expected = engine_template_version()
    engine = f"lambda-workflows {installed_version()}"
    problems = [_compare(f"{path}", template_version(template), expected, engine)]
    problems.append(_workflows(template, path))
    if args.stack:
        problems.append(_compare(f"stack {args.stack}", _deployed(args.stack), expected, engine))
    for ok, line in problems:
        console.message(("ok: " if ok else "out of step: ") + line)
    return Exit.OK if all(ok for ok, _ in problems) else Exit.FAILED


def _compare(what: str, found: int | None, expected: int, engine: str) -> tuple[bool, str]:
    from lambda_workflows.infra.versioning import CHANGES

    if found is None:
        return False, (
            f"{what} has no engine template version (Metadata.LambdaWorkflows.TemplateVersion, "
            f"or the TemplateVersion output of a stack): it was not written by lambda-workflows "
            f"init, or predates versioning; {engine} expects version {expected}: {UPGRADE}"
        )
    if found < expected:
        changes = "; ".join(f"{v}: {CHANGES.get(v, '?')}" for v in range(found + 1, expected + 1))
        return False, (
            f"{what} is engine template version {found}, older than the {expected} {engine} "
            f"expects (what changed: {changes}): {UPGRADE}"
        )
    if found > expected:
        return False, (
            f"{what} is engine template version {found}, newer than {engine} knows "
            f"({expected}): upgrade it (pip install -U lambda-workflows)"
        )
    return True, f"{what} is engine template version {found}, as {engine} expects"


def _workflows(template: dict[str, Any], path: Path) -> tuple[bool, str]:
    from lambda_workflows.engine.errors import ConfigurationError
    from lambda_workflows.infra.template import code_root, parameter_defaults
    from lambda_workflows.registry import load_workflows

    from .project import put_first_on_path

    spec = parameter_defaults(template).get("Workflows", "")
    if not isinstance(spec, str) or not spec.strip():
        return True, f"{path} registers no workflow by default (Workflows is empty)"
    code = code_root(template, path.parent)
    if code is not None:
        put_first_on_path(code)
    try:
        names = sorted(load_workflows(spec))
    except ConfigurationError as exc:
        return False, f"{path}'s Workflows parameter does not load: {exc}"
    return True, f"{path} registers {', '.join(names)}, and each imports"


def _deployed(stack: str) -> int | None:
    from lambda_workflows.aws.cloudformation import stack_outputs
    from lambda_workflows.engine.errors import InfrastructureError

    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    try:
        value = stack_outputs(stack, region).get("TemplateVersion")
    except InfrastructureError as exc:
        raise CommandError(str(exc)) from None
    try:
        return None if value is None else int(value)
    except ValueError:
        return None
