"""Fault scripts and the botocore event hooks that play them.

Every AWS call a handler makes (API, runner, sweep; each through its own runtime's clients) is
numbered in order. A fault script is a list of ``(call number, kind)``: the fault fires at the
first call numbered at or after its number that it applies to, once. Kinds:

=============  ====================================================================
throttle       ClientError ThrottlingException / ProvisionedThroughputExceeded, before the call
server_error   ClientError InternalServerError / ServiceUnavailable (5xx), before the call
connection     EndpointConnectionError, before the call
ambiguous      the call happens, then ReadTimeoutError (the caller cannot know it happened)
crash_before   Crash before the call (the Lambda dies)
crash_after    Crash after the call
drop           SendMessage / SendMessageBatch / CreateSchedule answered "done" but never sent
duplicate      the runner invocation's message is delivered again once it ends
concurrent     at a runner call, a second runner gets the same message meanwhile
takeover       at a runner call, the clock passes the lease and another runner takes over
skew           the next event is sent by an API container whose clock is a few ms behind
drop_firing    the next firing of a recurring schedule never reaches the trigger queue (as a
               Scheduler delivery that ran out of retries)
forget         (a canary, never drawn at random) a journal write succeeds, then the item is
               lost: proves the invariants notice a broken promise
=============  ====================================================================
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from lambda_workflows.testing import Crash

CALL_KINDS = ("throttle", "server_error", "connection", "ambiguous", "crash_before", "crash_after")
KINDS = (
    *CALL_KINDS,
    *("drop", "duplicate", "concurrent", "takeover", "skew", "drop_firing", "forget"),
)
DROPPABLE = {"SendMessage", "SendMessageBatch", "CreateSchedule"}
RUNNER_KINDS = {"duplicate", "concurrent", "takeover"}
COPY = "copy:"  # receipt handles of the deliveries the driver makes up (duplicates, takeovers)
_THROTTLE = {
    "dynamodb": ("ProvisionedThroughputExceededException", "ThrottlingException"),
    "sqs": ("ThrottlingException", "RequestThrottled"),
    "scheduler": ("ThrottlingException", "ThrottlingException"),
}
_SERVER = {
    "dynamodb": (("InternalServerError", 500), ("ServiceUnavailable", 503)),
    "sqs": (("InternalError", 500), ("ServiceUnavailable", 503)),
    "scheduler": (("InternalServerException", 500), ("InternalServerException", 500)),
}


@dataclass(frozen=True, order=True)
class Fault:
    """One scripted fault: fires at the first applicable call numbered ``at`` or later."""

    at: int
    kind: str

    def __str__(self) -> str:
        return f"{self.at}:{self.kind}"


def format_script(faults: list[Fault]) -> str:
    """``12:throttle,40:crash_after`` (what ``--faults`` takes)."""
    return ",".join(str(f) for f in faults)


def parse_script(text: str) -> list[Fault]:
    """The faults of a ``--faults`` argument; raises ValueError naming a bad entry."""
    faults = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        at, _, kind = part.partition(":")
        if not at.isdigit() or kind not in KINDS:
            raise ValueError(f"bad fault {part!r}: write <call number>:<kind>, kind in {KINDS}")
        faults.append(Fault(int(at), kind))
    return sorted(faults)


@dataclass(frozen=True)
class Call:
    """One AWS call a handler made."""

    number: int
    container: str  # which runtime made it: api, api-skewed, runner, runner-2, sweep, trigger
    role: str  # api, runner, sweep, trigger
    operation: str  # service.Operation

    def __str__(self) -> str:
        return f"#{self.number} {self.container} {self.operation}"


@dataclass
class Invocation:
    """One handler invocation in progress: its role, and the faults injected into it."""

    role: str
    nested: bool = False
    faults: list[str] = field(default_factory=list)
    duplicate: bool = False
    dead: bool = False  # a crash was injected: nothing after it reaches AWS


class _Answer:
    """The HTTP side of a faked successful answer (a dropped call)."""

    status_code = 200
    headers: dict[str, str] = {}  # noqa: RUF012 - never mutated


NestedRunner = Callable[[str, Call], None]


class FaultInjector:
    """Numbers the calls of the clients it is attached to and plays a fault script on them.

    Also counts successful journal writes per item (``journal_puts``) to check that each entry
    was recorded once.
    """

    def __init__(self) -> None:
        self.pending: list[Fault] = []
        self.armed = False
        self.calls = 0
        self.trace: list[Call] = []
        self.fired: list[tuple[Fault, Call]] = []
        self.journal_puts: Counter[str] = Counter()
        self.visibility: dict[str, int] = {}  # receipt handle -> seconds a handler asked for
        self.stack: list[Invocation] = []
        self.on_nested: NestedRunner | None = None
        self.forget: Callable[[str], None] | None = None  # loses a journal item (canary)

    def reset(self, script: list[Fault]) -> None:
        """Start a run: call numbers from 1, this script pending (armed)."""
        self.pending = sorted(script)
        self.armed = True
        self.calls = 0
        self.trace = []
        self.fired = []
        self.journal_puts = Counter()
        self.visibility = {}
        self.stack = []

    def injected(self) -> Counter[str]:
        return Counter(f.kind for f, _ in self.fired)

    def attach(self, client: Any, container: str, role: str) -> None:
        """Number and fault every call ``client`` makes, as ``container`` (a ``role``)."""

        def before(event_name: str, context: dict[str, Any], params: Any, **_: Any) -> Any:
            return self._before(event_name, context, params, container, role)

        def after(event_name: str, context: dict[str, Any], http_response: Any, **_: Any) -> None:
            self._after(context, http_response)

        client.meta.events.register("before-call", before)
        client.meta.events.register("after-call", after)

    # --- invocations ------------------------------------------------------------------------

    def begin(self, role: str, nested: bool = False) -> Invocation:
        invocation = Invocation(role, nested)
        self.stack.append(invocation)
        return invocation

    def end(self, invocation: Invocation) -> None:
        self.stack.remove(invocation)
        parent = self.stack[-1] if self.stack else None
        if parent is not None and parent.role == invocation.role:
            parent.faults.extend(invocation.faults)  # a nested runner's faults are the outer's

    def dead(self) -> bool:
        """Whether the invocation running now has crashed (its code may still be unwinding)."""
        return bool(self.stack) and self.stack[-1].dead

    def take_skew(self) -> bool:
        """Whether the next event send goes through the skewed container (a skew is due)."""
        fault = self._take_where(lambda f: f.kind == "skew" and f.at <= self.calls + 1)
        if fault is not None:
            self.fired.append((fault, Call(self.calls + 1, "api-skewed", "api", "event send")))
        return fault is not None

    def take_firing_drop(self, body: str) -> bool:
        """Whether the firing about to be sent is lost (a drop_firing is due)."""
        fault = self._take_where(lambda f: f.kind == "drop_firing" and f.at <= self.calls + 1)
        if fault is not None:
            call = Call(self.calls + 1, "scheduler", "scheduler", f"firing {body}")
            self.fired.append((fault, call))
        return fault is not None

    # --- the hooks --------------------------------------------------------------------------

    def _before(
        self, event_name: str, context: dict[str, Any], params: Any, container: str, role: str
    ) -> Any:
        _, service, operation = event_name.split(".", 2)
        if self.dead():
            # A crash is modelled by an exception, which code may catch (asyncio.gather with
            # return_exceptions=True does): the process is gone all the same, so nothing it
            # does afterwards reaches AWS.
            raise Crash(f"{container} already died")
        self.calls += 1
        call = Call(self.calls, container, role, f"{service}.{operation}")
        self.trace.append(call)
        if service == "dynamodb" and operation in ("PutItem", "TransactWriteItems"):
            context["sim_journal"] = _journal_items(operation, params)
        if operation == "SendMessageBatch":
            context["sim_batch_ids"] = [e["Id"] for e in _body(params).get("Entries", [])]
        if operation == "ChangeMessageVisibility":
            body = _body(params)
            context["sim_visibility"] = (body["ReceiptHandle"], int(body["VisibilityTimeout"]))
        context["sim_call"] = call
        journal = bool(context.get("sim_journal")) and operation == "PutItem"
        fault = self._take_where(
            lambda f: f.at <= call.number and self._applies(f.kind, call, journal)
        )
        if fault is not None:
            self.fired.append((fault, call))
            if self.stack:
                self.stack[-1].faults.append(f"{fault.kind} at {call}")
            answer = self._play(fault.kind, call, service, operation, context)
            if answer is not None:
                return answer
        receipt = context.get("sim_visibility", ("",))[0]
        if receipt.startswith(COPY):  # a delivery the driver made up: SQS never saw it
            return _Answer(), {"ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {}}}
        return None

    def _after(self, context: dict[str, Any], http_response: Any) -> None:
        if http_response.status_code < 300:
            for item in context.get("sim_journal", ()):
                self.journal_puts[item] += 1
            if "sim_visibility" in context:
                receipt, seconds = context["sim_visibility"]
                self.visibility[receipt] = seconds
        after = context.pop("sim_after", None)
        if after == "ambiguous":
            raise ReadTimeoutError(endpoint_url=_endpoint(context))
        if after == "crash_after":
            self.stack[-1].dead = True
            raise Crash(f"injected crash after call {context['sim_call']}")
        if after == "forget" and self.forget is not None:
            for item in context.get("sim_journal", ()):
                self.forget(item)

    def _take_where(self, wanted: Callable[[Fault], bool]) -> Fault | None:
        if not self.armed:
            return None
        for fault in self.pending:
            if wanted(fault):
                self.pending.remove(fault)
                return fault
        return None

    def _applies(self, kind: str, call: Call, journal: bool) -> bool:
        if kind in CALL_KINDS:
            return True
        if kind == "forget":
            return journal
        if kind == "drop":
            return call.operation.split(".")[1] in DROPPABLE
        if kind in RUNNER_KINDS:
            top = self.stack[-1] if self.stack else None
            runners = [i for i in self.stack if i.role == "runner"]
            return (
                call.role == "runner"
                and top is not None
                and top.role == "runner"
                and len(runners) == 1
                and not top.duplicate
            )
        return False

    def _play(
        self, kind: str, call: Call, service: str, operation: str, context: dict[str, Any]
    ) -> Any:
        if kind == "throttle":
            code = _THROTTLE[service][call.number % 2]
            raise ClientError(_error(code, 400, "Rate exceeded (injected)"), operation)
        if kind == "server_error":
            code, status = _SERVER[service][call.number % 2]
            raise ClientError(_error(code, status, "injected server error"), operation)
        if kind == "connection":
            raise EndpointConnectionError(endpoint_url=_endpoint(context))
        if kind == "crash_before":
            self.stack[-1].dead = True
            raise Crash(f"injected crash before call {call}")
        if kind in ("ambiguous", "crash_after", "forget"):
            context["sim_after"] = kind
            return None
        if kind == "drop":
            return _Answer(), _dropped_answer(operation, context)
        if kind == "duplicate":
            self.stack[-1].duplicate = True
            return None
        assert self.on_nested is not None
        self.on_nested(kind, call)
        return None


def _error(code: str, status: int, message: str) -> Any:
    return {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}},
    }


def _endpoint(context: dict[str, Any]) -> str:
    return f"https://aws.invalid/{context.get('sim_call', '')}"


def _body(params: Any) -> dict[str, Any]:
    try:
        body = json.loads(params["body"])
    except (KeyError, TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def _journal_items(operation: str, params: Any) -> list[str]:
    """``pk/sk`` of the journal items a PutItem / TransactWriteItems writes."""
    body = _body(params)
    if operation == "PutItem":
        items = [body.get("Item", {})]
    else:
        items = [a["Put"]["Item"] for a in body.get("TransactItems", []) if "Put" in a]
    found = []
    for item in items:
        sk = item.get("sk", {}).get("S", "")
        if sk.startswith("J#") and "\x1dc" not in sk:
            found.append(f"{item['pk']['S']}/{sk}")
    return found


def _dropped_answer(operation: str, context: dict[str, Any]) -> dict[str, Any]:
    meta = {"ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {}}}
    if operation == "SendMessage":
        return {"MessageId": "dropped", "MD5OfMessageBody": "", **meta}
    if operation == "SendMessageBatch":
        entries = context.get("sim_batch_ids", [])
        successful = [{"Id": i, "MessageId": "dropped", "MD5OfMessageBody": ""} for i in entries]
        return {"Successful": successful, "Failed": [], **meta}
    return {"ScheduleArn": "arn:aws:scheduler:us-east-1:123456789012:schedule/dropped", **meta}
