"""The ApiFunction and TriggerFunction handlers on moto: a client that sends REST API proxy
events built from the samples in ``tests/events/``, and ways to see what a request wrote."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows.entrypoints import api as api_function
from lambda_workflows.entrypoints import api_models
from lambda_workflows.entrypoints import trigger as trigger_function
from lambda_workflows.entrypoints._api_common import RUNTIME
from lambda_workflows.entrypoints._api_direct import ROUTES
from lambda_workflows.entrypoints._api_resolver import app as resolver_app
from lambda_workflows.testing import WorkflowTestEnv
from tests.functional.workflows_under_test import Lifecycle

EVENTS = Path(__file__).resolve().parents[2] / "events"
WORKFLOWS = {"orders": Lifecycle}
SAMPLE_ID = "order-1001"  # the instance the api_* samples name
_NO_BODY = object()


def sample(name: str) -> dict[str, Any]:
    """A sample event from tests/events/."""
    return dict(json.loads((EVENTS / name).read_text()))


@dataclass
class Answer:
    """What the handler answered, decoded."""

    status: int
    body: Any
    headers: dict[str, str]

    @property
    def code(self) -> str | None:
        """``error.code`` of an error answer."""
        return self.body.get("error", {}).get("code") if isinstance(self.body, dict) else None

    @property
    def message(self) -> str:
        """``error.message`` of an error answer."""
        return str(self.body["error"]["message"])


@dataclass
class WriteLog:
    """Successful mutating AWS calls (conditional writes that failed wrote nothing)."""

    calls: list[str] = field(default_factory=list)

    def __call__(self, http_response: Any, model: Any, **_: Any) -> None:
        name = model.name
        mutating = name.startswith(("Put", "Update", "Delete", "BatchWrite", "Transact"))
        mutating = mutating or name.startswith(("Send", "CreateSchedule", "DeleteSchedule"))
        mutating = mutating or name == "Invoke"  # work due now: a direct invoke of the runner
        if mutating and http_response.status_code < 300:
            self.calls.append(name)


class Api:
    """Calls the real handlers against the env's moto-backed runtime."""

    def __init__(self, env: WorkflowTestEnv) -> None:
        assert env.aws is not None
        self.env = env
        self.aws = env.aws
        self.writes = WriteLog()
        # each GET is answered a second time by the resolver alone (see check_paths_agree):
        # a test that counts the calls a GET makes turns that off
        self.check_paths = True
        runtime = env.aws.runtime
        self._api = api_function.make_handler(runtime)
        self._trigger = trigger_function.make_handler(runtime)
        clients = (runtime.store.client, runtime.queue.client, runtime.wakeups.client)
        for client in (*clients, runtime.queue.direct.client):
            client.meta.events.register("after-call", self.writes)

    # --- requests -------------------------------------------------------------------------

    def send(self, event: dict[str, Any]) -> Answer:
        """Call ApiFunction's handler with a proxy event; check that its two paths agree."""
        response = self._api(event, None)
        if self.check_paths:
            check_paths_agree(self.aws.runtime, event, response)
        headers = {k: str(v) for k, v in (response.get("headers") or {}).items()}
        for key, values in (response.get("multiValueHeaders") or {}).items():
            headers[key] = ", ".join(str(v) for v in values)
        body = response.get("body")
        try:
            decoded = json.loads(body) if body else None
        except ValueError:
            decoded = body
        return Answer(int(response["statusCode"]), decoded, headers)

    def trigger(self, event: dict[str, Any]) -> dict[str, Any]:
        """Call TriggerFunction's handler with an SQS batch or an EventBridge event."""
        return self._trigger(event, None)

    def sample(self, name: str, instance_id: str | None = None) -> Answer:
        """Send a sample event, optionally about another instance than ``order-1001``."""
        event = sample(name)
        if instance_id is not None:
            event = json.loads(json.dumps(event).replace(SAMPLE_ID, instance_id))
        return self.send(event)

    def request(
        self,
        method: str,
        path: str,
        body: Any = _NO_BODY,
        *,
        raw: str | bytes | None = None,
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        base64_flag: bool | None = None,
    ) -> Answer:
        """Send a request shaped like the samples: ``body`` as JSON, or ``raw`` as is (bytes
        are sent base64-encoded); ``base64_flag`` overrides ``isBase64Encoded``."""
        event = build_event(method, path, body, raw=raw, query=query, headers=headers)
        if base64_flag is not None:
            event["isBase64Encoded"] = base64_flag
        return self.send(event)

    # --- what was written -----------------------------------------------------------------

    def table(self) -> list[dict[str, Any]]:
        """Every item of the table (a full, paginated, consistent scan), in key order."""
        client = self.aws.session.client("dynamodb")
        items: list[dict[str, Any]] = []
        for page in client.get_paginator("scan").paginate(
            TableName=self.aws.settings.table_name, ConsistentRead=True
        ):
            items.extend(page["Items"])
        return sorted(items, key=lambda i: (i["pk"]["S"], i["sk"]["S"]))

    def snapshot(self) -> list[str]:
        """Every item of the table, read inside moto, in key order.

        The same items as :meth:`table`, for tests that look after every request: a boto3 scan
        spends ~3 ms an item in moto's response serializer, this reads moto's store directly.
        """
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.dynamodb.models import dynamodb_backends

        backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][self.aws.session.region_name]
        table = backend.get_table(self.aws.settings.table_name)
        return [json.dumps(item.to_json(), sort_keys=True) for item in table.all_items()]

    def drain(self) -> list[dict[str, Any]]:
        """Take every work item posted: the direct invokes of the runner (as work messages),
        then the messages on the queue (deleting them); return their bodies."""
        bodies: list[dict[str, Any]] = []
        while (direct := self.aws.take_invoke()) is not None:
            bodies.append({"workflow": direct["workflow"], "id": direct["id"]})
        while messages := self.aws.receive():
            for message in messages:
                bodies.append(json.loads(message["Body"]))
                self.aws.sqs.delete_message(
                    QueueUrl=self.aws.settings.work_queue_url,
                    ReceiptHandle=message["ReceiptHandle"],
                )
        return bodies


