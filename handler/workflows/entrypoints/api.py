"""ApiFunction: the HTTP API of docs/semantics.md (API Gateway REST API, proxy integration).

Thin: the resolver validates each request against the models in :mod:`.api_models`, the route
calls :class:`~workflows.engine.service.InstanceService`, and the answer is shaped back into a
model. Every failure is JSON ``{"error": {"code", "message"}}``:

====  ======================  =================================================================
400   invalid_json            the body is not JSON (or not UTF-8, or bad base64), or an object
                              in it has a key twice
400   invalid_body            the body is not what the route takes at all (e.g. a string for {})
400   invalid_input           the engine refused a value: bad event type, bad cursor, params
                              over 1 MiB encoded
404   unknown_workflow        no workflow of that name (a malformed name included)
404   instance_not_found      no instance of that id (a malformed id included)
404   step_not_found          the instance recorded no such step (the message lists its steps)
404   not_found               no such route (a path segment with characters no name, id or
                              event type may hold included)
405   method_not_allowed      the route exists, not with this method (``Allow`` lists them)
409   instance_exists         the id is taken (ids are never reused)
409   invalid_transition      the instance has finished (pause, resume, terminate, events)
413   body_too_large          the body is over 1 MiB
415   unsupported_media_type  a body that is not ``application/json`` (in any letter case)
422   validation_error        a field is missing, of the wrong type, unknown, or out of range;
                              or a JSON array sent to a route that takes one object; or a
                              batch item that is not a JSON object
503   storage_error           DynamoDB or SQS failed; safe to retry
500   configuration_error     the service is misconfigured: no workflow is registered, or a
                              setting is missing; the message says what to set
500   internal_error          a bug; logged with its traceback
====  ======================  =================================================================

A request that gets a 4xx has written nothing: every check runs before the first write. The
batch routes answer for each item: an item that cannot be created (a bad id or params, an id
repeated in the batch, a taken id) or deleted (no such instance, not an id) is reported in the
answer's ``errors`` by its index and the others are done; only a body that is not a list of at
most 100 objects (``{ids: [...]}`` of at most 100 strings for a delete) is refused whole.

``GET …/instances/{id}`` leaves out each step output over 64 KiB (and any past 4 MiB of them
in all: a Lambda answer holds at most 6 MB) as ``output: null, output_truncated: true``;
``GET …/instances/{id}/steps/{step_name}?count=N`` answers with one step's output, whole.

``GET /openapi.json`` serves the OpenAPI 3.1 document; ``GET /docs`` the Swagger UI (bundled
assets, no CDN). Both name the server the request came through (see :func:`_base_path`), so
the UI's "Try it out" calls the API where it is served: ``/prod`` on the execute-api domain,
``/`` on a custom domain and in ``workflows dev``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from http import HTTPStatus
from typing import Annotated, Any, TypeVar
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from workflows.aws.runtime import AwsRuntime, get_runtime
from workflows.engine.clock import iso
from workflows.engine.errors import (
    NOTHING_REGISTERED,
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
from workflows.engine.limits import check_id
from workflows.engine.model import InstanceRef, InstanceStatus
from workflows.engine.schedules import describe_schedules
from workflows.engine.service import InstanceService
from workflows.engine.versions import workflow_names
from workflows.observability import logger
from workflows.registry import load_workflows

from ._swagger import add_swagger_ui
from ._wiring import LambdaHandler, RuntimeSource, runtime_of
from .api_models import (
    MAX_BATCH,
    BatchResultBody,
    DeleteBatchBody,
    DeleteBatchResultBody,
    Deleted,
    ErrorBody,
    EventAccepted,
    HistoryBody,
    InstanceDetails,
    InstanceHandle,
    InstanceList,
    InstanceSummary,
    JsonValue,
    NewInstanceBody,
    StatusChange,
    StepOutputBody,
    WorkflowDetails,
    WorkflowList,
)

load_workflows()  # a bad WORKFLOWS entry fails the cold start, naming it

__all__ = ["MAX_BODY_BYTES", "app", "handler", "make_handler"]

MAX_BODY_BYTES = 1024 * 1024
STEP_OUTPUT_CAP = 64 * 1024  # a step's output in an instance's answer, encoded
STEP_OUTPUTS_BUDGET = 4 * 1024 * 1024  # all of them: the answer stays under Lambda's 6 MB
API_TITLE = "Workflows"
API_VERSION = "1.0"
_JSON = "application/json"
_BODY_METHODS = {"POST", "PUT", "PATCH"}
# what a base path may be: path segments of URL-safe characters (a stage name is [\w-]+)
_BASE_PATH = re.compile(r"(/[A-Za-z0-9._~-]+)*")

_F = TypeVar("_F", bound=Callable[..., Any])


def _strict_json(text: str) -> Any:
    """``json.loads`` that refuses NaN/Infinity, duplicate keys and absurd nesting.

    A key given twice is refused rather than resolved: parsers disagree on which value wins
    (the last, here), so a proxy or a validator in front of the API may have read the other.
    The resolver turns a ``JSONDecodeError`` into a validation error (400 here); anything else
    would escape as a 500.
    """

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in pairs:
            if key in found:
                raise ValueError(f"key {_shown(key)} appears twice in one object; give each once")
            found[key] = value
        return found

    try:
        return json.loads(text, parse_constant=refuse, object_pairs_hook=unique)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:
        message = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise json.JSONDecodeError(message, text, 0) from None


def _shown(text: str, limit: int = 40) -> str:
    """``text`` quoted for a message, escaped and cut short (never echo a whole input)."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


