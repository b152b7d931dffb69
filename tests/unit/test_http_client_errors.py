"""The client's HTTP mode turns each error answer into the exception the direct mode raises (the
answers no instance call has an exception for into UnexpectedAnswer), from a server that
answers as the API, API Gateway or something else at that URL would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import Workflow
from lambda_workflows.engine.errors import (
    ConcurrentModification,
    ConfigurationError,
    InfrastructureError,
    InstanceNotFound,
    UnknownWorkflow,
    WorkflowError,
)
from lambda_workflows.http_service import ApiUnavailable, UnexpectedAnswer

from .http_recorder import Recorder, recording_server


def api_error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with recording_server() as server:
        yield server


@pytest.mark.parametrize(
    ("status", "body", "raised", "said"),
    [
        (404, api_error("unknown_workflow", "no workflow 'x'"), UnknownWorkflow, "no workflow"),
        (404, api_error("instance_not_found", "no 'o-1'"), InstanceNotFound, "no 'o-1'"),
        (409, api_error("conflict", "changing too fast"), ConcurrentModification, "too fast"),
        (503, api_error("storage_error", "retry shortly"), ApiUnavailable, "retry shortly"),
        (429, {"message": "Too Many Requests"}, ApiUnavailable, "Too Many Requests"),
        (504, {"message": "Endpoint request timed out"}, ApiUnavailable, "timed out"),
        (500, api_error("configuration_error", "set WORKFLOWS"), ConfigurationError, "WORKFLOWS"),
        (500, api_error("internal_error", "it has been logged"), UnexpectedAnswer, "logged"),
        (403, {"message": "Missing Authentication Token"}, UnexpectedAnswer, "execute-api"),
        (404, api_error("not_found", "no route GET /x"), UnexpectedAnswer, "base URL"),
    ],
)
def test_an_error_answer_is_the_engines_exception(
    recorder: Recorder,
    status: int,
    body: dict[str, Any],
    raised: type[WorkflowError],
    said: str,
) -> None:
    # GIVEN a server that answers the next request with this error
    recorder.answer = (status, body)

    # WHEN the client reads an instance there
    with pytest.raises(raised) as caught:
        Workflow("orders", url=recorder.url).get("o-1")

    # THEN the exception is the engine's, and says what the server said (and what to check)
    assert said in str(caught.value)
    if raised is ApiUnavailable:
        assert isinstance(caught.value, InfrastructureError)  # retryable, as in the direct mode
    if isinstance(caught.value, UnexpectedAnswer):
        assert caught.value.status == status


def test_a_status_this_client_does_not_know_is_listed_as_unknown(
    recorder: Recorder,
) -> None:
    # GIVEN a listing row whose status a newer server added
    recorder.answer = (200, {"instances": [{"id": "o-1", "status": "archived"}], "cursor": None})

    # WHEN it is listed, THEN the row is there, its status unknown rather than an error
    [record] = Workflow("orders", url=recorder.url).list().records
    assert (record.id, record.status) == ("o-1", "unknown")
