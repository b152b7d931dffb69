"""The API's direct path: every well-formed request answered without the resolver.

A cold start pays for what the handler imports. Powertools' resolver with validation (its
OpenAPI parameter models, pydantic and the wire models) is about as much again as the rest of
the API, and a request that is well formed uses none of it: its path names a route, its query
and headers hold single values of the right kind, and its body is the JSON the route takes.
This module reads such a request itself and answers it, byte for byte, as the resolver does.

It is deliberately conservative: whatever it is not sure to read exactly as the resolver
would (a malformed value, a key it does not know, a repeated parameter, an unknown route) is
*left to the resolver* (``answer`` returns None), which validates it against the models and
answers with the same code and message as before. So the two paths agree by construction on
what they refuse: only the resolver refuses. Before a route's call, nothing is written, so
leaving a request to the resolver never repeats a write.

Its routes are the declared ones (:data:`._api_routes.ROUTES`: method, path, call, query
bounds and defaults, answer model), which the resolver registers too. They match paths with the
resolver's own pattern (:data:`SEGMENT`: a segment of the characters Powertools routes), in the
same order, so both pick the same route with the same path arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from lambda_workflows.engine.instances.batch_forms import MAX_BATCH
from lambda_workflows.engine.instances.deletion import MAX_DELETE_BATCH
from lambda_workflows.engine.limits import MAX_ID, MAX_STEP_NAME
from lambda_workflows.engine.model import InstanceStatus
from lambda_workflows.observability import logger

from . import _api_ops as ops
from ._api_common import JSON_MEDIA_TYPE, Answer, failure, strict_json
from ._api_routes import ROUTES as DECLARED
from ._api_routes import RouteDeclaration
from ._api_wire import SHAPES

# What Powertools lets a <param> segment hold: RFC 3986's unreserved and sub-delims, the
# characters it calls unsafe, and word characters (api_gateway._NAMED_GROUP_BOUNDARY_PATTERN).
SEGMENT = r"[-._~()'!*:@,;=+&$%<> \[\]{}|^\w]+"
_PARAM = re.compile(r"<(\w+)>")
_ID = re.compile(rf"[A-Za-z0-9_][A-Za-z0-9_-]{{0,{MAX_ID - 1}}}")
_NUMBER = re.compile(r"0|[1-9][0-9]{0,8}")  # longer ones are left to the resolver
_STATUSES = {str(s) for s in InstanceStatus}
_ACTIONS = {"pause", "resume", "terminate", "restart"}
_STEP_TYPES = {"do", "sleep", "waitForEvent", "runWorkflow"}


class _Unread(Exception):
    """The request is not one this path reads as the resolver would: the resolver answers."""


class _Request:
    """The parts of a proxy event a route reads, as Powertools resolves them."""

    def __init__(
        self, event: Mapping[str, Any], args: dict[str, str], route: RouteDeclaration
    ) -> None:
        self.event = event
        self.args = args
        self.route = route

    def number(self, name: str) -> int:
        """An integer query parameter, within the bounds the route declares (its default
        when absent)."""
        declared = self.route.query(name)
        value = self.query(name)
        if value is None:
            return declared.default or 0
        low, high = declared.low or 0, declared.high if declared.high is not None else 2**31
        if not _NUMBER.fullmatch(value) or not low <= int(value) <= high:
            raise _Unread
        return int(value)

    def query(self, name: str) -> str | None:
        """A query parameter given once (None when absent): single and multi-value maps
        merged, the multi-value one winning, as Powertools merges them."""
        merged = {
            **(self.event.get("queryStringParameters") or {}),
            **(self.event.get("multiValueQueryStringParameters") or {}),
        }
        return _single(merged.get(name))

    def header(self, name: str) -> str | None:
        """A header given once (None when absent), looked up without regard to case in the
        multi-value headers if there are any, else in the single-value ones."""
        source = self.event.get("multiValueHeaders") or self.event.get("headers") or {}
        found = [value for key, value in source.items() if str(key).lower() == name.lower()]
        if len(found) > 1:
            raise _Unread
        return _single(found[0]) if found else None

    def body(self) -> Any:
        """The body's JSON (None for an empty body)."""
        text = self.event.get("body") or ""
        if text and self.event.get("isBase64Encoded"):
            import base64

            text = base64.b64decode(text).decode("utf-8")
        if not text:
            return None
        try:
            return strict_json(text)
        except ValueError:
            raise _Unread from None