def _base_path(event: Mapping[str, Any]) -> str:
    """The part of the URL the client called that comes before the route: ``/prod``, or "".

    API Gateway passes the URL's path as ``requestContext.path`` and the route's path as
    ``path``, its end: on the execute-api domain the stage comes first (``/prod/workflows``),
    on a custom domain it does not. An event without ``requestContext.domainName``, which API
    Gateway always sets, was built by ``workflows dev``: it serves the API at ``/`` (its events
    still carry a stage, ``local``, and a path under it, which are in no URL).
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


class _Resolver(APIGatewayRestResolver):
    """The REST API resolver, with the Swagger UI's server found by :func:`_base_path`.

    Powertools takes a stage from ``requestContext`` whenever ``requestContext.path`` starts
    with it, which gives ``/local`` in ``workflows dev``, where nothing is served.
    """

    def _get_base_path(self) -> str:
        return _base_path(self.current_event.raw_event)


app = _Resolver(enable_validation=True, json_body_deserializer=_strict_json)
app.configure_openapi(
    title=API_TITLE,
    version=API_VERSION,
    description=(
        "Create, inspect and control durable workflow instances (the model of Cloudflare "
        "Workflows). Every error answer is {error: {code, message}}."
    ),
)
add_swagger_ui(app, "/docs", lambda: _base_path(app.current_event.raw_event) or "/")

# path pattern → methods, to tell "no such route" (404) from "wrong method" (405); every
# pattern here is applied with fullmatch
_ROUTES: dict[re.Pattern[str], set[str]] = {
    re.compile("/docs"): {"GET"},
    re.compile(r"/openapi\.json"): {"GET"},
}
# (method, path pattern) of the routes whose body is one JSON object
_OBJECT_BODIES: list[tuple[str, re.Pattern[str]]] = []
_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _route(
    method: str,
    rule: str,
    *,
    ok: tuple[int, ...] = (200,),
    fails: tuple[int, ...] = (),
    object_body: bool = False,
    **options: Any,
) -> Callable[[_F], _F]:
    """Register ``rule`` on the resolver and remember its method (404 vs 405).

    ``ok`` are the success codes, documented with the route's return model; ``fails`` the error
    codes, documented with :class:`ErrorBody` (so are 422, which validation may always answer,
    and 503, which any store call may). ``object_body``: the body is one JSON object, and a
    JSON array is refused before validation (which would otherwise validate its first item).
    """
    segments = ("[^/]+" if s.startswith("<") else re.escape(s) for s in rule.split("/"))
    pattern = re.compile("/".join(segments))
    _ROUTES.setdefault(pattern, set()).add(method)
    if object_body:
        _OBJECT_BODIES.append((method, pattern))
    responses: dict[int, OpenAPIResponse] = {
        code: {"description": HTTPStatus(code).phrase} for code in ok
    }  # no content: the resolver documents the return annotation
    for code in sorted({*fails, 422, 503}):
        responses[code] = {
            "description": HTTPStatus(code).phrase,
            "content": {_JSON: {"model": ErrorBody}},
        }
    decorator: Callable[[_F], _F] = app.route(
        rule, method, responses=responses, status_code=ok[0], **options
    )
    return decorator


# --- the routes ---------------------------------------------------------------------------

WorkflowName = Annotated[str, Path(description="A registered workflow's name.")]
InstanceId = Annotated[str, Path(description="The instance's id.")]


@_route("GET", "/workflows", summary="List the registered workflows", tags=["workflows"])
def list_workflows() -> WorkflowList:
    """The names of the registered workflows."""
    workflows = _runtime().workflows
    if not workflows:
        raise ConfigurationError(NOTHING_REGISTERED)
    names = workflow_names(workflows)  # orders@1 is a version of orders, not a workflow
    versions = {name: _service().describe(name).versions for name in names}
    return WorkflowList.model_validate({"workflows": names, "versions": versions})


@_route(
    "GET",
    "/workflows/<name>",
    summary="Describe a workflow: its class and its instances by status",
    tags=["workflows"],
    fails=(404,),
)
def describe_workflow(name: WorkflowName) -> WorkflowDetails:
    """The workflow's class and module, the first paragraph of its docstring, how many of
    its instances have each status, and its recurring schedules with their next firings."""
    details = _service().describe(_workflow(name)).to_dict()
    runtime = _runtime()
    details["schedules"] = describe_schedules(
        name, runtime.workflows.get(name), runtime.clock.time()
    )
    return WorkflowDetails.model_validate(details)


@_route(
    "POST",
    "/workflows/<name>/instances",
    summary="Create an instance",
    tags=["instances"],
    ok=(201,),
    fails=(400, 404, 409, 413, 415),
    object_body=True,
)
def create_instance(
    name: WorkflowName,
    new: Annotated[
        NewInstanceBody | None, Body(description="Omit for a generated id, no params.")
    ] = None,
) -> InstanceHandle:
    """Create an instance and queue its first run; a taken id is a 409."""
    new = new or NewInstanceBody()
    record = _service().create(_workflow(name), new.requested_id, new.params)
    return InstanceHandle(id=record.id, status=record.status)


@_route(
    "POST",
    "/workflows/<name>/instances/batch",
    summary="Create up to 100 instances",
    description=(
        "Each item is created, or reported in errors by its index with a code: invalid_input "
        "(its id, params or keys are not valid), duplicate_id (an earlier item of the batch "
        "has its id) or instance_exists (its id is taken). So the same batch sent again "
        "creates nothing. 201 when something was created, 200 when nothing was. A body that "
        "is not a list of at most 100 JSON objects is refused whole, and creates nothing."
    ),
    tags=["instances"],
    ok=(201, 200),
    fails=(400, 404, 413, 415),
)
def create_batch(
    name: WorkflowName,
    items: Annotated[
        list[dict[str, Any]],
        Body(
            max_length=MAX_BATCH,
            description="At most 100 items, each one as POST .../instances takes it.",
            # each item is validated by the service, which reports a bad one in errors[]
            # rather than refusing the batch; the document still shows what an item should be
            json_schema_extra={"items": {"$ref": "#/components/schemas/NewInstanceBody"}},
        ),
    ],
) -> Response[BatchResultBody]:
    """Create many instances at once."""
    result = _service().create_batch(_workflow(name), items)
    answer = BatchResultBody.model_validate(result.to_dict())
    status = HTTPStatus.CREATED if answer.created else HTTPStatus.OK
    return Response(status_code=status, content_type=_JSON, body=answer)


@_route(
    "GET",
    "/workflows/<name>/instances",
    summary="List a workflow's instances",
    tags=["instances"],
    fails=(400, 404),
)
def list_instances(
    name: WorkflowName,
    status: Annotated[InstanceStatus | None, Query(description="Only this status.")] = None,
    cursor: Annotated[str | None, Query(description="From the previous page.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="Page size.")] = 50,
) -> InstanceList:
    """One page of instances, newest first."""
    page = _service().list(_workflow(name), status, cursor, limit)
    rows = [
        InstanceSummary(
            id=r.id, status=r.status, created=iso(r.created_at), finished=iso(r.finished_at)
        )
        for r in page.records
    ]
    return InstanceList(instances=rows, cursor=page.cursor)


@_route(
    "GET",
    "/workflows/<name>/instances/<instance_id>",
    summary="An instance's status, output, error and steps",
    tags=["instances"],
    fails=(404,),
)
def get_instance(name: WorkflowName, instance_id: InstanceId) -> InstanceDetails:
    """Status, output, error and the step timeline (large step outputs left out: see
    ``output_truncated``)."""
    view = _service().status(_instance(name, instance_id))
    return InstanceDetails.model_validate(_capped(view.to_dict()))


def _capped(details: dict[str, Any]) -> dict[str, Any]:
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


@_route(
    "DELETE",
    "/workflows/<name>/instances/<instance_id>",
    summary="Delete an instance",
    description=(
        "Removes the instance, its journal, events and pending wake-ups; a running or waiting "
        "instance is terminated first. A missing instance (never created, or already deleted) "
        "is a 404, and nothing changes."
    ),
    tags=["instances"],
    fails=(404,),
)
def delete_instance(name: WorkflowName, instance_id: InstanceId) -> Deleted:
    """Delete one instance."""
    ref = _instance(name, instance_id)
    _service().delete(ref)
    return Deleted(id=ref.id, deleted=True)


@_route(
    "POST",
    "/workflows/<name>/instances/delete",
    summary="Delete up to 100 instances",
    description=(
        "Each id is deleted, or reported in errors by its index with a code: not_found (no "
        "instance has it) or invalid_input (it is not an instance id). An id given twice is "
        "deleted once and answered at each position. A body that is not {ids: [at most 100 "
        "strings]} is refused whole, and deletes nothing."
    ),
    tags=["instances"],
    fails=(400, 404, 413, 415),
    object_body=True,
)
def delete_batch(
    name: WorkflowName, batch: Annotated[DeleteBatchBody, Body()]
) -> DeleteBatchResultBody:
    """Delete many instances at once."""
    result = _service().delete_batch(_workflow(name), batch.ids)
    return DeleteBatchResultBody.model_validate(result.to_dict())


@_route(
    "GET",
    "/workflows/<name>/instances/<instance_id>/steps/<step_name>",
    summary="One step's whole recorded output",
    description=(
        "The step's name (percent-encoded in the path, as HTTP clients send it), type, status "
        'and whole output: a do step\'s result ("[REDACTED]" if sensitive), the payload a '
        "waitForEvent step received. A step that is not recorded is a 404 step_not_found "
        "naming the recorded steps."
    ),
    tags=["instances"],
    fails=(404,),
)
def get_step_output(
    name: WorkflowName,
    instance_id: InstanceId,
    step_name: Annotated[str, Path(description="The step's name, percent-encoded.")],
    count: Annotated[
        int, Query(ge=1, description="Its occurrence: 1 for the first call with this name.")
    ] = 1,
) -> StepOutputBody:
    """One step's output, not capped as in the instance's answer."""
    ref = _instance(name, instance_id)
    output = _service().step_output(ref, unquote(step_name), count)
    return StepOutputBody.model_validate(output.to_dict())


@_route(
    "GET",
    "/workflows/<name>/instances/<instance_id>/history",
    summary="An instance's recorded history, to replay against new code",
    description=(
        "Params, version, status and every journal entry and event of the instance, in the "
        "documented history format (workflows-history, format_version 1), as workflows "
        "instances export writes it; workflows.testing.Replayer replays it. A sensitive step's "
        'result is "[REDACTED]": a replay needs the steps\' names, kinds and order only.'
    ),
    tags=["instances"],
    fails=(404,),
)
def get_history(name: WorkflowName, instance_id: InstanceId) -> HistoryBody:
    """The instance's history in the export format."""
    history = _service().history(_instance(name, instance_id))
    return HistoryBody.model_validate(history.to_dict())


