"""Typed DynamoDB attribute values: the numbers, strings, errors, rollbacks and pauses of items
(see :mod:`lambda_workflows.aws.items`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambda_workflows.engine.model import (
    ErrorInfo,
    FailedStep,
    InstanceStatus,
    RollbackInfo,
    RollbackStatus,
)

from .item_keys import Item


def s(value: str) -> dict[str, str]:
    return {"S": value}


def n(value: float | int) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def put_optional(
    item: Item,
    numbers: Mapping[str, float | int | None],
    strings: Mapping[str, str | None],
) -> None:
    """Set the numbers and strings that have a value; leave the others out of the item."""
    for name, number in numbers.items():
        if number is not None:
            item[name] = n(number)
    for name, text in strings.items():
        if text is not None:
            item[name] = s(text)


def get_s(item: Item, name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(value["S"])


def get_n(item: Item, name: str) -> float | None:
    value = item.get(name)
    return None if value is None else float(value["N"])


def get_int(item: Item, name: str, default: int = 0) -> int:
    value = item.get(name)
    return default if value is None else int(value["N"])


def error_value(error: ErrorInfo) -> dict[str, Any]:
    """An error as a map; its traceback (at most 8 KiB, see lambda_workflows.engine.tracebacks) is
    stored inline with it, so an entry with a capped message and traceback fits an item."""
    fields = {"name": s(error.name), "message": s(error.message)}
    if error.traceback is not None:
        fields["traceback"] = s(error.traceback)
    return {"M": fields}


def get_error(item: Item, name: str = "error") -> ErrorInfo | None:
    value = item.get(name)
    if value is None:
        return None
    fields = value["M"]
    traceback = fields.get("traceback")  # absent on errors recorded without one
    return ErrorInfo(
        fields["name"]["S"], fields["message"]["S"], None if traceback is None else traceback["S"]
    )


def rollback_value(rollback: RollbackInfo) -> dict[str, Any]:
    """An instance's rollback as a map: its cause, the status it ends with, how it went."""
    fields: dict[str, Any] = {
        "cause": error_value(rollback.cause),
        "ends_as": s(rollback.ends_as.value),
        "status": s(rollback.status.value),
    }
    if rollback.failed_step is not None:
        fields["failed_step"] = s(rollback.failed_step.name)
        fields["failed_count"] = n(rollback.failed_step.count)
    if rollback.error is not None:
        fields["error"] = error_value(rollback.error)
    return {"M": fields}


def get_rollback(item: Item) -> RollbackInfo | None:
    value = item.get("rollback")
    if value is None:
        return None
    fields = value["M"]
    cause = get_error(fields, "cause")
    assert cause is not None, "a stored rollback always has its cause"
    failed = get_s(fields, "failed_step")
    count = get_int(fields, "failed_count", 1)
    return RollbackInfo(
        cause=cause,
        ends_as=InstanceStatus(str(get_s(fields, "ends_as"))),
        status=RollbackStatus(str(get_s(fields, "status"))),
        failed_step=None if failed is None else FailedStep(failed, count),
        error=get_error(fields),
    )


def pauses_value(pauses: tuple[tuple[float, float], ...]) -> dict[str, Any]:
    return {"L": [{"L": [n(a), n(b)]} for a, b in pauses]}


def get_pauses(item: Item) -> tuple[tuple[float, float], ...]:
    value = item.get("pauses")
    if value is None:
        return ()
    return tuple((float(p["L"][0]["N"]), float(p["L"][1]["N"])) for p in value["L"])
