"""What the API's two request paths share (see :mod:`.api`): the request's runtime, the checks
of a workflow name and an instance id, the JSON reader, and the error answers.

Nothing here imports Powertools' event handler or pydantic: the direct path
(:mod:`._api_direct`) answers every well-formed request without them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

from lambda_workflows.aws.runtime import AwsRuntime
from lambda_workflows.engine.errors import (
    ConcurrentModification,
    ConfigurationError,
    InfrastructureError,
    InstanceAlreadyExists,
    InstanceNotFound,
    InvalidInput,
    InvalidTransition,
    StepNotFound,
    UnknownWorkflow,
)
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.engine.limits import check_id
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.observability import logger

JSON_MEDIA_TYPE = "application/json"
# what a base path may be: path segments of URL-safe characters (a stage name is [\w-]+)
_BASE_PATH = re.compile(r"(/[A-Za-z0-9._~-]+)*")

Answer = tuple[int, dict[str, Any], dict[str, str]]
"""An answer before it is serialized: status code, JSON body, headers besides Content-Type."""


def strict_json(text: str) -> Any:
    """``json.loads`` that refuses NaN/Infinity, duplicate keys and absurd nesting.

    A key given twice is refused rather than resolved: parsers disagree on which value wins
    (the last, here), so a proxy or a validator in front of the API may have read the other.
    Every refusal is a ``JSONDecodeError`` (which the resolver answers with a 400).
    """

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in pairs:
            if key in found:
                raise ValueError(f"key {shown(key)} appears twice in one object; give each once")
            found[key] = value
        return found

    try:
        return json.loads(text, parse_constant=refuse, object_pairs_hook=unique)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:
        message = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise json.JSONDecodeError(message, text, 0) from None


def header(event: Mapping[str, Any], name: str) -> str | None:
    """The value of header ``name`` (lower case) in an API Gateway proxy event, whichever
    case it came in, from ``headers`` or else the last of ``multiValueHeaders``."""
    for key, value in (event.get("headers") or {}).items():
        if str(key).lower() == name and value is not None:
            return str(value)
    for key, values in (event.get("multiValueHeaders") or {}).items():
        if str(key).lower() == name and values:
            return str(values[-1])
    return None


def shown(text: str, limit: int = 40) -> str:
    """``text`` quoted for a message, escaped and cut short (never echo a whole input)."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


def base_path(event: Mapping[str, Any]) -> str:
    """The part of the URL the client called that comes before the route: ``/prod``, or "".

    API Gateway passes the URL's path as ``requestContext.path`` and the route's path as
    ``path``, its end: on a REST API's execute-api domain the stage comes first
    (``/prod/workflows``); on a custom domain, and on an HTTP API's ``$default`` stage, it does
    not (the two paths are the same). An event without ``requestContext.domainName``, which API
    Gateway always sets, was built by ``lambda-workflows dev``: it serves the API at ``/`` (its
    events still carry a stage, ``local``, and a path under it, which are in no URL).
    """
    context = event.get("requestContext")
    if not isinstance(context, Mapping) or not context.get("domainName"):
        return ""
    called = str(context.get("path") or "")
    route = str(event.get("path") or "")
    if not route or not called.endswith(route):
        return ""
    prefix = called[: len(called) - len(route)]
    return prefix if _BASE_PATH.fullmatch(prefix) else ""


# --- the request's runtime ------------------------------------------------------------------

# The runtime of the request being answered (set by the handler around each request).
RUNTIME: ContextVar[AwsRuntime] = ContextVar("runtime")


def runtime() -> AwsRuntime:
    """The runtime of the request being answered."""
    return RUNTIME.get()


def service() -> InstanceService:
    """The instance service of the request being answered."""
    return runtime().service


def workflow(name: str) -> str:
    """The workflow name; a malformed name is as unknown as an unregistered one (404)."""
    try:
        return service().check_workflow(name)
    except InvalidInput as exc:
        raise UnknownWorkflow(f"{exc}, so no workflow is registered under it") from None


def instance(name: str, instance_id: str) -> InstanceRef:
    """The instance's ref; a malformed id names no instance (404), and is never looked up."""
    known = workflow(name)
    try:
        check_id(instance_id)
    except InvalidInput as exc:
        raise InstanceNotFound(f"no instance of workflow {known!r} has this id: {exc}") from None
    return InstanceRef(known, instance_id)


# --- error answers --------------------------------------------------------------------------


def error(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> Answer:
    """``{"error": {"code", "message"}}`` with ``status``."""
    return status, {"error": {"code": code, "message": message}}, dict(headers or {})


def _domain(status: int) -> Callable[[Exception], Answer]:
    def answer(exc: Exception) -> Answer:
        return error(status, getattr(exc, "code", "error"), str(exc))

    return answer


def _storage_failed(exc: Exception) -> Answer:
    logger().warning("storage failed", extra={"error": str(exc)})
    code = getattr(exc, "code", "error")
    message = f"the store is unavailable; nothing was changed, retry shortly ({code})"
    return error(503, "storage_error", message, {"Retry-After": "1"})


def _misconfigured(exc: Exception) -> Answer:
    logger().error("the API is misconfigured", extra={"error": str(exc)})
    return error(500, getattr(exc, "code", "error"), f"the service is misconfigured: {exc}")


def _unexpected(exc: Exception) -> Answer:
    logger().exception("unexpected error in the API")
    return error(500, "internal_error", "internal error; it has been logged")


FAILURES: list[tuple[tuple[type[Exception], ...], Callable[[Exception], Answer]]] = [
    ((InvalidInput,), _domain(400)),
    ((UnknownWorkflow, InstanceNotFound, StepNotFound), _domain(404)),
    ((InstanceAlreadyExists, InvalidTransition, ConcurrentModification), _domain(409)),
    ((InfrastructureError,), _storage_failed),
    ((ConfigurationError,), _misconfigured),
    ((Exception,), _unexpected),
]
"""How a request that raised is answered, by the exception's class: the most specific class in
its MRO wins (as Powertools' resolver picks its exception handlers)."""


def failure(exc: Exception) -> Answer:
    """The answer to a request that raised ``exc`` (see :data:`FAILURES`)."""
    answers = {kind: answer for kinds, answer in FAILURES for kind in kinds}
    for kind in type(exc).__mro__:
        if kind in answers:
            return answers[kind](exc)
    return _unexpected(exc)
