"""Which workflow names map to which classes — one place, read by every Lambda and the local
runtime alike (the analogue of wrangler's ``[[workflows]]``).

``WORKFLOWS`` holds ``name=module:Class`` pairs separated by commas (template.yaml sets it in
Globals, from the stack's ``Workflows`` parameter). Unset or empty, nothing is registered: the
runtime then answers every request for a workflow with an error saying to set it. The bundled
examples are registered like any other workflows, by the spec ``examples.EXAMPLES``.
"""

from __future__ import annotations

import importlib
import os

from .engine.entrypoint import WorkflowEntrypoint
from .engine.errors import ConfigurationError, InvalidInput
from .engine.limits import check_workflow_name

Registry = dict[str, type[WorkflowEntrypoint]]


def load_workflows(spec: str | None = None) -> Registry:
    """The registered workflows, from ``spec`` or the ``WORKFLOWS`` environment variable
    (none when it is empty).

    Raises:
        ConfigurationError: a pair is malformed, or a module or class cannot be found (at start-up,
            naming it).
    """
    text = os.environ.get("WORKFLOWS", "") if spec is None else spec
    registry: Registry = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        name, sep, target = pair.partition("=")
        module_name, colon, class_name = target.strip().partition(":")
        if not sep or not colon or not module_name or not class_name:
            raise ConfigurationError(
                f"WORKFLOWS entry {pair!r} is malformed; write name=module:Class, e.g. "
                "orders=my_app.workflows:OrderWorkflow"
            )
        try:
            check_workflow_name(name.strip())
        except InvalidInput as exc:
            raise ConfigurationError(f"WORKFLOWS entry {pair!r}: {exc}") from None
        registry[name.strip()] = _import_class(module_name, class_name, pair)
    return registry


def _import_class(module_name: str, class_name: str, pair: str) -> type[WorkflowEntrypoint]:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(
            f"WORKFLOWS entry {pair!r}: cannot import module {module_name!r} ({exc})"
        ) from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ConfigurationError(
            f"WORKFLOWS entry {pair!r}: module {module_name!r} has no class {class_name!r}"
        )
    if not (isinstance(cls, type) and issubclass(cls, WorkflowEntrypoint)):
        raise ConfigurationError(
            f"WORKFLOWS entry {pair!r}: {module_name}:{class_name} is not a WorkflowEntrypoint "
            "subclass"
        )
    return cls
