"""The four Lambda handlers as the driver calls them, each on the runtime of the container
that runs it (the entrypoints' ``make_handler``), and the events they take.

The handler modules are imported on first call: they read the workflow registry at import.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lambda_workflows.aws.runtime import AwsRuntime
from lambda_workflows.local.embedded import LambdaContext, sqs_event

__all__ = ["api", "api_event", "context", "runner", "sqs_event", "sweep", "trigger"]

_SAMPLE = Path(__file__).resolve().parents[1] / "events" / "api_send_event.json"
_TEMPLATE: dict[str, Any] = json.loads(_SAMPLE.read_text())


def runner(runtime: AwsRuntime, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """RunnerFunction."""
    from lambda_workflows.entrypoints.runner import make_handler

    return make_handler(runtime)(event, context)


def sweep(runtime: AwsRuntime, event: dict[str, Any], context: Any) -> dict[str, int]:
    """SweepFunction."""
    from lambda_workflows.entrypoints.sweep import make_handler

    return make_handler(runtime)(event, context)


def trigger(runtime: AwsRuntime, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """TriggerFunction."""
    from lambda_workflows.entrypoints.trigger import make_handler

    return make_handler(runtime)(event, context)


def api(runtime: AwsRuntime, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """ApiFunction."""
    from lambda_workflows.entrypoints.api import make_handler

    return make_handler(runtime)(event, context)


def context(function: str = "RunnerFunction") -> LambdaContext:
    """A Lambda context with the full 15-minute budget."""
    return LambdaContext(function)


def api_event(method: str, path: str, body: Any, headers: dict[str, str] | None) -> dict[str, Any]:
    """A REST API proxy event, on the shape of tests/events/api_send_event.json."""
    event: dict[str, Any] = json.loads(json.dumps(_TEMPLATE))
    all_headers = {**event["headers"], **(headers or {})}
    event.update(
        path=path,
        httpMethod=method,
        headers=all_headers,
        multiValueHeaders={k: [v] for k, v in all_headers.items()},
        pathParameters={"proxy": path.removeprefix("/workflows/")},
        body=json.dumps(body),
        isBase64Encoded=False,
    )
    event["requestContext"].update(path="/v1" + path, httpMethod=method)
    return event
