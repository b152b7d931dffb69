"""``GET /_dashboard/workflows/{name}/diagram``: a registered workflow's diagram, as JSON.

The diagram is drawn from the workflow's source file (:mod:`.diagram_builder`), so only a
server that has the workflow classes serves it: ``lambda-workflows dev`` (which runs them) and
``lambda-workflows ui`` (when ``WORKFLOWS`` names them where it runs). The deployed API has no such
route: a Lambda function has no business reading and parsing its own code on request, and the
route is the dashboard's, not part of the API (hence ``/_dashboard``, beside ``/workflows``).

The file is read on each request, so the diagram follows the source as it is edited; a
``run()`` inherited from a base class is drawn from that class's file.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lambda_workflows.engine.versions import workflow_names

from .diagram import Diagram
from .diagram_builder import DiagramError, build_diagram
from .files import Answer, json_answer

__all__ = ["DIAGRAM_PREFIX", "diagram_answer", "diagram_of"]

DIAGRAM_PREFIX = "/_dashboard/"
_DIAGRAM = re.compile(r"/_dashboard/workflows/([^/]+)/diagram")


def diagram_answer(path: str, workflows: Mapping[str, type[Any]]) -> Answer:
    """The answer to a GET of ``path`` (under :data:`DIAGRAM_PREFIX`).

    Returns:
        200 and the diagram; 404 for a workflow not registered here (saying how to register
        it) or any other path; 422 when the workflow's source cannot be read or holds no
        ``run()`` to draw.
    """
    match = _DIAGRAM.fullmatch(path)
    if match is None:
        return _error(
            404, "not_found", "no such dashboard route: diagrams are at "
            "/_dashboard/workflows/{name}/diagram",
        )  # fmt: skip
    name = unquote(match.group(1))
    workflow = workflows.get(name)
    if workflow is None:
        return _error(404, "unknown_workflow", _unknown(name, workflows))
    try:
        diagram = diagram_of(name, workflow)
    except DiagramError as exc:
        return _error(422, "no_diagram", f"no diagram of {name!r}: {exc}")
    return json_answer(200, diagram.to_dict())


def diagram_of(name: str, workflow: type[Any]) -> Diagram:
    """The diagram of ``workflow``'s ``run()``, registered as ``name``, from its source file.

    Raises:
        DiagramError: no ``run()`` of its own or inherited, or its source cannot be read.
    """
    owner = next((cls for cls in workflow.__mro__ if "run" in vars(cls)), None)
    if owner is None:
        raise DiagramError(f"{workflow.__qualname__} has no run() method")
    try:
        file = inspect.getsourcefile(owner)
        _, line = inspect.getsourcelines(owner)
        source = Path(file or "").read_bytes()
    except (OSError, TypeError) as exc:
        where = f"{owner.__module__}.{owner.__qualname__}"
        raise DiagramError(f"the source of {where} cannot be read ({exc})") from None
    diagram = build_diagram(source, owner.__name__, line)
    return dataclasses.replace(diagram, workflow=name, module=owner.__module__)


def _unknown(name: str, workflows: Mapping[str, type[Any]]) -> str:
    if not workflows:
        return (
            f"no source for workflow {name!r} here: a diagram is drawn from the workflow's "
            "source, so it is served only where the workflows are registered; start "
            "lambda-workflows ui with WORKFLOWS=name=module:Class (and PYTHONPATH) set as for "
            "lambda-workflows dev, or from the project's folder"
        )
    registered = ", ".join(workflow_names(workflows))
    return f"no workflow named {name!r} is registered here (registered: {registered})"


def _error(status: int, code: str, message: str) -> Answer:
    return json_answer(status, {"error": {"code": code, "message": message}})
