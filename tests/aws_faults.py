"""The one botocore fault injector: AWS faults in the real adapters, through botocore's hooks.

Two players decide which call fails and how; this module makes it fail:

- :class:`Faults` (the functional tests): a fault armed for one operation (``dynamodb.PutItem``)
  fires on its next matching calls;
- ``tests.simulation.faults.FaultInjector`` (the chaos simulation): a script of faults by call
  number, plus crashes and second deliveries, built on :func:`attach` and :func:`play`.

The faults of one call (:func:`play`):

- ``throttle``: the call is refused before it reaches AWS (the service's throttling code);
- ``server_error``: the call is refused with a 5xx before it reaches AWS;
- ``unreachable``: the connection fails before sending (EndpointConnectionError);
- ``timeout``: the call happens, then the caller sees a ReadTimeoutError (outcome unknown);
- ``drop``: the call never reaches AWS but the caller sees success (a lost message): only for
  the calls that send something on (:data:`DROPPABLE`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from lambda_workflows.aws import items

BEFORE_KINDS = ("throttle", "server_error", "unreachable", "drop")  # played before the call
AFTER_KINDS = ("timeout",)  # played once the call happened
DROPPABLE = frozenset({"SendMessage", "SendMessageBatch", "CreateSchedule"})
_THROTTLE = {
    "dynamodb": ("ProvisionedThroughputExceededException", "ThrottlingException"),
    "sqs": ("ThrottlingException", "RequestThrottled"),
    "scheduler": ("ThrottlingException", "ThrottlingException"),
    "lambda": ("TooManyRequestsException", "TooManyRequestsException"),
}
_SERVER = {
    "dynamodb": (("InternalServerError", 500), ("ServiceUnavailable", 503)),
    "sqs": (("InternalError", 500), ("ServiceUnavailable", 503)),
    "scheduler": (("InternalServerException", 500), ("InternalServerException", 500)),
    "lambda": (("ServiceException", 500), ("ServiceException", 503)),
}


@dataclass
class AwsCall:
    """One call a client makes, as its hooks see it (the same object before and after it)."""

    service: str  # dynamodb, sqs, scheduler, lambda
    operation: str  # PutItem
    payload: dict[str, Any]  # the request's API parameters (its JSON body)
    notes: dict[str, Any] = field(default_factory=dict)  # what the player keeps for after

    @property
    def name(self) -> str:
        """``service.Operation``."""
        return f"{self.service}.{self.operation}"


Before = Callable[[AwsCall], Any]  # returns None, or (http response, parsed) to answer for AWS
After = Callable[[AwsCall, int], None]  # with the HTTP status of the answer


def attach(client: Any, before: Before, after: After) -> None:
    """Show every call ``client`` makes to ``before`` and, once answered, to ``after``."""

    def before_call(model: Any, params: Any, context: dict[str, Any], **_: Any) -> Any:
        service = model.service_model.service_name
        call = context["aws_fault_call"] = AwsCall(service, model.name, _payload(params))
        return before(call)

    def after_call(context: dict[str, Any], http_response: Any, **_: Any) -> None:
        call = context.get("aws_fault_call")
        if call is not None:
            after(call, http_response.status_code)

    client.meta.events.register("before-call", before_call)
    client.meta.events.register("after-call", after_call)


def play(kind: str, call: AwsCall, variant: int = 0, where: str = "") -> Any:
    """Make ``call`` fail as ``kind``: raise, or return the answer of a dropped call.

    ``variant`` picks one of the service's error codes (throttling, server errors);
    ``where`` ends the made-up endpoint URL of connection errors and timeouts.
    """
    endpoint = f"https://aws.invalid/{where}"
    if kind == "throttle":
        code = _THROTTLE[call.service][variant % 2]
        raise ClientError(_error(code, 400, "Rate exceeded (injected)"), call.operation)
    if kind == "server_error":
        code, status = _SERVER[call.service][variant % 2]
        raise ClientError(_error(code, status, "injected server error"), call.operation)
    if kind == "unreachable":
        raise EndpointConnectionError(endpoint_url=endpoint)
    if kind == "timeout":
        raise ReadTimeoutError(endpoint_url=endpoint)
    if kind == "drop":
        return answered(_dropped_answer(call))
    raise ValueError(f"no such fault {kind!r}: one of {BEFORE_KINDS + AFTER_KINDS}")


def journal_items(call: AwsCall) -> list[str]:
    """``pk/sk`` of the journal entries a PutItem / TransactWriteItems writes (not chunks)."""
    if call.service != "dynamodb":
        return []
    if call.operation == "PutItem":
        written = [call.payload.get("Item", {})]
    elif call.operation == "TransactWriteItems":
        actions = call.payload.get("TransactItems", [])
        written = [a["Put"]["Item"] for a in actions if "Put" in a]
    else:
        return []
    found = []
    for item in written:
        sk = item.get("sk", {}).get("S", "")
        if sk.startswith(items.JOURNAL_PREFIX) and items.CHUNK_MARK not in sk:
            found.append(f"{item['pk']['S']}/{sk}")
    return found


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
    """Faults armed per operation on the clients of one runtime (store, queue, wake-ups, the
    queue's direct invokes of the runner)."""

    clients: list[Any]
    armed: list[_Armed] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    payloads: list[AwsCall] = field(default_factory=list)  # every call, with its parameters
    # journal writes go out from several threads at once (see lambda_workflows.aws.journal_writes)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def on(cls, runtime: Any, *more: Any) -> Faults:
        """Faults on the runtime's clients, and on ``more`` clients (e.g. the embedded AWS's
        SQS client, which delivers the firings of recurring schedules)."""
        direct = [runtime.queue.direct.client] if runtime.queue.direct is not None else []
        clients = [runtime.store.client, runtime.queue.client, runtime.wakeups.client, *direct]
        faults = cls([*clients, *more])
        for client in faults.clients:
            attach(client, faults._before, faults._after)
        return faults

    def arm(self, operation: str, kind: str, times: int = 1, match: Match | None = None) -> None:
        """Make the next ``times`` calls of ``operation`` (matching ``match``) fail as ``kind``."""
        if kind not in BEFORE_KINDS + AFTER_KINDS:
            raise ValueError(f"no such fault {kind!r}: one of {BEFORE_KINDS + AFTER_KINDS}")
        self.armed.append(_Armed(operation, kind, times, match))

    def fired(self, operation: str) -> int:
        """Faults fired so far on ``operation``."""
        return sum(a.fired for a in self.armed if a.operation == operation)

    def count(self, operation: str, match: Match | None = None) -> int:
        """Calls of ``operation`` made so far (faulted or not), those matching ``match`` only
        when it is given."""
        return sum(
            1
            for call in self.payloads
            if call.name == operation and (match is None or match(call.payload))
        )

    def _take(self, call: AwsCall, kinds: tuple[str, ...]) -> str | None:
        with self._lock:
            for armed in self.armed:
                if armed.operation != call.name or armed.kind not in kinds:
                    continue
                if armed.fired >= armed.times:
                    continue
                if armed.match is not None and not armed.match(call.payload):
                    continue
                armed.fired += 1
                return armed.kind
        return None

    def _before(self, call: AwsCall) -> Any:
        self.calls.append(call.name)
        self.payloads.append(call)
        kind = self._take(call, BEFORE_KINDS)
        return None if kind is None else play(kind, call)

    def _after(self, call: AwsCall, status: int) -> None:
        kind = self._take(call, AFTER_KINDS)
        if kind is not None:
            play(kind, call)


def answered(parsed: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """What a before hook returns to answer a call for AWS, successfully, with ``parsed``."""
    meta = {"ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {}}}
    return _Answer(), {**parsed, **meta}


class _Answer:
    """The HTTP side of a faked successful answer (a dropped call)."""

    status_code = 200
    headers: dict[str, str] = {}  # noqa: RUF012 - never mutated


def _error(code: str, status: int, message: str) -> Any:
    return {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}},
    }


def _payload(params: Any) -> dict[str, Any]:
    """The request's API parameters, as far as the hook can see them (its JSON body)."""
    try:
        body = json.loads(params["body"])
    except (KeyError, TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def _dropped_answer(call: AwsCall) -> dict[str, Any]:
    if call.operation == "SendMessage":
        return {"MessageId": "dropped", "MD5OfMessageBody": ""}
    if call.operation == "SendMessageBatch":
        entries = [e["Id"] for e in call.payload.get("Entries", [])]
        successful = [{"Id": i, "MessageId": "dropped", "MD5OfMessageBody": ""} for i in entries]
        return {"Successful": successful, "Failed": []}
    if call.operation == "CreateSchedule":
        return {"ScheduleArn": "arn:aws:scheduler:us-east-1:123456789012:schedule/dropped"}
    raise ValueError(f"{call.name} sends nothing on: only {sorted(DROPPABLE)} can be dropped")