@_route(
    "PATCH",
    "/workflows/<name>/instances/<instance_id>/status",
    summary="Pause, resume, terminate or restart an instance",
    tags=["instances"],
    fails=(400, 404, 409, 413, 415),
    object_body=True,
)
def change_status(
    name: WorkflowName, instance_id: InstanceId, change: Annotated[StatusChange, Body()]
) -> InstanceHandle:
    """Apply the action; finished instances can only be restarted (409 otherwise)."""
    ref = _instance(name, instance_id)
    service = _service()
    if change.status == "terminate":
        record = service.terminate(ref, rollback=change.rollback)
    elif change.from_step is not None:
        record = service.restart(ref, from_step=change.from_step.selector())
    else:
        actions = {"pause": service.pause, "resume": service.resume, "restart": service.restart}
        record = actions[change.status](ref)
    return InstanceHandle(id=record.id, status=record.status)


@_route(
    "POST",
    "/workflows/<name>/instances/<instance_id>/events/<event_type>",
    summary="Send an event to an instance",
    description="Buffered until the instance's next wait_for_event of this type.",
    tags=["instances"],
    ok=(202,),
    fails=(400, 404, 409, 413, 415),
)
def send_event(
    name: WorkflowName,
    instance_id: InstanceId,
    event_type: Annotated[str, Path(description="The type wait_for_event waits for.")],
    payload: Annotated[
        JsonValue, Body(description="Any JSON (≤ 1 MiB); empty body = null.")
    ] = None,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            description=(
                "Makes retries safe: a second send with the same key (same rules as an "
                "instance id) stores nothing and answers with the event stored the first time."
            ),
        ),
    ] = None,
) -> EventAccepted:
    """Record the event and wake the instance if it is idle."""
    ref = _instance(name, instance_id)
    event = _service().send_event(ref, event_type, payload, key=idempotency_key)
    return EventAccepted(instance_id=ref.id, type=event.type, event_id=event.id)


