"""The instance API over HTTP: what the client's HTTP mode works through.

:class:`HttpInstanceService` answers the calls a client makes of
:class:`~lambda_workflows.engine.instances.service.InstanceService` (see
:class:`~lambda_workflows.engine.instances.clients.InstanceApi`) by calling the HTTP API —
``lambda-workflows dev``, or a deployed stack's API signed with SigV4 — through
:class:`~lambda_workflows.remote.HttpApi`. Answers are rebuilt into the engine's types and error
answers into the engine's exceptions, so code written against the direct mode runs unchanged against
a URL:

=============================================  ==================================================
the API answers                                raised here
=============================================  ==================================================
404 unknown_workflow                           :class:`~lambda_workflows.UnknownWorkflow`
404 instance_not_found                         :class:`~lambda_workflows.InstanceNotFound`
404 step_not_found                             :class:`~lambda_workflows.StepNotFound`
400 stale_cursor (the instance was restarted)  ``StaleCursor`` (an ``InvalidInput``)
409 instance_exists                            :class:`~lambda_workflows.InstanceAlreadyExists`
409 invalid_transition                         :class:`~lambda_workflows.InvalidTransition`
409 conflict                                   ``ConcurrentModification``
400, 413, 415, 422 (a request it refused)      :class:`~lambda_workflows.InvalidInput`
500 configuration_error                        ``ConfigurationError``
429, 502, 503, 504, or no answer at all        :class:`ApiUnavailable` (an ``InfrastructureError``)
anything else (403 from IAM, a wrong URL)      :class:`UnexpectedAnswer`
=============================================  ==================================================

Values are encoded as the direct mode encodes them (pydantic models, dataclasses, datetimes
become JSON) and checked against the same limits before anything is sent. Only the standard
library and the engine's pure modules are imported; botocore is loaded when a request is
first signed.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from lambda_workflows.engine.instances.batch_forms import BatchBody
from lambda_workflows.engine.instances.deletion import DeleteBatchResult, check_delete_batch
from lambda_workflows.engine.instances.history import History
from lambda_workflows.engine.instances.pages import STEPS_PAGE, HistoryPage, StepPage, check_limit
from lambda_workflows.engine.instances.ports import InstancePage
from lambda_workflows.engine.instances.recorded_steps import StepOutput, StepSelector
from lambda_workflows.engine.instances.service import BatchResult
from lambda_workflows.engine.instances.subscription import SubscriptionPage, check_types, check_wait

from .api_pages import Fetch, whole_history, whole_instance
from .engine import codec
from .engine.errors import (
    ConcurrentModification,
    ConfigurationError,
    InfrastructureError,
    InstanceAlreadyExists,
    InstanceNotFound,
    InvalidInput,
    InvalidTransition,
    StaleCursor,
    StepNotFound,
    UnknownWorkflow,
    WorkflowError,
)
from .engine.limits import check_id
from .engine.model import InstanceRecord, InstanceRef, InstanceStatus, InstanceStatusView
from .remote import ApiError, ApiUnreachable, HttpApi, NoCredentials

__all__ = ["ApiUnavailable", "HttpInstanceService", "RemoteInstance", "UnexpectedAnswer"]


class ApiUnavailable(InfrastructureError):
    """The API did not answer, or answered that it cannot serve now (429, 502, 503, 504).

    Safe to retry, as the direct mode's InfrastructureError is: an answer that did not come
    may still mean the request was done, so retry a create with the same id (a second one is
    refused as InstanceAlreadyExists) and an event with the same ``key``.
    """

    code = "api_unavailable"


class UnexpectedAnswer(WorkflowError):
    """The API answered with an error the instance API has no exception for: IAM refused the
    request (403), the URL is not the API's (404 not_found), or the server failed (500).

    Attributes:
        status: the HTTP status.
        error_code: the ``error.code`` of the answer (``gateway_error`` for API Gateway's own
            answers, ``http_error`` for a body that is not the API's).
    """

    code = "unexpected_answer"

    def __init__(self, status: int, error_code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code


@dataclass(frozen=True, slots=True)
class RemoteInstance:
    """An instance as an answer of the API names it: which one, and its status then."""

    ref: InstanceRef
    status: InstanceStatus


_REFUSED: Final = {
    "invalid_input",
    "invalid_json",
    "invalid_body",
    "validation_error",
    "body_too_large",
    "unsupported_media_type",
}
_BY_CODE: Final[dict[str, Callable[[str], WorkflowError]]] = {
    "stale_cursor": StaleCursor,
    "unknown_workflow": UnknownWorkflow,
    "instance_not_found": InstanceNotFound,
    "step_not_found": StepNotFound,
    "invalid_transition": InvalidTransition,
    "conflict": ConcurrentModification,
    "configuration_error": ConfigurationError,
    **dict.fromkeys(_REFUSED, InvalidInput),
}
_RETRYABLE_STATUSES: Final = {429, 502, 503, 504}
_NO_LIMIT: Final = 2**62
_READS: Final = 3  # reads of a paged answer, when restarts keep making its cursors stale


class HttpInstanceService:
    """The instance API of one deployment, over HTTP.

    Args:
        api: the API to call (its base URL, and whether and how requests are signed).
    """

    def __init__(self, api: HttpApi) -> None:
        self.api = api

    # --- creating -------------------------------------------------------------------------

    def create(self, workflow: str, id: str | None = None, params: Any = None) -> RemoteInstance:
        """``POST /workflows/{workflow}/instances``. A taken id → InstanceAlreadyExists."""
        body: dict[str, Any] = {"params": _json(params, "params")}
        if id is not None:
            body["instance_id"] = id
        taken = InstanceRef(workflow, id) if isinstance(id, str) else None
        answer = self._call("POST", (workflow, "instances"), body, taken=taken)
        return _remote(workflow, answer)

    def create_batch(self, workflow: str, items: BatchBody) -> BatchResult:
        """``POST /workflows/{workflow}/instances/batch`` with the list or the object form:
        every item not created is in ``errors`` with its index, as in the direct mode."""
        # no size check here: the API refuses a body over 1 MiB itself (413 → InvalidInput)
        items_json = _json(items, "the batch", limit=_NO_LIMIT)
        answer = self._call("POST", (workflow, "instances", "batch"), items_json, has_body=True)
        return BatchResult(created=list(answer["created"]), errors=list(answer["errors"]))

    # --- reading --------------------------------------------------------------------------

    def get(self, ref: InstanceRef) -> RemoteInstance:
        """The instance (its id and status). Raises InstanceNotFound."""
        answer = self._call("GET", _instance(ref))  # its first page of steps is enough
        return RemoteInstance(ref, _status(answer["status"]))

    def status(self, ref: InstanceRef) -> InstanceStatusView:
        """``GET /workflows/{workflow}/instances/{id}``, rebuilt into the direct mode's view,
        with every step: the rows past the answer's first page come from ``GET …/steps``, page
        by page (read again from the start when the instance is restarted meanwhile)."""
        return InstanceStatusView.from_dict(self._whole(ref, whole_instance))

    def steps(
        self, ref: InstanceRef, cursor: str | None = None, limit: int = STEPS_PAGE
    ) -> StepPage:
        """``GET …/instances/{id}/steps?cursor=&limit=``: one page of the step timeline (the
        first, or the one after ``cursor``)."""
        query = {"cursor": cursor, "limit": check_limit(limit)}
        return StepPage.from_dict(self._call("GET", (*_instance(ref), "steps"), query=query))

    def history(self, ref: InstanceRef) -> History:
        """The instance's whole history: ``GET …/instances/{id}/history``, page by page."""
        return History.from_dict(self._whole(ref, whole_history))

    def history_page(
        self, ref: InstanceRef, cursor: str | None = None, limit: int = STEPS_PAGE
    ) -> HistoryPage:
        """``GET …/instances/{id}/history?cursor=&limit=``: one page of the history."""
        query = {"cursor": cursor, "limit": check_limit(limit)}
        answer = self._call("GET", (*_instance(ref), "history"), query=query)
        return HistoryPage(History.from_dict(answer), answer.get("cursor"))

    def subscribe(
        self,
        ref: InstanceRef,
        cursor: str | None = None,
        types: Iterable[str] | str | None = None,
        *,
        wait: float = 0.0,
    ) -> SubscriptionPage:
        """``GET …/instances/{id}/subscribe?cursor=&types=&wait=``: the events after
        ``cursor``, the request held up to ``wait`` seconds until one is new (a long poll)."""
        wanted = check_types(types)
        query = {
            "cursor": cursor,
            "types": None if wanted is None else ",".join(sorted(wanted)),
            "wait": _seconds(check_wait(wait)),
        }
        answer = self._call("GET", (*_instance(ref), "subscribe"), query=query)
        return SubscriptionPage.from_dict(answer)

    def _whole(self, ref: InstanceRef, read: Callable[[Fetch], dict[str, Any]]) -> dict[str, Any]:
        """``read`` (see :mod:`lambda_workflows.api_pages`) of the instance's pages, again from
        the first page when a restart made a cursor stale meanwhile (a few times at most)."""

        def fetch(segments: tuple[str, ...], query: Mapping[str, Any]) -> Any:
            return self._call("GET", (*_instance(ref), *segments), query=query)

        for _ in range(_READS - 1):
            with contextlib.suppress(StaleCursor):
                return read(fetch)
        return read(fetch)

    def list(
        self,
        workflow: str,
        status: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> InstancePage:
        """A page of instances, newest first, as the direct mode's page.

        A listing shows each instance's id, status, creation and finish times; the records
        carry those, and the rest of their fields are left at their defaults (``params`` is
        ``""``: read an instance's details with ``status()``).
        """
        query = {"status": status, "cursor": cursor, "limit": limit}
        answer = self._call("GET", (workflow, "instances"), query=query)
        records = [_listed(workflow, row) for row in answer["instances"]]
        return InstancePage(records, answer.get("cursor"))

    # --- controlling ----------------------------------------------------------------------

    def pause(self, ref: InstanceRef) -> RemoteInstance:
        """Pause: at once when idle, else when the running step finishes."""
        return self._change(ref, "pause")

    def resume(self, ref: InstanceRef) -> RemoteInstance:
        """Resume a paused instance."""
        return self._change(ref, "resume")

    def terminate(self, ref: InstanceRef, rollback: bool = False) -> RemoteInstance:
        """Stop for good (after its rollbacks with ``rollback=True``). A finished instance →
        InvalidTransition."""
        if not rollback:
            return self._change(ref, "terminate")
        body = {"status": "terminate", "rollback": True}
        return _remote(ref.workflow, self._call("PATCH", (*_instance(ref), "status"), body))

    def restart(
        self, ref: InstanceRef, from_step: Mapping[str, Any] | StepSelector | None = None
    ) -> RemoteInstance:
        """Run again, with the same id and params: from the top, or from a recorded step
        (``from_step={"name", "count"?, "type"?}``; one that is not recorded → InvalidInput)."""
        if from_step is None:
            return self._change(ref, "restart")
        selector = StepSelector.parse(from_step)  # refused as the direct mode refuses it
        step: dict[str, Any] = {"name": selector.name, "count": selector.count}
        if selector.type is not None:
            step["type"] = selector.type
        body = {"status": "restart", "from_step": step}
        return _remote(ref.workflow, self._call("PATCH", (*_instance(ref), "status"), body))

    def step_output(self, ref: InstanceRef, name: str, count: int = 1) -> StepOutput:
        """``GET …/instances/{id}/steps/{name}?count=N``: one step's whole recorded output.
        A step that is not recorded → StepNotFound."""
        StepSelector.parse({"name": name, "count": count}, what="step")
        answer = self._call("GET", (*_instance(ref), "steps", name), query={"count": count})
        return StepOutput.from_dict(answer)

    def delete(self, ref: InstanceRef) -> None:
        """``DELETE …/instances/{id}``. A missing instance → InstanceNotFound."""
        self._call("DELETE", _instance(ref))

    def delete_batch(self, workflow: str, ids: Sequence[str]) -> DeleteBatchResult:
        """``POST …/instances/delete``: every id is answered by its position, as in the
        direct mode."""
        body = {"ids": check_delete_batch(ids)}
        return DeleteBatchResult.from_dict(
            self._call("POST", (workflow, "instances", "delete"), body)
        )

    def send_event(
        self, ref: InstanceRef, type: str, payload: Any = None, *, key: str | None = None
    ) -> str:
        """``POST …/events/{type}``, with ``key`` as its ``Idempotency-Key``; returns the id of
        the stored event (the first one's, when ``key`` was sent before)."""
        check_id(type, what="event type")  # as the direct mode refuses it, before any request
        if key is not None:
            check_id(key, what="idempotency key")
        answer = self._call(
            "POST",
            (*_instance(ref), "events", type),
            _json(payload, "event payload"),
            headers={"Idempotency-Key": key} if key is not None else None,
            has_body=True,
        )
        return str(answer["event_id"])

    def _change(self, ref: InstanceRef, action: str) -> RemoteInstance:
        answer = self._call("PATCH", (*_instance(ref), "status"), {"status": action})
        return _remote(ref.workflow, answer)

    # --- one request ----------------------------------------------------------------------

    def _call(
        self,
        method: str,
        segments: tuple[str, ...],
        body: Any = None,
        *,
        query: Mapping[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        has_body: bool = False,
        taken: InstanceRef | None = None,
    ) -> Any:
        """One request under ``/workflows``: its JSON answer, or the engine's exception.

        ``taken``: the instance a 409 ``instance_exists`` is about (a create).
        """
        path = self.api.path("workflows", *segments, query=dict(query or {}))
        try:
            answer = self.api.request(method, path, body, headers=headers, has_body=has_body)
        except ApiError as exc:
            raise self._error(exc, taken) from None
        except NoCredentials as exc:
            raise ConfigurationError(str(exc)) from None
        except ApiUnreachable as exc:
            raise ApiUnavailable(str(exc)) from None
        return answer.body

    def _error(self, exc: ApiError, taken: InstanceRef | None) -> WorkflowError:
        """The engine's exception for an error answer (see the module's table)."""
        if exc.code == "instance_exists" and taken is not None:
            return InstanceAlreadyExists(taken.workflow, taken.id)
        known = _BY_CODE.get(exc.code)
        if known is not None:
            return known(exc.message)
        if exc.status in _RETRYABLE_STATUSES:
            return ApiUnavailable(f"{self.api.url} answered {exc.status} {exc.code}: {exc.message}")
        return UnexpectedAnswer(exc.status, exc.code, _explained(exc, self.api.url))


def _seconds(wait: float) -> int:
    """A wait as the query takes it: whole seconds (a fraction rounded up)."""
    return math.ceil(wait)


def _explained(exc: ApiError, url: str) -> str:
    """The answer's message, with what to check for the usual causes."""
    message = f"{url} answered {exc.status} {exc.code}: {exc.message}"
    if exc.status == 403:
        return (
            f"{message} (a deployed API takes requests signed with AWS credentials allowed to "
            "call execute-api:Invoke on it; check which credentials the default chain finds)"
        )
    if exc.status == 404:  # unknown_workflow and instance_not_found are mapped before
        return (
            f"{message} (is {url} the API's base URL? `lambda-workflows dev` serves it at "
            "http://127.0.0.1:8787; a stack at its ApiUrl output, which for a REST API ends "
            "with its stage, /v1)"
        )
    return message


def _json(value: Any, what: str, *, limit: int = codec.MAX_VALUE_BYTES) -> Any:
    """``value`` as plain JSON, encoded as the direct mode encodes it (same limit, same error)."""
    try:
        return json.loads(codec.encode(value, what=what, limit=limit))
    except WorkflowError as exc:
        raise InvalidInput(str(exc)) from None


def _instance(ref: InstanceRef) -> tuple[str, ...]:
    return (ref.workflow, "instances", ref.id)


def _remote(workflow: str, answer: Mapping[str, Any]) -> RemoteInstance:
    """An ``{id, status}`` answer."""
    return RemoteInstance(InstanceRef(workflow, str(answer["id"])), _status(answer["status"]))


def _listed(workflow: str, row: Mapping[str, Any]) -> InstanceRecord:
    """A row of a listing as a record (what the row does not show is left at its default)."""
    return InstanceRecord(
        workflow=workflow,
        id=str(row["id"]),
        status=_status(row["status"]),
        params="",
        created_at=_epoch(row.get("created")) or 0.0,
        finished_at=_epoch(row.get("finished")),
    )


def _status(shown: Any) -> InstanceStatus:
    """A status string; one this client does not know (a newer server's) is ``unknown``."""
    try:
        return InstanceStatus(shown)
    except ValueError:
        return InstanceStatus.UNKNOWN


def _epoch(shown: Any) -> float | None:
    """Epoch seconds for an ISO 8601 time of the API (``...Z``), or None."""
    if not isinstance(shown, str):
        return None
    return datetime.fromisoformat(shown.replace("Z", "+00:00")).timestamp()
