"""Every route of the HTTP API, declared once: its method and path, the call that answers it
(:mod:`._api_ops`), what it reads from the query, the body model it takes, the answer model it
answers with, its success and error codes, and what the OpenAPI document says of it.

Both request paths are built from this table. The resolver (:mod:`._api_resolver`) registers
each route with the method, rule, codes and words given here, and builds each query
parameter's bounds and description from :data:`ROUTES`; the direct path (:mod:`._api_direct`)
matches, reads and answers each route from it. tests/functional/api/test_route_table.py derives
the OpenAPI operations from this table and checks them against the document the resolver serves.

It imports nothing heavier than the engine's limits: a cold start reads it.
"""

from __future__ import annotations

from typing import NamedTuple

from lambda_workflows.engine.instances.pages import MAX_PAGE, STEPS_PAGE
from lambda_workflows.engine.instances.subscription import MAX_WAIT


class QueryParameter(NamedTuple):
    """A query parameter: an integer when it has bounds, else a string (or a status)."""

    name: str
    description: str
    default: int | None = None
    low: int | None = None
    high: int | None = None


class RouteDeclaration(NamedTuple):
    """One route of the API, as both request paths serve it and the document shows it."""

    method: str
    rule: str
    operation: str  # the function of ._api_ops that answers it, and the resolver's handler
    handler: str  # the resolver's function: the document's operationId is built from it
    answer: str  # the answer model's name (._api_answers), also the direct path's shape
    summary: str
    tag: str  # the document groups the routes by it
    ok: tuple[int, ...] = (200,)
    fails: tuple[int, ...] = ()
    body: str | None = None  # the request body model's name, when it takes one
    object_body: bool = False  # the body is one JSON object (an array is a 422)
    queries: tuple[QueryParameter, ...] = ()
    description: str | None = None

    def query(self, name: str) -> QueryParameter:
        """The query parameter ``name`` of this route."""
        return next(query for query in self.queries if query.name == name)


_W = "/workflows/<name>"
_I = _W + "/instances/<instance_id>"
_CURSOR = QueryParameter("cursor", "The cursor of the previous page (none for the first).")
_PAGE_LIMIT = QueryParameter(
    "limit",
    "At most this many items (the page also ends at 512 KiB).",
    STEPS_PAGE,
    1,
    MAX_PAGE,
)

_BATCH = (
    "The body is a list of at most 100 items {id?, params?} (each as POST .../instances "
    "takes it), or one of Cloudflare's object forms: {count, params?} creates count (1 to "
    "100) instances with generated ids, all with params; {instances: [...]} is the same as "
    "the list. Each item is created, or reported in errors by its index with a code: "
    "invalid_input (its id, params or keys are not valid), duplicate_id (an earlier item "
    "of the batch has its id) or instance_exists (its id is taken). So the same batch sent "
    "again creates nothing. 201 when something was created, 200 when nothing was. A body "
    "malformed as a whole (not a list of at most 100 JSON objects, a count out of range, "
    "both count and instances, an unknown key, params over 1 MiB with count) is refused "
    "whole, and creates nothing."
)
_DELETE = (
    "Removes the instance, its journal, events and pending wake-ups; a running or waiting "
    "instance is terminated first. A missing instance (never created, or already deleted) "
    "is a 404, and nothing changes."
)
_DELETE_BATCH = (
    "Each id is deleted, or reported in errors by its index with a code: not_found (no "
    "instance has it) or invalid_input (it is not an instance id). An id given twice is "
    "deleted once and answered at each position. A body that is not {ids: [at most 100 "
    "strings]} is refused whole, and deletes nothing."
)
_STEPS = (
    "The rows of GET .../instances/{instance_id} past its first page: that answer carries "
    "at most 1,000 rows and, when there are more, steps_total and steps_cursor; pass "
    "steps_cursor here as ?cursor=, then each page's cursor, until it is null. A cursor of "
    "another instance or route is a 400 invalid_input; one handed out before the instance "
    "was restarted a 400 stale_cursor (read again from the first page)."
)
_STEP_OUTPUT = (
    "The step's name (percent-encoded in the path, as HTTP clients send it), type, status "
    'and whole output: a do step\'s result ("[REDACTED]" if sensitive), the payload a '
    "waitForEvent step received. A step that is not recorded is a 404 step_not_found "
    "naming the recorded steps."
)
_HISTORY = (
    "Params, version, status and the journal entries and events of the instance, in the "
    "documented history format (workflows-history, format_version 1), one page at a time: "
    "a page holds at most ?limit= entries and events (1,000 by default) and 512 KiB, and "
    "has a cursor when there is a next one (pass it back as ?cursor=). The pages' entries "
    "and events put end to end are the whole history, as lambda-workflows instances export "
    "writes it; lambda_workflows.testing.Replayer replays it. A sensitive step's result is "
    '"[REDACTED]": a replay needs the steps\' names, kinds and order only.'
)
_SUBSCRIBE = (
    "The instance's events after ?cursor= (from its first without one), in order: status "
    "transitions, step attempts and outputs, errors, retries, sleeps, waits, events "
    "received, rollbacks. When none is new, the request waits up to ?wait= seconds (at "
    "most 25) for one, then answers events: []. Pass the answer's cursor back for the next "
    "events; finished: true once the instance finished and all were served. ?types= keeps "
    "only those types (comma-separated). A cursor of another instance or route, or one "
    "changed, is a 400 invalid_input."
)
_EVENT = "Buffered until the instance's next wait_for_event of this type."
_BODY_FAILS = (400, 404, 409, 413, 415)