@app.get("/openapi.json", include_in_schema=False)
def openapi_document() -> Response[str]:
    """The OpenAPI 3.1 document of this API, naming the server it is served from."""
    # Powertools' OpenAPI models are the heaviest import of this module: only this route
    # (and the document it builds) needs them, so a cold start does not load them.
    from aws_lambda_powertools.event_handler.openapi.models import Server

    server = Server(url=_base_path(app.current_event.raw_event) or "/")
    document = app.get_openapi_json_schema(servers=[server])
    return Response(status_code=200, content_type=_JSON, body=document)


# The runtime of the request being resolved (set by the handler around each request).
_RUNTIME: ContextVar[AwsRuntime] = ContextVar("runtime")


def _runtime() -> AwsRuntime:
    return _RUNTIME.get()


def _service() -> InstanceService:
    return _runtime().service


def _workflow(name: str) -> str:
    """The workflow name; a malformed name is as unknown as an unregistered one (404)."""
    try:
        return _service().check_workflow(name)
    except InvalidInput as exc:
        raise UnknownWorkflow(f"{exc}, so no workflow is registered under it") from None


def _instance(name: str, instance_id: str) -> InstanceRef:
    """The instance's ref; a malformed id names no instance (404), and is never looked up."""
    workflow = _workflow(name)
    try:
        check_id(instance_id)
    except InvalidInput as exc:
        raise InstanceNotFound(f"no instance of workflow {workflow!r} has this id: {exc}") from None
    return InstanceRef(workflow, instance_id)


