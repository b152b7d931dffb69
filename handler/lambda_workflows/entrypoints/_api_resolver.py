"""The HTTP API's Powertools resolver: the routes' declarations (what the OpenAPI document at
``GET /openapi.json`` and the Swagger UI at ``/docs`` are built from), the validation of each
request against the models of :mod:`.api_models`, and the answers to every request the direct
path (:mod:`._api_direct`) leaves to it: the documents, a request it cannot read or must
refuse (400, 404 for no route, 405, 422), and one it reads in a way it does not (a repeated
query parameter, say). Loaded on the first such request, never by a cold start.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Annotated, Any, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import ValidationError

from lambda_workflows.engine.instances.pages import STEPS_PAGE
from lambda_workflows.engine.model import InstanceStatus

from . import _api_ops as ops
from ._api_common import FAILURES, JSON_MEDIA_TYPE, Answer, base_path, strict_json
from ._api_common import error as error_answer
from ._api_direct import allowed_methods
from ._api_routes import BY_HANDLER
from ._swagger import add_swagger_ui
from .api_models import (
    BATCH_LIST,
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
    JsonValue,
    NewInstanceBody,
    StatusChange,
    StepOutputBody,
    StepPageBody,
    SubscriptionBody,
    WorkflowDetails,
    WorkflowList,
    batch_body_schema,
)

__all__ = ["API_TITLE", "API_VERSION", "app"]

API_TITLE = "Workflows"
API_VERSION = "1.0"
_JSON = JSON_MEDIA_TYPE

_F = TypeVar("_F", bound=Callable[..., Any])


class _Resolver(APIGatewayRestResolver):
    """The REST API resolver, with the Swagger UI's server found by :func:`~._api_common.base_path`.

    Powertools takes a stage from ``requestContext`` whenever ``requestContext.path`` starts
    with it, which gives ``/local`` in ``lambda-workflows dev``, where nothing is served.
    """

    def _get_base_path(self) -> str:
        return base_path(self.current_event.raw_event)


app = _Resolver(enable_validation=True, json_body_deserializer=strict_json)
app.configure_openapi(
    title=API_TITLE,
    version=API_VERSION,
    description=(
        "Create, inspect and control durable workflow instances (the model of Cloudflare "
        "Workflows). Every error answer is {error: {code, message}}."
    ),
)
add_swagger_ui(app, "/docs", lambda: base_path(app.current_event.raw_event) or "/")


def _route(function: _F) -> _F:
    """Declare ``function`` on the resolver as the route :data:`._api_routes.ROUTES` declares
    under its name, documented with its models.

    The declaration's ``ok`` codes are documented with the function's return model, its
    ``fails`` with :class:`ErrorBody` (so are 422, which validation may always answer, and 503,
    which any store call may).
    """
    declared = BY_HANDLER[function.__name__]
    responses: dict[int, OpenAPIResponse] = {
        code: {"description": HTTPStatus(code).phrase} for code in declared.ok
    }  # no content: the resolver documents the return annotation
    for code in sorted({*declared.fails, 422, 503}):
        responses[code] = {
            "description": HTTPStatus(code).phrase,
            "content": {_JSON: {"model": ErrorBody}},
        }
    decorator: Callable[[_F], _F] = app.route(
        declared.rule,
        declared.method,
        responses=responses,
        status_code=declared.ok[0],
        summary=declared.summary,
        description=declared.description,
        tags=[declared.tag],
    )
    return decorator(function)


def _query(handler: str, name: str) -> Any:
    """The query parameter ``name`` of the route of ``handler``, as :data:`.ROUTES` declares
    it: its description and its bounds."""
    declared = BY_HANDLER[handler].query(name)
    return Query(ge=declared.low, le=declared.high, description=declared.description)


# --- the routes ---------------------------------------------------------------------------

WorkflowName = Annotated[str, Path(description="A registered workflow's name.")]
InstanceId = Annotated[str, Path(description="The instance's id.")]


@_route
def list_workflows() -> WorkflowList:
    """The names of the registered workflows."""
    return WorkflowList.model_validate(ops.list_workflows())


@_route
def describe_workflow(name: WorkflowName) -> WorkflowDetails:
    """The workflow's class and module, the first paragraph of its docstring, how many of
    its instances have each status, and its recurring schedules with their next firings."""
    return WorkflowDetails.model_validate(ops.describe_workflow(name))


@_route
def create_instance(
    name: WorkflowName,
    new: Annotated[
        NewInstanceBody | None, Body(description="Omit for a generated id, no params.")
    ] = None,
) -> InstanceHandle:
    """Create an instance and queue its first run; a taken id is a 409."""
    new = new or NewInstanceBody()
    return InstanceHandle.model_validate(ops.create_instance(name, new.requested_id, new.params))


@_route
def create_batch(
    name: WorkflowName,
    body: Annotated[
        JsonValue,
        Body(
            description="A list of items, {count, params?} or {instances}.",
            # the document shows the three forms; the list form is validated below and the
            # object forms by the service (which says what is wrong with one, in a 400)
            json_schema_extra=batch_body_schema,
        ),
    ],
) -> Response[BatchResultBody]:
    """Create many instances at once."""
    items = body if isinstance(body, dict) else _batch_list(body)
    answer = BatchResultBody.model_validate(ops.create_batch(name, items))
    status = HTTPStatus.CREATED if answer.created else HTTPStatus.OK
    return Response(status_code=status, content_type=_JSON, body=answer)


def _batch_list(body: Any) -> list[dict[str, Any]]:
    """The list form, validated as the body's own type was before the object forms: a body
    that is not a list of at most 100 objects is a ``RequestValidationError`` at ``body``."""
    try:
        items: list[dict[str, Any]] = BATCH_LIST.validate_python(body)
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        raise RequestValidationError(errors, body=body) from None
    return items


@_route
def list_instances(
    name: WorkflowName,
    status: Annotated[InstanceStatus | None, _query("list_instances", "status")] = None,
    cursor: Annotated[str | None, _query("list_instances", "cursor")] = None,
    limit: Annotated[int, _query("list_instances", "limit")] = 50,
) -> InstanceList:
    """One page of instances, newest first."""
    return InstanceList.model_validate(ops.list_instances(name, status, cursor, limit))


@_route
def get_instance(name: WorkflowName, instance_id: InstanceId) -> InstanceDetails:
    """Status, output, error and the step timeline: its first 1,000 rows (and at most 512 KiB
    of them), with ``steps_total`` and ``steps_cursor`` for GET .../steps when there are more;
    large step outputs left out (see ``output_truncated``)."""
    return InstanceDetails.model_validate(ops.instance_details(name, instance_id))


@_route
def delete_instance(name: WorkflowName, instance_id: InstanceId) -> Deleted:
    """Delete one instance."""
    return Deleted.model_validate(ops.delete_instance(name, instance_id))


@_route
def delete_batch(
    name: WorkflowName, batch: Annotated[DeleteBatchBody, Body()]
) -> DeleteBatchResultBody:
    """Delete many instances at once."""
    return DeleteBatchResultBody.model_validate(ops.delete_batch(name, batch.ids))


PageCursor = Annotated[str | None, _query("get_steps", "cursor")]
PageLimit = Annotated[int, _query("get_steps", "limit")]


@_route
def get_steps(
    name: WorkflowName,
    instance_id: InstanceId,
    cursor: PageCursor = None,
    limit: PageLimit = STEPS_PAGE,
) -> StepPageBody:
    """Rows of the timeline, in run order, their large outputs left out as in the instance's
    answer."""
    return StepPageBody.model_validate(ops.steps(name, instance_id, cursor, limit))


@_route
def get_step_output(
    name: WorkflowName,
    instance_id: InstanceId,
    step_name: Annotated[str, Path(description="The step's name, percent-encoded.")],
    count: Annotated[int, _query("get_step_output", "count")] = 1,
) -> StepOutputBody:
    """One step's output, not capped as in the instance's answer."""
    return StepOutputBody.model_validate(ops.step_output(name, instance_id, step_name, count))


@_route
def get_history(
    name: WorkflowName,
    instance_id: InstanceId,
    cursor: PageCursor = None,
    limit: PageLimit = STEPS_PAGE,
) -> HistoryBody:
    """A page of the instance's history in the export format."""
    return HistoryBody.model_validate(ops.history(name, instance_id, cursor, limit))