ROUTES: tuple[RouteDeclaration, ...] = (
    RouteDeclaration(
        "GET", "/workflows", "list_workflows", "list_workflows", "WorkflowList",
        "List the registered workflows", "workflows",
    ),
    RouteDeclaration(
        "GET", _W, "describe_workflow", "describe_workflow", "WorkflowDetails",
        "Describe a workflow: its class and its instances by status", "workflows",
        fails=(404,),
    ),
    RouteDeclaration(
        "POST", _W + "/instances", "create_instance", "create_instance", "InstanceHandle",
        "Create an instance", "instances", ok=(201,), fails=_BODY_FAILS,
        body="NewInstanceBody", object_body=True,
    ),
    RouteDeclaration(
        "POST", _W + "/instances/batch", "create_batch", "create_batch", "BatchResultBody",
        "Create up to 100 instances", "instances", ok=(201, 200), fails=(400, 404, 413, 415),
        body="JsonValue", description=_BATCH,
    ),
    RouteDeclaration(
        "GET", _W + "/instances", "list_instances", "list_instances", "InstanceList",
        "List a workflow's instances", "instances", fails=(400, 404),
        queries=(
            QueryParameter("status", "Only this status."),
            QueryParameter("cursor", "From the previous page."),
            # ?status= reads a bounded number of instances a page (docs/architecture.md)
            QueryParameter("limit", "Page size at most: follow the cursor until null, a page "
                           "may hold fewer (even none) and still have a next one.", 50, 1, 1000),
        ),
    ),
    RouteDeclaration(
        "GET", _I, "instance_details", "get_instance", "InstanceDetails",
        "An instance's status, output, error and steps", "instances", fails=(404,),
    ),
    RouteDeclaration(
        "DELETE", _I, "delete_instance", "delete_instance", "Deleted",
        "Delete an instance", "instances", fails=(404,), description=_DELETE,
    ),
    RouteDeclaration(
        "POST", _W + "/instances/delete", "delete_batch", "delete_batch",
        "DeleteBatchResultBody", "Delete up to 100 instances", "instances",
        fails=(400, 404, 413, 415), body="DeleteBatchBody", object_body=True,
        description=_DELETE_BATCH,
    ),
    RouteDeclaration(
        "GET", _I + "/steps", "steps", "get_steps", "StepPageBody",
        "A page of an instance's step timeline", "instances", fails=(400, 404),
        queries=(_CURSOR, _PAGE_LIMIT), description=_STEPS,
    ),
    RouteDeclaration(
        "GET", _I + "/steps/<step_name>", "step_output", "get_step_output", "StepOutputBody",
        "One step's whole recorded output", "instances", fails=(404,),
        queries=(
            QueryParameter(
                "count", "Its occurrence: 1 for the first call with this name.", 1, 1
            ),
        ),
        description=_STEP_OUTPUT,
    ),
    RouteDeclaration(
        "GET", _I + "/history", "history", "get_history", "HistoryBody",
        "An instance's recorded history, to replay against new code", "instances",
        fails=(400, 404), queries=(_CURSOR, _PAGE_LIMIT), description=_HISTORY,
    ),
    RouteDeclaration(
        "GET", _I + "/subscribe", "subscribe", "subscribe", "SubscriptionBody",
        "An instance's events: its history, then each new one (a long poll)", "instances",
        fails=(400, 404),
        queries=(
            QueryParameter("cursor", "An event's or an answer's cursor."),
            QueryParameter("types", "Only these event types (comma-separated)."),
            QueryParameter(
                "wait", "Seconds to wait for a new event (0-25).", 0, 0, MAX_WAIT
            ),
            _PAGE_LIMIT,
        ),
        description=_SUBSCRIBE,
    ),
    RouteDeclaration(
        "PATCH", _I + "/status", "change_status", "change_status", "InstanceHandle",
        "Pause, resume, terminate or restart an instance", "instances", fails=_BODY_FAILS,
        body="StatusChange", object_body=True,
    ),
    RouteDeclaration(
        "POST", _I + "/events/<event_type>", "send_event", "send_event", "EventAccepted",
        "Send an event to an instance", "instances", ok=(202,), fails=_BODY_FAILS,
        body="JsonValue", description=_EVENT,
    ),
)  # fmt: skip
"""Every route of the API, in the order the resolver declares them."""

BY_HANDLER = {route.handler: route for route in ROUTES}
"""Each route by the name of the resolver's function for it."""
