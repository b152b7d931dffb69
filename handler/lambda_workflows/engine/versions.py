"""Several versions of one workflow registered at once, and which class replays an instance.

The registry maps a workflow's name to its newest class (``orders``); an older version still
deployed sits beside it under ``name@version`` (``orders@1``), the form ``WORKFLOWS`` names it in.
An instance records the ``version`` of the class it was created with (its ``workflow_version``) and
is always replayed by that version's class: the newest when the versions match, else the pinned
``name@version`` entry. An instance whose version is not registered any more is parked, not failed
(see :class:`~lambda_workflows.engine.instances.transitions.Park`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from .errors import NOTHING_REGISTERED, UnknownWorkflow
from .limits import check_workflow_name

DEFAULT_VERSION = "1"
VERSION_PATTERN = re.compile(r"^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,63}$")
PARK_RETRY_SECONDS = 60.0
"""A parked instance is due again this long after it was parked: the recovery sweep (every 5
minutes on AWS) posts it once more, so it continues soon after its version is deployed again,
without a runner spinning on it meanwhile."""


def split_key(key: str) -> tuple[str, str | None]:
    """``"orders@1"`` → ``("orders", "1")``; ``"orders"`` → ``("orders", None)``."""
    name, at, version = key.partition("@")
    return name, (version if at else None)


def version_of(cls: Any) -> str:
    """The ``version`` a workflow class declares (``"1"`` when it declares none)."""
    return str(getattr(cls, "version", DEFAULT_VERSION))


def workflow_names(workflows: Iterable[str]) -> list[str]:
    """The registered workflow names, without their pinned older versions, sorted."""
    return sorted({split_key(key)[0] for key in workflows})


def is_registered(workflows: Collection[str], name: str) -> bool:
    """True when some version of ``name`` is registered (its newest one is)."""
    return "@" not in name and name in workflows


def check_workflow(workflows: Collection[str], workflow: str) -> str:
    """``workflow`` when it names a registered workflow; else UnknownWorkflow listing the
    registered ones (or InvalidInput for a name no workflow can have)."""
    check_workflow_name(workflow)
    if not workflows:
        raise UnknownWorkflow(f"no workflow is registered as {workflow!r}: {NOTHING_REGISTERED}")
    if not is_registered(workflows, workflow):
        raise UnknownWorkflow(
            f"no workflow is registered as {workflow!r}; registered: "
            f"{', '.join(workflow_names(workflows))}"
        )
    return workflow


def versions_of(workflows: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Every registered class of ``name`` by version, the newest first."""
    found: dict[str, Any] = {}
    newest = workflows.get(name)
    if newest is not None:
        found[version_of(newest)] = newest
    for key, cls in workflows.items():
        base, version = split_key(key)
        if base == name and version is not None and version not in found:
            found[version] = cls
    return found


def class_for(workflows: Collection[str], name: str, version: str) -> Any:
    """The class that replays an instance of ``name`` created on ``version``, or None when
    that version is not registered (or ``lambda_workflows`` is a plain collection of names)."""
    if not isinstance(workflows, Mapping) or not is_registered(workflows, name):
        return None
    newest = workflows[name]
    if version_of(newest) == version:
        return newest
    return workflows.get(f"{name}@{version}")


def is_parked(workflows: Collection[str], name: str, version: str) -> bool:
    """True when an instance of ``name`` created on ``version`` is parked here: some version
    of ``name`` is registered, but not that one (see :func:`not_deployed`)."""
    return is_registered(workflows, name) and class_for(workflows, name, version) is None


def newest_version(workflows: Collection[str], name: str) -> str:
    """The version a new instance (or a restart) of ``name`` runs."""
    cls = workflows.get(name) if isinstance(workflows, Mapping) else None
    return version_of(cls) if cls is not None else DEFAULT_VERSION


def not_deployed(name: str, version: str) -> str:
    """The status reason of an instance parked for want of its version."""
    return (
        f"version {version} of {name} is not deployed; register it again "
        f"(WORKFLOWS={name}@{version}=module:Class beside the newest) and it continues"
    )
