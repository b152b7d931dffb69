"""The body of a work message, "advance this instance" (``{"workflow", "id"}``), as the work
queue (:mod:`lambda_workflows.aws.sqs`) and the runner's direct invokes
(:mod:`lambda_workflows.aws.runner_invoke`) carry it."""

from __future__ import annotations

import json
from typing import Any

from lambda_workflows.engine.errors import InvalidInput
from lambda_workflows.engine.model import InstanceRef

__all__ = ["parse_work_message", "work_message"]


def work_message(ref: InstanceRef, reason: str | None = None) -> str:
    """The body of a work message."""
    body: dict[str, Any] = {"workflow": ref.workflow, "id": ref.id}
    if reason:
        body["reason"] = reason
    return json.dumps(body, separators=(",", ":"))


def parse_work_message(body: str) -> InstanceRef:
    """The instance a work message is about. Raises InvalidInput for anything else."""
    try:
        data = json.loads(body)
        return InstanceRef(str(data["workflow"]), str(data["id"]))
    except (ValueError, KeyError, TypeError):
        raise InvalidInput(
            f'not a work message: {body[:200]!r}; expected {{"workflow": ..., "id": ...}}'
        ) from None
