"""Which version of the engine's SAM template a project's template (or a deployed stack) is.

The engine's template carries its version in ``Metadata.LambdaWorkflows.TemplateVersion`` and
in the ``TemplateVersion`` output; ``lambda-workflows init`` copies both into a project's
template. A release of the engine that needs a changed template (a new resource, variable or
permission) raises the number, and ``lambda-workflows doctor`` then says that the project's
template, or the stack deployed from it, is older than the installed engine expects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .template import load_template

__all__ = ["CHANGES", "engine_template_version", "template_version"]

CHANGES: dict[int, str] = {
    1: "the first versioned template (lambda-workflows 0.1)",
    2: (
        "wake-up schedules invoke RunnerFunction directly: SchedulerInvokesRunner (the "
        "scheduler role may invoke the runner) and the runner's EventInvokeConfig (failed "
        "wake-ups go to the work queue)"
    ),
    3: (
        "work due now invokes RunnerFunction directly: RunnerFunction is named "
        "<stack>-runner, the senders (ApiFunction, TriggerFunction, SweepFunction) get "
        "RUNNER_FUNCTION_ARN and lambda:InvokeFunction on it, and RunnerInvokesItself"
    ),
}
"""What each template version changed, for doctor's advice (docs/deploy.md, "Upgrading")."""


def template_version(template: Mapping[str, Any]) -> int | None:
    """The ``Metadata.LambdaWorkflows.TemplateVersion`` of a parsed template; None when it has
    none (a template not written from the engine's), or it is not a whole number."""
    metadata = template.get("Metadata")
    section = metadata.get("LambdaWorkflows") if isinstance(metadata, Mapping) else None
    value = section.get("TemplateVersion") if isinstance(section, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def engine_template_version() -> int:
    """The template version the installed engine expects: its own packaged template's."""
    version = template_version(load_template())
    if version is None:  # pragma: no cover - the packaged template always has one
        raise RuntimeError("the packaged template.yaml has no Metadata.LambdaWorkflows")
    return version