@_route
def subscribe(
    name: WorkflowName,
    instance_id: InstanceId,
    cursor: Annotated[str | None, _query("subscribe", "cursor")] = None,
    types: Annotated[list[str] | None, _query("subscribe", "types")] = None,
    wait: Annotated[int, _query("subscribe", "wait")] = 0,
    limit: PageLimit = STEPS_PAGE,
) -> SubscriptionBody:
    """The events after the cursor, or the first new one within ``wait`` seconds."""
    return SubscriptionBody.model_validate(
        ops.subscribe(name, instance_id, cursor, types, wait, limit)
    )


@_route
def change_status(
    name: WorkflowName, instance_id: InstanceId, change: Annotated[StatusChange, Body()]
) -> InstanceHandle:
    """Apply the action; finished instances can only be restarted (409 otherwise)."""
    from_step = change.from_step.selector() if change.from_step is not None else None
    answer = ops.change_status(name, instance_id, change.status, from_step, change.rollback)
    return InstanceHandle.model_validate(answer)


@_route
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
    answer = ops.send_event(name, instance_id, event_type, payload, idempotency_key)
    return EventAccepted.model_validate(answer)


@app.get("/openapi.json", include_in_schema=False)
def openapi_document() -> Response[str]:
    """The OpenAPI 3.1 document of this API, naming the server it is served from."""
    # Powertools' OpenAPI models are the heaviest import of this module: only this route
    # (and the document it builds) needs them, so a cold start does not load them.
    from aws_lambda_powertools.event_handler.openapi.models import Server

    server = Server(url=base_path(app.current_event.raw_event) or "/")
    document = app.get_openapi_json_schema(servers=[server])
    return Response(status_code=200, content_type=_JSON, body=document)


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
    allowed = allowed_methods(path)
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


def _answering(answer: Callable[[Exception], Answer]) -> Callable[..., Any]:
    def respond(exc: Exception) -> Response[dict[str, Any]]:
        return _response(answer(exc))

    return respond


def _error(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> Response[dict[str, Any]]:
    return _response(error_answer(status, code, message, headers))


def _response(answer: Answer) -> Response[dict[str, Any]]:
    status, body, headers = answer
    return Response(status_code=status, content_type=_JSON, body=body, headers=headers)


# The resolver picks the handler of the most specific class in the exception's MRO.
for _raised, _answer in FAILURES:
    app.exception_handler(list(_raised))(_answering(_answer))
app.exception_handler(RequestValidationError)(_invalid_request)
app.exception_handler(RequestUnsupportedContentType)(_unsupported_media)
app.exception_handler(NotFoundError)(_no_route)
