"""Which workflow names map to which classes — one place, read by every Lambda and the local
runtime alike (the analogue of wrangler's ``[[workflows]]``).

``WORKFLOWS`` holds ``name=module:Class`` pairs separated by commas (template.yaml sets it in
Globals, from the stack's ``Workflows`` parameter). Unset or empty, nothing is registered: the
runtime then answers every request for a workflow with an error saying to set it. The bundled
examples are registered like any other workflows, by the spec
``lambda_workflows.examples.EXAMPLES``.

Several versions of one workflow: ``orders=app.orders:Orders,orders@1=app.orders_v1:Orders``.
The entry without ``@`` is the newest (new instances and restarts run it); each
``name@version`` entry keeps an older version deployed for the instances created on it, and its
version must be the one its class declares (``version = "1"``). The registry holds the newest
class under ``orders`` and the older ones under ``orders@1`` (see
:mod:`lambda_workflows.engine.versions`).

A module that cannot be imported is named in the error with what to do: a module found neither
in the project nor on the Python path is most often one in a folder of its own, so the error
shows the ``PYTHONPATH=folder lambda-workflows dev`` that finds it; a module that imports something
not installed names that dependency.
"""

from __future__ import annotations

import importlib
import os
import shlex
from pathlib import Path

from .engine.entrypoint import WorkflowEntrypoint
from .engine.errors import ConfigurationError, InvalidInput
from .engine.limits import check_workflow_name
from .engine.versions import split_key, version_of

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
        key, sep, target = pair.partition("=")
        module_name, colon, class_name = target.strip().partition(":")
        if not sep or not colon or not module_name or not class_name:
            raise ConfigurationError(
                f"WORKFLOWS entry {pair!r} is malformed; write name=module:Class (or "
                "name@version=module:Class for an older version), e.g. "
                "orders=my_app.workflows:OrderWorkflow"
            )
        name, version = split_key(key.strip())
        try:
            check_workflow_name(name)
        except InvalidInput as exc:
            raise ConfigurationError(f"WORKFLOWS entry {pair!r}: {exc}") from None
        cls = _import_class(module_name, class_name, pair)
        if version is not None and version != version_of(cls):
            raise ConfigurationError(
                f"WORKFLOWS entry {pair!r}: {module_name}:{class_name} declares version "
                f"{version_of(cls)!r}, not {version!r}; name the entry {name}@{version_of(cls)} "
                "or point it at the class of that version"
            )
        if key.strip() in registry:
            raise ConfigurationError(f"WORKFLOWS entry {pair!r}: {key.strip()} is named twice")
        registry[key.strip()] = cls
    return check_schedules(check_versions(registry))


def check_versions(registry: Registry) -> Registry:
    """``registry`` once every ``name@version`` entry has a newest entry ``name`` and no
    version is registered twice.

    Raises:
        ConfigurationError: naming the entry at fault and what to write instead.
    """
    for key in registry:
        name, version = split_key(key)
        if version is None:
            continue
        newest = registry.get(name)
        if newest is None:
            raise ConfigurationError(
                f"WORKFLOWS entry {key}: there is no entry {name}=module:Class for the newest "
                f"version of {name}; the entry without @ is the one new instances run"
            )
        if version_of(newest) == version:
            raise ConfigurationError(
                f"WORKFLOWS entry {key}: version {version} of {name} is also its newest entry "
                f"({name}={newest.__module__}:{newest.__qualname__}); remove one of them"
            )
    return registry


def check_schedules(registry: Registry) -> Registry:
    """``registry`` once every class's ``schedules`` are valid EventBridge Scheduler
    expressions (see :mod:`lambda_workflows.engine.instances.schedules`).

    Raises:
        InvalidSchedule: naming the workflow and the schedule, with the syntax to write.
    """
    declaring = {key: cls for key, cls in registry.items() if _declares_schedules(cls)}
    if not declaring:
        return registry
    # Imported here: the schedules' parser (and its cron engine) is a few milliseconds of
    # every cold start, and a deployment whose workflows declare no schedule never uses it.
    from lambda_workflows.engine.instances.schedules import InvalidSchedule, schedules_of

    for key, cls in declaring.items():
        try:
            schedules_of(cls)
        except InvalidSchedule as exc:
            raise InvalidSchedule(
                f"workflow {key} ({cls.__module__}.{cls.__qualname__}): {exc}"
            ) from None
    return registry


def _declares_schedules(cls: type[WorkflowEntrypoint]) -> bool:
    """False when ``cls.schedules`` is None or an empty list or tuple: no schedule to check
    (anything else, even a wrong type, goes to the parser, which says what is wrong)."""
    declared = getattr(cls, "schedules", None)
    return not (declared is None or (isinstance(declared, list | tuple) and not declared))


def _import_class(module_name: str, class_name: str, pair: str) -> type[WorkflowEntrypoint]:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(
            f"WORKFLOWS entry {pair!r}: {_cannot_import(module_name, exc)}"
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


def _cannot_import(module_name: str, exc: ImportError) -> str:
    """Why ``module_name`` cannot be imported, and what to do about it."""
    said = f"cannot import module {module_name!r} ({exc})"
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
    top = module_name.partition(".")[0]
    if missing is None:
        return said
    if missing != module_name and not module_name.startswith(f"{missing}."):
        return (
            f"{said}: it imports {missing!r}, which is not installed here; install it in this "
            "environment (to deploy, list it in the requirements.txt in the functions' CodeUri: "
            "src/requirements.txt in a project lambda-workflows init wrote)"
        )
    if missing != top:
        return f"{said}: its package is there but has no module {missing!r}; check the name"
    folder = _folder_holding(top)
    where = shlex.quote(str(folder)) if folder else f"/path/to/the/folder/holding/{top}"
    if os.environ.get("PYTHONPATH", ""):
        where += f"{os.pathsep}$PYTHONPATH"
    return (
        f"{said}: {top!r} is neither in the project nor on the Python path. If it lives in a "
        f"folder of its own, add that folder to PYTHONPATH: `PYTHONPATH={where} "
        "lambda-workflows dev` (the same for lambda-workflows run); to deploy it, put it under "
        "the functions' CodeUri (src/ in a project lambda-workflows init wrote), which sam build "
        "packages"
    )


def _folder_holding(top: str) -> Path | None:
    """The current directory when the module or package ``top`` is in it, else None."""
    here = Path.cwd()
    if (here / f"{top}.py").is_file() or (here / top).is_dir():
        return here
    return None