def _single(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    raise _Unread


def _keys(value: Any, allowed: set[str]) -> dict[str, Any]:
    """``value`` as an object holding only ``allowed`` keys."""
    if not isinstance(value, dict) or not set(value) <= allowed:
        raise _Unread
    return value


def _id(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise _Unread
    return value


# --- what each route reads ------------------------------------------------------------------

Reader = Callable[[_Request], tuple[Any, ...]]


def _name(request: _Request) -> tuple[Any, ...]:
    return (request.args["name"],)


def _name_and_id(request: _Request) -> tuple[Any, ...]:
    return request.args["name"], request.args["instance_id"]


def _new_instance(request: _Request) -> tuple[Any, ...]:
    body = request.body()
    new = {} if body is None else _keys(body, {"instance_id", "id", "params"})
    instance_id, other = _id(new.get("instance_id")), _id(new.get("id"))
    if instance_id is not None and other is not None:
        raise _Unread
    return (
        request.args["name"],
        instance_id if instance_id is not None else other,
        new.get("params"),
    )


def _batch(request: _Request) -> tuple[Any, ...]:
    items = request.body()
    if isinstance(items, dict):  # an object form: the service reads it (and refuses it)
        return request.args["name"], items
    if not isinstance(items, list) or len(items) > MAX_BATCH:
        raise _Unread
    if not all(isinstance(item, dict) for item in items):
        raise _Unread
    return request.args["name"], items


def _listing(request: _Request) -> tuple[Any, ...]:
    status = request.query("status")
    if status is not None and status not in _STATUSES:
        raise _Unread
    limit = request.number("limit")
    status_value = None if status is None else InstanceStatus(status)
    return request.args["name"], status_value, request.query("cursor"), limit


def _delete_batch(request: _Request) -> tuple[Any, ...]:
    ids = _keys(request.body(), {"ids"}).get("ids")
    if not isinstance(ids, list) or len(ids) > MAX_DELETE_BATCH:
        raise _Unread
    if not all(isinstance(i, str) for i in ids):
        raise _Unread
    return request.args["name"], ids


def _page(request: _Request) -> tuple[Any, ...]:
    args = request.args
    return args["name"], args["instance_id"], request.query("cursor"), request.number("limit")


def _subscription(request: _Request) -> tuple[Any, ...]:
    limit, wait = request.number("limit"), request.number("wait")
    args = request.args
    cursor, types = request.query("cursor"), request.query("types")
    return args["name"], args["instance_id"], cursor, types, wait, limit


def _step(request: _Request) -> tuple[Any, ...]:
    count = request.number("count")
    return request.args["name"], request.args["instance_id"], request.args["step_name"], count


def _from_step(value: Any) -> dict[str, object] | None:
    if value is None:
        return None
    step = _keys(value, {"name", "count", "type"})
    name, count, kind = step.get("name"), step.get("count", 1), step.get("type")
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_STEP_NAME:
        raise _Unread
    if type(count) is not int or not 1 <= count <= 2**31:
        raise _Unread
    if kind is not None and (not isinstance(kind, str) or kind not in _STEP_TYPES):
        raise _Unread
    return {"name": name, "count": count, "type": kind}


def _status_change(request: _Request) -> tuple[Any, ...]:
    change = _keys(request.body(), {"status", "from_step", "rollback"})
    status, rollback = change.get("status"), change.get("rollback", False)
    from_step = _from_step(change.get("from_step"))
    if not isinstance(status, str) or status not in _ACTIONS or not isinstance(rollback, bool):
        raise _Unread
    if (from_step is not None and status != "restart") or (rollback and status != "terminate"):
        raise _Unread
    return request.args["name"], request.args["instance_id"], status, from_step, rollback


def _event(request: _Request) -> tuple[Any, ...]:
    key = request.header("Idempotency-Key")
    payload = request.body()
    args = request.args
    return args["name"], args["instance_id"], args["event_type"], payload, key


def _nothing(request: _Request) -> tuple[Any, ...]:
    return ()


# --- the routes -----------------------------------------------------------------------------


_READERS: dict[str, Reader] = {
    "list_workflows": _nothing,
    "describe_workflow": _name,
    "create_instance": _new_instance,
    "create_batch": _batch,
    "list_instances": _listing,
    "instance_details": _name_and_id,
    "delete_instance": _name_and_id,
    "delete_batch": _delete_batch,
    "steps": _page,
    "step_output": _step,
    "history": _page,
    "subscribe": _subscription,
    "change_status": _status_change,
    "send_event": _event,
}
"""How the direct path reads each operation's request, as the resolver's models read it."""


class Route(NamedTuple):
    """A declared route (:data:`._api_routes.ROUTES`) as this path serves it: how its request
    is read and the call that answers it."""

    declared: RouteDeclaration
    read: Reader
    call: Callable[..., dict[str, Any]]

    @property
    def method(self) -> str:
        """The route's method."""
        return self.declared.method

    @property
    def rule(self) -> str:
        """The route's path, its parameters in ``<angle brackets>``."""
        return self.declared.rule

    @property
    def answer(self) -> str:
        """The name of the route's answer model (and of its shape in :mod:`._api_wire`)."""
        return self.declared.answer

    @property
    def pattern(self) -> re.Pattern[str]:
        """The resolver's pattern for the rule (matched with ``match``, anchored)."""
        groups = _PARAM.sub(lambda param: f"(?P<{param[1]}>{SEGMENT})", self.rule)
        return re.compile(f"^{groups}/*$")  # the REST resolver's: trailing slashes allowed

    @property
    def shape(self) -> re.Pattern[str]:
        """Any path of the rule's shape, whatever its segments hold (404 vs 405)."""
        return re.compile(_PARAM.sub("[^/]+", self.rule))


ROUTES: tuple[Route, ...] = tuple(
    Route(declared, _READERS[declared.operation], getattr(ops, declared.operation))
    for declared in DECLARED
)
"""Every route of the API, built from its declaration, in the order the resolver declares them."""

_MATCHERS = [(route, route.pattern) for route in ROUTES]
_SHAPES = [(route.method, route.shape) for route in ROUTES] + [
    ("GET", re.compile("/docs")),
    ("GET", re.compile(r"/openapi\.json")),
]
_OBJECT_BODIES = [(r.method, r.shape) for r in ROUTES if r.declared.object_body]


def allowed_methods(path: str) -> list[str]:
    """The methods of the routes a path of this shape is (empty: no route has it)."""
    return sorted({method for method, shape in _SHAPES if shape.fullmatch(path)})


def takes_one_object(method: str, path: str) -> bool:
    """Whether the route for ``method path`` takes one JSON object as its body."""
    return any(m == method and shape.fullmatch(path) for m, shape in _OBJECT_BODIES)


def answer(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The proxy answer to ``event``, or None to leave the request to the resolver."""
    method = str(event.get("httpMethod", "")).upper()
    path = str(event.get("path") or "")
    for route, pattern in _MATCHERS:
        found = pattern.match(path) if route.method == method else None
        if found is None:
            continue
        try:
            args = route.read(_Request(event, found.groupdict(), route.declared))
        except _Unread:
            return None
        except Exception:  # a reader's bug: nothing is written yet, and the resolver is exact
            logger().exception("the direct path could not read a request; the resolver answers")
            return None
        try:
            body = SHAPES[route.answer](route.call(*args))
        except Exception as exc:  # answered as the resolver's exception handlers answer it
            return proxy_answer(failure(exc))
        ok = route.declared.ok
        status = ok[-1] if route.answer == "BatchResultBody" and not body["created"] else ok[0]
        return proxy_answer((status, body, {}))
    return None


def proxy_answer(answer: Answer) -> dict[str, Any]:
    """A proxy-integration answer laid out as Powertools lays out a JSON ``Response``."""
    status, body, headers = answer
    return {
        "statusCode": status,
        "body": json.dumps(body, separators=(",", ":")),
        "isBase64Encoded": False,
        "multiValueHeaders": {
            key: [value] for key, value in {**headers, "Content-Type": JSON_MEDIA_TYPE}.items()
        },
    }