# --- errors -------------------------------------------------------------------------------


def _error(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> Response[dict[str, Any]]:
    return Response(
        status_code=status,
        content_type=_JSON,
        body={"error": {"code": code, "message": message}},
        headers=dict(headers or {}),
    )


def _domain(status: int) -> Callable[[Exception], Response[dict[str, Any]]]:
    def answer(exc: Exception) -> Response[dict[str, Any]]:
        return _error(status, getattr(exc, "code", "error"), str(exc))

    return answer


def _storage_failed(exc: InfrastructureError) -> Response[dict[str, Any]]:
    logger().warning("storage failed", extra={"error": str(exc)})
    message = f"the store is unavailable; nothing was changed, retry shortly ({exc.code})"
    return _error(503, "storage_error", message, {"Retry-After": "1"})


def _invalid_request(exc: RequestValidationError) -> Response[dict[str, Any]]:
    """Malformed JSON and a body of the wrong kind are 400; a bad field is 422."""
    errors = list(exc.errors())
    for error in errors:
        if error.get("type") == "json_invalid":
            reason = (error.get("ctx") or {}).get("error", "malformed")
            return _error(400, "invalid_json", f"the body is not valid JSON ({reason})")
    whole = [e for e in errors if tuple(e.get("loc", ())) == ("body",)]
    if whole:
        return _error(
            400, "invalid_body", f"the body is not what this route takes: {_describe(whole)}"
        )
    return _error(422, "validation_error", _describe(errors))


def _describe(errors: list[Any]) -> str:
    """``where: what`` for the first few validation errors (never echoing the input)."""
    parts = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "request"
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        if error.get("type") == "string_pattern_mismatch":
            message = "may only contain letters, digits, '-' and '_', and must not start with '-'"
        elif error.get("type") == "dict_type":
            message = "must be a JSON object"
        parts.append(f"{where}: {message}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more


def _unsupported_media(exc: RequestUnsupportedContentType) -> Response[dict[str, Any]]:
    return _error(415, "unsupported_media_type", "send the body as Content-Type: application/json")


def _no_route(exc: NotFoundError) -> Response[dict[str, Any]]:
    """404 for a path no route has; 405 (with ``Allow``) for a path served by other methods."""
    method = app.current_event.http_method.upper()
    path = app.current_event.path
    allowed = sorted({m for p, ms in _ROUTES.items() if p.fullmatch(path) for m in ms})
    if method in allowed:  # the route exists, but the resolver routes no segment like this one
        return _error(
            404,
            "not_found",
            f"no route {method} {path}: a path segment holds characters that no workflow name, "
            "instance id or event type may hold (only letters, digits, '-' and '_')",
        )
    if allowed:
        return _error(
            405,
            "method_not_allowed",
            f"{method} is not allowed on {path}; use {', '.join(allowed)}",
            {"Allow": ", ".join(allowed)},
        )
    return _error(404, "not_found", f"no route {method} {path}; see /docs for the API")


def _misconfigured(exc: ConfigurationError) -> Response[dict[str, Any]]:
    logger().error("the API is misconfigured", extra={"error": str(exc)})
    return _error(500, exc.code, f"the service is misconfigured: {exc}")


def _unexpected(exc: Exception) -> Response[dict[str, Any]]:
    logger().exception("unexpected error in the API")
    return _error(500, "internal_error", "internal error; it has been logged")


# The resolver picks the handler of the most specific class in the exception's MRO.
_ANSWERS: list[tuple[type[Exception] | list[type[Exception]], Callable[..., Any]]] = [
    (InvalidInput, _domain(400)),
    ([UnknownWorkflow, InstanceNotFound, StepNotFound], _domain(404)),
    ([InstanceAlreadyExists, InvalidTransition, ConcurrentModification], _domain(409)),
    (InfrastructureError, _storage_failed),
    (ConfigurationError, _misconfigured),
    (RequestValidationError, _invalid_request),
    (RequestUnsupportedContentType, _unsupported_media),
    (NotFoundError, _no_route),
    (Exception, _unexpected),
]
for _raised, _answer in _ANSWERS:
    app.exception_handler(_raised)(_answer)


# --- the Lambda entry point ---------------------------------------------------------------


def make_handler(runtime: RuntimeSource) -> LambdaHandler:
    """The Lambda entry point (API Gateway REST API proxy event, payload v1), on ``runtime``."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        rejected = _check_envelope(event) or _check_path(event) or _check_body_shape(event)
        if rejected is not None:
            return rejected
        try:
            token = _RUNTIME.set(runtime_of(runtime))
        except ConfigurationError as exc:
            logger().error("the API is misconfigured", extra={"error": str(exc)})
            return _proxy_answer(500, exc.code, f"the service is misconfigured: {exc}")
        except Exception:
            logger().exception("could not build the runtime")
            return _proxy_answer(500, "internal_error", "internal error; it has been logged")
        try:
            return app.resolve(_with_json_media_type(event), context)
        except Exception:  # the resolver's own handlers failed: still answer in our shape
            logger().exception("unexpected error resolving the request")
            return _proxy_answer(500, "internal_error", "internal error; it has been logged")
        finally:
            _RUNTIME.reset(token)

    return handler


handler = make_handler(get_runtime)


def _check_envelope(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Refuse, before routing, a body that is too large, badly encoded or not JSON.

    Size comes first for every request (as API Gateway's own payload limit does). Media type
    and encoding only matter for the methods that carry a body here; the media type is checked
    even when the body is empty, because the resolver would parse a form or multipart body.
    """
    body = event.get("body") or ""
    if not isinstance(body, str):
        return _proxy_answer(400, "invalid_body", "the body must be text")
    if body and event.get("isBase64Encoded"):
        if len(body) > (MAX_BODY_BYTES * 4) // 3 + 4:
            return _too_large()
        try:
            raw = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            return _proxy_answer(400, "invalid_body", "the body is not valid base64")
    else:
        raw = body.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_BODY_BYTES:
        return _too_large()
    if str(event.get("httpMethod", "")).upper() not in _BODY_METHODS:
        return None
    content_type = _header(event, "content-type")
    if content_type and content_type.split(";")[0].strip().lower() != _JSON:
        return _proxy_answer(
            415,
            "unsupported_media_type",
            f"Content-Type {content_type!r} is not supported; send JSON with Content-Type: "
            "application/json (or no Content-Type)",
        )
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return _proxy_answer(400, "invalid_json", "the body is not valid UTF-8")
    return None


def _check_path(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Refuse a path with a control character: no name, id or event type holds one.

    Checked here because the resolver matches routes with ``$``, which also matches before a
    trailing newline: ``.../events/approved\\n`` would reach the route as ``approved``.
    """
    path = str(event.get("path") or "")
    if not _CONTROL_CHARACTER.search(path):
        return None
    method = str(event.get("httpMethod", "")).upper()
    return _proxy_answer(
        404,
        "not_found",
        f"no route {method} {_shown(path, 200)}: the path holds a control character; workflow "
        "names, instance ids and event types may only contain letters, digits, '-' and '_'",
    )


def _check_body_shape(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Refuse a JSON array sent to a route that takes one object, before anything reads it.

    The resolver would validate the array's first item as the body and ignore the rest. Only
    a body that starts like an array is parsed here; malformed JSON is left to the resolver,
    which says what is wrong with it.
    """
    method = str(event.get("httpMethod", "")).upper()
    path = str(event.get("path") or "")
    if not any(m == method and p.fullmatch(path) for m, p in _OBJECT_BODIES):
        return None
    text = _body_text(event)
    if not text.lstrip(" \t\r\n").startswith("["):
        return None
    try:
        _strict_json(text)
    except ValueError:
        return None
    return _proxy_answer(
        422,
        "validation_error",
        "the body is not what this route takes: it is a JSON array, and this route takes one "
        "JSON object (to create many instances, POST the array to .../instances/batch)",
    )


def _body_text(event: Mapping[str, Any]) -> str:
    """The body as text (after :func:`_check_envelope` accepted it)."""
    body = str(event.get("body") or "")
    if body and event.get("isBase64Encoded"):
        return base64.b64decode(body).decode("utf-8")
    return body


def _with_json_media_type(event: dict[str, Any]) -> dict[str, Any]:
    """The event with a JSON ``Content-Type`` spelled ``application/json``.

    Media types are case-insensitive (RFC 9110) and :func:`_check_envelope` has accepted this
    one, but the resolver compares it letter for letter and refuses ``APPLICATION/JSON``.
    """
    content_type = _header(event, "content-type")
    if content_type is None or content_type.split(";")[0].strip().lower() != _JSON:
        return event
    single = {
        k: v for k, v in (event.get("headers") or {}).items() if str(k).lower() != "content-type"
    }
    normalized = {**event, "headers": {**single, "Content-Type": _JSON}}
    if event.get("multiValueHeaders"):
        multi = {
            k: v for k, v in event["multiValueHeaders"].items() if str(k).lower() != "content-type"
        }
        normalized["multiValueHeaders"] = {**multi, "Content-Type": [_JSON]}
    return normalized


def _too_large() -> dict[str, Any]:
    return _proxy_answer(
        413,
        "body_too_large",
        f"the body is over {MAX_BODY_BYTES:,} bytes (1 MiB); store large data elsewhere "
        "(e.g. S3) and pass a reference",
    )


def _header(event: Mapping[str, Any], name: str) -> str | None:
    for key, value in (event.get("headers") or {}).items():
        if str(key).lower() == name and value is not None:
            return str(value)
    for key, values in (event.get("multiValueHeaders") or {}).items():
        if str(key).lower() == name and values:
            return str(values[-1])
    return None


def _proxy_answer(status: int, code: str, message: str) -> dict[str, Any]:
    """A proxy-integration answer built without the resolver (envelope checks, last resort)."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": _JSON},
        "multiValueHeaders": {},
        "body": json.dumps({"error": {"code": code, "message": message}}),
        "isBase64Encoded": False,
    }
