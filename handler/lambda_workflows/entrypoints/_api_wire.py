"""The answers of the direct path, shaped as the resolver's answer models dump them.

Each route's answer model (:mod:`.api_models`) is the contract, and the OpenAPI document shows
it: its fields in their order, every optional one present (null or its default), nothing else.
:mod:`._api_ops` answers with the service's dicts, which are close to that but not the same (a
step row has no ``output_truncated`` until one is cut, an error may carry its traceback where
the model shows name and message only, a dict lists a version's keys in another order). These
functions give the very dict the model dumps, without pydantic; the test suite checks each one
against its model on every answer the API tests produce.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Shape = Callable[[Any], Any]


def _error(error: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A ``StepError``: name and message."""
    if error is None:
        return None
    return {"name": error["name"], "message": error["message"]}


def _attempt_error(error: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An ``AttemptError``: name, message and traceback."""
    if error is None:
        return None
    return {"name": error["name"], "message": error["message"], "traceback": error.get("traceback")}


def _version(version: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "version": version["version"],
        "class_name": version["class_name"],
        "module": version["module"],
        "in_flight": version["in_flight"],
    }


def _attempt(attempt: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "attempt": attempt["attempt"],
        "start": attempt["start"],
        "end": attempt["end"],
        "success": attempt["success"],
        "error": _attempt_error(attempt.get("error")),
    }


def _step(step: Mapping[str, Any]) -> dict[str, Any]:
    shown = _step_fields(step)
    if step.get("attempts_omitted"):  # only when some are left out
        shown["attempts_omitted"] = step["attempts_omitted"]
    return shown


def _step_fields(step: Mapping[str, Any]) -> dict[str, Any]:
    child = step.get("child")
    return {
        "name": step["name"],
        "count": step["count"],
        "type": step["type"],
        "status": step["status"],
        "attempts": step["attempts"],
        "start": step["start"],
        "end": step["end"],
        "output": step.get("output"),
        "output_truncated": step.get("output_truncated", False),
        "error": _error(step.get("error")),
        "attempt_history": [_attempt(a) for a in step.get("attempt_history") or ()],
        "event_type": step.get("event_type"),
        "wake_at": step.get("wake_at"),
        "child": None if child is None else {"workflow": child["workflow"], "id": child["id"]},
    }


def _rollback(rollback: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if rollback is None:
        return None
    failed = rollback.get("failed_step")
    return {
        "status": rollback["status"],
        "ends_as": rollback["ends_as"],
        "cause": _error(rollback["cause"]),
        "failed_step": None
        if failed is None
        else {"name": failed["name"], "count": failed["count"]},
        "error": _attempt_error(rollback.get("error")),
    }


def _usage(usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {key: usage[key] for key in ("writes", "reads", "invocations", "schedules")}


def _parent(parent: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if parent is None:
        return None
    return {"workflow": parent["workflow"], "id": parent["id"], "step": parent["step"]}


def instance_details(details: Mapping[str, Any]) -> dict[str, Any]:
    """``InstanceDetails``."""
    shown = _instance_fields(details)
    if details.get("steps_cursor") is not None:  # only when the steps are a first page
        shown["steps_total"] = details["steps_total"]
        shown["steps_cursor"] = details["steps_cursor"]
    return shown


def _instance_fields(details: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": details["id"],
        "workflow": details["workflow"],
        "status": details["status"],
        "output": details.get("output"),
        "error": _error(details.get("error")),
        "created": details.get("created"),
        "finished": details.get("finished"),
        "wake_at": details.get("wake_at"),
        "usage": _usage(details.get("usage")),
        "steps": [_step(step) for step in details["steps"]],
        "rollback": _rollback(details.get("rollback")),
        "workflow_version": details.get("workflow_version", "1"),
        "status_reason": details.get("status_reason"),
        "parent": _parent(details.get("parent")),
    }


def workflow_list(listing: Mapping[str, Any]) -> dict[str, Any]:
    """``WorkflowList``."""
    versions = listing.get("versions") or {}
    return {
        "workflows": list(listing["workflows"]),
        "versions": {name: [_version(v) for v in found] for name, found in versions.items()},
    }


def workflow_details(details: Mapping[str, Any]) -> dict[str, Any]:
    """``WorkflowDetails``."""
    at_least = list(details.get("instances_at_least") or ())
    return {
        "name": details["name"],
        "class_name": details["class_name"],
        "module": details["module"],
        "description": details["description"],
        "instances": dict(details["instances"]),
        **({"instances_at_least": at_least} if at_least else {}),  # only when there are any
        "versions": [_version(v) for v in details.get("versions") or ()],
        "schedules": [
            {
                "expression": s["expression"],
                "timezone": s["timezone"],
                "next_firings": list(s["next_firings"]),
                "next_ids": list(s["next_ids"]),
            }
            for s in details.get("schedules") or ()
        ],
    }


def _fields(*names: str) -> Shape:
    """A flat answer: these keys, in this order."""

    def shape(answer: Mapping[str, Any]) -> dict[str, Any]:
        return {name: answer[name] for name in names}

    return shape


def _listing(answer: Mapping[str, Any]) -> dict[str, Any]:
    rows = [_fields("id", "status", "created", "finished")(row) for row in answer["instances"]]
    return {"instances": rows, "cursor": answer["cursor"]}


def _batch_errors(errors: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [_fields("index", "id", "code", "message")(e) for e in errors]


SHAPES: dict[str, Shape] = {
    "WorkflowList": workflow_list,
    "WorkflowDetails": workflow_details,
    "InstanceHandle": _fields("id", "status"),
    "BatchResultBody": lambda a: {
        "created": list(a["created"]),
        "errors": _batch_errors(a["errors"]),
    },
    "InstanceList": _listing,
    "InstanceDetails": instance_details,
    "Deleted": _fields("id", "deleted"),
    "DeleteBatchResultBody": lambda a: {
        "deleted": [{"id": d["id"]} for d in a["deleted"]],
        "errors": _batch_errors(a["errors"]),
    },
    "StepOutputBody": lambda a: {
        "name": a["name"],
        "count": a["count"],
        "type": a["type"],
        "status": a["status"],
        "output": a.get("output"),
    },
    "SubscriptionBody": lambda a: {
        "events": [dict(event) for event in a["events"]],
        "cursor": a["cursor"],
        "finished": a["finished"],
        "status": a["status"],
    },
    "StepPageBody": lambda a: {
        "steps": [_step(step) for step in a["steps"]],
        "total": a["total"],
        "cursor": a["cursor"],
    },
    "HistoryBody": lambda a: {
        **_fields("format", "format_version", "workflow", "id", "workflow_version")(a),
        "status": a["status"],
        "created_at": float(a["created_at"]),
        "params": a.get("params"),
        "generation": a["generation"],
        "entries": list(a["entries"]),
        "events": list(a["events"]),
        **({"cursor": a["cursor"]} if a.get("cursor") is not None else {}),
    },
    "EventAccepted": _fields("instance_id", "type", "event_id"),
}
"""How each answer model dumps, by the model's name."""
