"""The bodies a batch create takes: today's list of items, and Cloudflare's object forms; and
the shape check every batch (a create's items, a delete's ids) passes before anything is written.

Cloudflare's ``createBatch`` (changelog 2026-10-08) takes, besides a list of instances,

- ``{"count": N, "params": ...}``: N instances (1 to 100) with generated ids, all with the
  same params (``params`` may be left out: ``{}``, as with ``create()``);
- ``{"instances": [{"id"?, "params"?}, ...]}``: the same as the list itself.

All three read as a list of ``{id?, params?}`` items (:func:`read_batch`), which
:meth:`~lambda_workflows.engine.instances.service.InstanceService.create_batch` creates one by one
and answers ``{created, errors}`` the same way. A body malformed as a whole (a count out of range,
both forms at once, an unknown key) raises :class:`InvalidInput` before anything is written.

Standard library only: the service, the test kit and the clients all read bodies through here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lambda_workflows.engine.errors import InvalidInput
from lambda_workflows.engine.immutable import immutable

__all__ = [
    "CREATE_BATCH",
    "DELETE_BATCH",
    "MAX_BATCH",
    "BatchBody",
    "BatchRequest",
    "BatchShape",
    "batch_body",
    "check_batch",
    "read_batch",
]

MAX_BATCH = 100
"""Instances one batch creates at most (Cloudflare's limit too)."""

BatchBody = Sequence[Mapping[str, Any]] | Mapping[str, Any]
"""A list of ``{id?, params?}`` items, ``{"count", "params"?}`` or ``{"instances"}``."""

_FORMS = (
    'a list of {id?, params?} items, {"count": N, "params": ...} for N instances with '
    'generated ids, or {"instances": [{id?, params?}, ...]}'
)


@immutable
class BatchShape:
    """What one kind of batch holds, in the words of its refusals (see :func:`check_batch`)."""

    verb: str  # what the batch does with each item: "a batch <verb> at most N instances"
    item: str  # what an item must be
    item_type: type  # and its type
    done: str  # what nothing of a refused batch was: "nothing was <done>"
    limit: int = MAX_BATCH


CREATE_BATCH = BatchShape("holds", "an object {id?, params?}", Mapping, "created")
"""A batch create's items (after its object forms are read as a list)."""
DELETE_BATCH = BatchShape("deletes", "an instance id (a string)", str, "deleted")
"""A batch delete's ids."""


def check_batch(items: Any, shape: BatchShape, not_a_list: str) -> Sequence[Any]:
    """``items`` when it is a list of at most ``shape.limit`` items of ``shape.item_type``.

    Raises:
        InvalidInput: ``not_a_list`` when it is not a list; else saying which item is not
            of its type, or how many items there are too many. The whole batch is refused,
            so nothing of it is written.
    """
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        raise InvalidInput(not_a_list)
    if len(items) > shape.limit:
        raise InvalidInput(
            f"a batch {shape.verb} at most {shape.limit} instances, got {len(items)}; split it"
        )
    for index, item in enumerate(items):
        if not isinstance(item, shape.item_type):
            raise InvalidInput(
                f"batch item {index} must be {shape.item}, not {type(item).__name__}; "
                f"nothing was {shape.done}"
            )
    return items


@immutable
class BatchRequest:
    """A batch body read as items.

    ``shared_params`` is True for the count form: every item has the one ``params`` the body
    gave, so a bad ``params`` refuses the whole body rather than each of its items.
    """

    items: tuple[Mapping[str, Any], ...]
    shared_params: bool = False


def read_batch(body: Any) -> BatchRequest:
    """The items of a batch body, in any of its forms.

    Raises:
        InvalidInput: the body is malformed as a whole: not a list or an object, more than
            100 items, an item that is not an object, or an object form that is not exactly
            ``{count, params?}`` or ``{instances}`` with a count from 1 to 100.
    """
    if isinstance(body, Mapping):
        return _object_form(body)
    return BatchRequest(tuple(_checked_items(body, "create_batch")))


def batch_body(
    items: BatchBody | None = None, count: int | None = None, params: Any = None
) -> BatchBody:
    """The body a client's ``create_batch(items)`` or ``create_batch(count=N, params=...)``
    sends (checked by :func:`read_batch` where it is created, not here).

    Raises:
        TypeError: both ``items`` and ``count``, neither, or ``params`` without ``count``.
    """
    if items is not None and count is not None:
        raise TypeError(
            "give create_batch either a list of items or count= (with params=), not both"
        )
    if items is not None:
        if params is not None:
            raise TypeError("params= goes with count=; give each item of the list its params")
        return items
    if count is None:
        raise TypeError(
            "create_batch needs a list of {id?, params?} items, or count=N (1 to 100 instances "
            "with generated ids) and optionally params="
        )
    return {"count": count} if params is None else {"count": count, "params": params}


def _object_form(body: Mapping[str, Any]) -> BatchRequest:
    unknown = sorted(str(key) for key in body if key not in ("count", "params", "instances"))
    if unknown:
        raise InvalidInput(
            f"unknown key(s) {unknown} in the batch object; create_batch takes {_FORMS}; "
            "nothing was created"
        )
    if "count" in body and "instances" in body:
        raise InvalidInput(
            "the batch gives both count and instances; give count (with params) for instances "
            "with generated ids, or instances for a list of {id?, params?}; nothing was created"
        )
    if "instances" in body:
        if "params" in body:
            raise InvalidInput(
                "params goes with count; with instances, give each instance its own params "
                "({id?, params?}); nothing was created"
            )
        return BatchRequest(tuple(_checked_items(body["instances"], "instances")))
    if "count" not in body:
        raise InvalidInput(
            f"the batch object needs count or instances: create_batch takes {_FORMS}"
        )
    count = _count(body["count"])
    params = body.get("params")
    return BatchRequest(tuple({"params": params} for _ in range(count)), shared_params=True)


def _count(count: Any) -> int:
    if type(count) is not int:
        raise InvalidInput(
            f"count must be a whole number from 1 to {MAX_BATCH}, not {type(count).__name__}; "
            "nothing was created"
        )
    if not 1 <= count <= MAX_BATCH:
        raise InvalidInput(
            f"count must be from 1 to {MAX_BATCH}, got {count}; for more instances, send "
            f"several batches of at most {MAX_BATCH}; nothing was created"
        )
    return count


def _checked_items(items: Any, what: str) -> Sequence[Mapping[str, Any]]:
    """Refuse a list that is malformed as a whole: nothing of it can be reported per item."""
    return check_batch(items, CREATE_BATCH, f"{what} takes {_FORMS}; got {type(items).__name__}")
