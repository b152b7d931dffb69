"""What each route of the HTTP API does, once its request is read: one call to the instance
service, answered as a JSON-ready dict (before it is shaped into the route's answer model).

Both request paths of :mod:`.api` call these: the resolver's routes (:mod:`._api_resolver`),
which validate the answer against its model, and the direct path (:mod:`._api_direct`), which
shapes it with :mod:`._api_wire`.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from lambda_workflows.engine.clock import iso
from lambda_workflows.engine.errors import NOTHING_REGISTERED, ConfigurationError
from lambda_workflows.engine.instances.pages import STEPS_PAGE
from lambda_workflows.engine.model import InstanceStatus
from lambda_workflows.engine.versions import workflow_names

from ._api_common import instance, runtime, service, workflow

STEP_OUTPUT_CAP = 64 * 1024  # a step's output in an instance's answer, encoded
STEP_OUTPUTS_BUDGET = 4 * 1024 * 1024  # all of them: the answer stays under Lambda's 6 MB


def list_workflows() -> dict[str, Any]:
    """``{workflows, versions}``: the registered workflows' names, and their versions."""
    workflows = runtime().workflows
    if not workflows:
        raise ConfigurationError(NOTHING_REGISTERED)
    names = workflow_names(workflows)  # orders@1 is a version of orders, not a workflow
    versions = {name: service().describe(name).versions for name in names}
    return {"workflows": names, "versions": versions}


def describe_workflow(name: str) -> dict[str, Any]:
    """The workflow's class, its instances by status, its versions and its schedules."""
    # cron arithmetic is loaded by the requests that show schedules, not by every cold start
    from lambda_workflows.engine.instances.schedules import describe_schedules

    details = service().describe(workflow(name)).to_dict()
    current = runtime()
    details["schedules"] = describe_schedules(
        name, current.workflows.get(name), current.clock.time()
    )
    return details


def create_instance(name: str, requested_id: str | None, params: Any) -> dict[str, Any]:
    """``{id, status}`` of the instance created."""
    record = service().create(workflow(name), requested_id, params)
    return {"id": record.id, "status": str(record.status)}


def create_batch(name: str, items: list[Any] | dict[str, Any]) -> dict[str, Any]:
    """``{created, errors}`` of a batch create: a list of items, or an object form."""
    return service().create_batch(workflow(name), items).to_dict()


def list_instances(
    name: str, status: InstanceStatus | None, cursor: str | None, limit: int
) -> dict[str, Any]:
    """One page of instances, newest first: ``{instances, cursor}``."""
    page = service().list(workflow(name), status, cursor, limit)
    rows = [
        {
            "id": r.id,
            "status": str(r.status),
            "created": iso(r.created_at),
            "finished": iso(r.finished_at),
        }
        for r in page.records
    ]
    return {"instances": rows, "cursor": page.cursor}


def instance_details(name: str, instance_id: str) -> dict[str, Any]:
    """The instance's status view with the first page of its steps (see
    :mod:`lambda_workflows.engine.instances.pages`), their large outputs left out (see
    :func:`capped`)."""
    ref = instance(name, instance_id)
    return capped(service().status(ref, steps_limit=STEPS_PAGE).to_dict())


def steps(name: str, instance_id: str, cursor: str | None, limit: int) -> dict[str, Any]:
    """A page of the instance's steps, ``{steps, total, cursor}``, their large outputs left
    out (see :func:`capped`)."""
    return capped(service().steps(instance(name, instance_id), cursor, limit).to_dict())


def capped(details: dict[str, Any]) -> dict[str, Any]:
    """``details`` with each step output over 64 KiB encoded, or past 4 MiB of them in all,
    replaced by null and ``output_truncated``: a Lambda answer holds at most 6 MB, and a
    timeline of large results would not fit. ``GET …/steps/{step_name}`` has each whole."""
    budget = STEP_OUTPUTS_BUDGET
    for step in details["steps"]:
        if step.get("output") is None:
            continue
        size = len(json.dumps(step["output"], ensure_ascii=False, separators=(",", ":")).encode())
        if size > min(STEP_OUTPUT_CAP, budget):
            step["output"], step["output_truncated"] = None, True
        else:
            budget -= size
    return details


def delete_instance(name: str, instance_id: str) -> dict[str, Any]:
    """``{id, deleted: true}`` once the instance is deleted."""
    ref = instance(name, instance_id)
    service().delete(ref)
    return {"id": ref.id, "deleted": True}


def delete_batch(name: str, ids: list[str]) -> dict[str, Any]:
    """``{deleted, errors}`` of a batch delete."""
    return service().delete_batch(workflow(name), ids).to_dict()


def step_output(name: str, instance_id: str, step_name: str, count: int) -> dict[str, Any]:
    """One step's whole output; ``step_name`` as the path holds it, percent-encoded."""
    ref = instance(name, instance_id)
    return service().step_output(ref, unquote(step_name), count).to_dict()


def history(name: str, instance_id: str, cursor: str | None, limit: int) -> dict[str, Any]:
    """A page of the instance's history in the export format, with ``cursor`` when there is
    a next one."""
    return service().history_page(instance(name, instance_id), cursor, limit).to_dict()


def subscribe(
    name: str,
    instance_id: str,
    cursor: str | None,
    types: str | list[str] | None,
    wait: int,
    limit: int,
) -> dict[str, Any]:
    """``{events, cursor, finished}``: the instance's events after ``cursor``, the request
    held up to ``wait`` seconds until one is new (see :mod:`.engine.subscription`)."""
    ref = instance(name, instance_id)
    return service().subscribe(ref, cursor, types, wait=wait, limit=limit).to_dict()


def change_status(
    name: str,
    instance_id: str,
    status: str,
    from_step: dict[str, object] | None = None,
    rollback: bool = False,
) -> dict[str, Any]:
    """``{id, status}`` after pause, resume, terminate (with ``rollback``) or restart (from
    ``from_step``, a selector ``{name, count, type}``)."""
    ref = instance(name, instance_id)
    current = service()
    if status == "terminate":
        record = current.terminate(ref, rollback=rollback)
    elif from_step is not None:
        record = current.restart(ref, from_step=from_step)
    else:
        actions = {"pause": current.pause, "resume": current.resume, "restart": current.restart}
        record = actions[status](ref)
    return {"id": record.id, "status": str(record.status)}


def send_event(
    name: str, instance_id: str, event_type: str, payload: Any, key: str | None
) -> dict[str, Any]:
    """``{instance_id, type, event_id}`` of the event recorded."""
    ref = instance(name, instance_id)
    event = service().send_event(ref, event_type, payload, key=key)
    return {"instance_id": ref.id, "type": event.type, "event_id": event.id}