def check_paths_agree(runtime: Any, event: dict[str, Any], response: dict[str, Any]) -> None:
    """The direct path answers as the resolver does (see ``entrypoints/_api_direct.py``).

    A GET changes nothing, so it is answered again by the resolver alone and both answers must
    be the same, byte for byte. Any success must be its answer model's exact dump: the model
    validates the body and dumps it again unchanged (fields, order, defaults, nothing more).
    """
    method = str(event.get("httpMethod")).upper()
    refused = api_function._check_envelope(event) or api_function._check_path(event)
    if method == "GET" and refused is None and response["statusCode"] != 503:
        token = RUNTIME.set(runtime)
        try:
            again = resolver_app.resolve(api_function._with_json_media_type(event), None)
        finally:
            RUNTIME.reset(token)
        assert again == response, f"{method} {event.get('path')}: the two paths differ"
    route = next(
        (r for r in ROUTES if r.method == method and r.pattern.match(str(event.get("path")))),
        None,
    )
    if route is not None and 200 <= response["statusCode"] < 300:
        model = getattr(api_models, route.answer)
        dumped = model.model_validate_json(response["body"]).model_dump(mode="json")
        assert json.dumps(dumped, separators=(",", ":")) == response["body"], route.answer


def build_event(
    method: str,
    path: str,
    body: Any = _NO_BODY,
    *,
    raw: str | bytes | None = None,
    query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A REST API proxy event for ``method path``, on the shape of the samples."""
    event = sample("api_create_instance.json")
    resource = "/workflows" if path == "/workflows" else "/workflows/{proxy+}"
    event["path"] = path
    event["httpMethod"] = method
    event["resource"] = resource
    event["pathParameters"] = (
        {"proxy": path.removeprefix("/workflows/")} if path.startswith("/workflows/") else None
    )
    event["requestContext"].update(path="/v1" + path, httpMethod=method, resourcePath=resource)
    event["queryStringParameters"] = query
    event["multiValueQueryStringParameters"] = {k: [v] for k, v in query.items()} if query else None
    if headers is not None:
        event["headers"] = {**event["headers"], **headers}
        event["multiValueHeaders"] = {k: [v] for k, v in event["headers"].items()}
    if isinstance(raw, bytes):
        event["body"], event["isBase64Encoded"] = base64.b64encode(raw).decode(), True
    elif raw is not None:
        event["body"], event["isBase64Encoded"] = raw, False
    else:
        event["body"] = None if body is _NO_BODY else json.dumps(body)
        event["isBase64Encoded"] = False
    return event


def as_http_api(event: dict[str, Any]) -> dict[str, Any]:
    """The event an HTTP API (payload format 1.0, the template's default) delivers for the
    request a REST API delivered as ``event``: header names in lower case, the ``$default``
    stage, which is in no path, and ``version`` 1.0 (tests/events/http_api_*.json)."""
    converted = json.loads(json.dumps(event))
    converted["version"] = "1.0"
    for headers in ("headers", "multiValueHeaders"):
        if converted.get(headers):
            converted[headers] = {str(k).lower(): v for k, v in converted[headers].items()}
    context = converted["requestContext"]
    context.pop("deploymentId", None)
    context.update(path=converted["path"], stage="$default", resourceId=None)
    return converted


@pytest.fixture(scope="module")
def module_api() -> Iterator[Api]:
    """One moto env per test module (building one takes most of a second)."""
    env = WorkflowTestEnv(WORKFLOWS, backend="aws")
    try:
        yield Api(env)
    finally:
        env.close()


@pytest.fixture
def api(module_api: Api) -> Api:
    """The module's API client, with the work queue drained and the write log cleared."""
    module_api.drain()
    module_api.writes.calls.clear()
    return module_api
