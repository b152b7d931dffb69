"""Inject AWS faults into the real adapters through botocore's event hooks.

A fault is armed for one operation (``dynamodb.PutItem``) and fires on its next matching calls:

- ``throttle``: the call is refused before it reaches AWS (ThrottlingException);
- ``unreachable``: the connection fails before sending (EndpointConnectionError);
- ``timeout``: the call happens, then the caller sees a ReadTimeoutError (outcome unknown);
- ``drop``: the call never reaches AWS but the caller sees success (a lost message).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

Match = Callable[[dict[str, Any]], bool]


@dataclass
class _Armed:
    operation: str
    kind: str
    times: int
    match: Match | None
    fired: int = 0


@dataclass
class Faults:
    """Faults on the clients of one runtime (store, queue, wake-ups)."""

    clients: list[Any]
    armed: list[_Armed] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    # journal writes go out from several threads at once (see lambda_workflows.aws.journal_writes)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def on(cls, runtime: Any, *more: Any) -> Faults:
        """Faults on the runtime's clients, and on ``more`` clients (e.g. the embedded AWS's
        SQS client, which delivers the firings of recurring schedules)."""
        faults = cls([runtime.store.client, runtime.queue.client, runtime.wakeups.client, *more])
        for client in faults.clients:
            client.meta.events.register("before-call.*.*", faults._before)
            client.meta.events.register("after-call.*.*", faults._after)
        return faults

    def arm(self, operation: str, kind: str, times: int = 1, match: Match | None = None) -> None:
        """Make the next ``times`` calls of ``operation`` (matching ``match``) fail as ``kind``."""
        self.armed.append(_Armed(operation, kind, times, match))

    def fired(self, operation: str) -> int:
        return sum(a.fired for a in self.armed if a.operation == operation)

    def count(self, operation: str) -> int:
        """Calls of ``operation`` made so far (faulted or not)."""
        return self.calls.count(operation)

    def _take(self, operation: str, params: dict[str, Any], kinds: tuple[str, ...]) -> str | None:
        with self._lock:
            return self._take_locked(operation, params, kinds)

    def _take_locked(
        self, operation: str, params: dict[str, Any], kinds: tuple[str, ...]
    ) -> str | None:
        for armed in self.armed:
            if armed.operation != operation or armed.kind not in kinds:
                continue
            if armed.fired >= armed.times:
                continue
            if armed.match is not None and not armed.match(params):
                continue
            armed.fired += 1
            return armed.kind
        return None

    def _before(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> Any:
        operation = f"{model.service_model.service_name}.{model.name}"
        self.calls.append(operation)
        payload = context["faults_payload"] = _payload(params)  # this call's, for _after
        kind = self._take(operation, payload, ("throttle", "unreachable", "drop"))
        if kind == "throttle":
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, model.name
            )
        if kind == "unreachable":
            raise EndpointConnectionError(endpoint_url="https://aws.invalid")
        if kind == "drop":
            return _fake_success(model.name)
        return None

    def _after(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        operation = f"{model.service_model.service_name}.{model.name}"
        payload = context.get("faults_payload", {})
        if self._take(operation, payload, ("timeout",)) == "timeout":
            raise ReadTimeoutError(endpoint_url="https://aws.invalid")


def _payload(params: dict[str, Any]) -> dict[str, Any]:
    """The request's API parameters, as far as the hook can see them (its JSON body)."""
    body = params.get("body")
    if isinstance(body, bytes | str) and body:
        try:
            decoded = json.loads(body)
        except ValueError:
            return {}
        return decoded if isinstance(decoded, dict) else {}
    return {}


def _fake_success(operation: str) -> tuple[Any, dict[str, Any]]:
    """What a before-call hook returns to short-circuit a call: (http response, parsed)."""
    from botocore.awsrequest import AWSResponse

    http = AWSResponse("https://aws.invalid", 200, {}, None)
    parsed: dict[str, Any] = {"ResponseMetadata": {"HTTPStatusCode": 200}}
    if operation == "SendMessage":
        parsed |= {"MessageId": "dropped", "MD5OfMessageBody": ""}
    elif operation == "SendMessageBatch":
        parsed |= {"Successful": [], "Failed": []}
    elif operation == "CreateSchedule":
        parsed |= {"ScheduleArn": "arn:aws:scheduler:us-east-1:123456789012:schedule/x/dropped"}
    return http, parsed
