"""Fault scripts, played on the AWS calls by the shared injector (:mod:`tests.aws_faults`).

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

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lambda_workflows.testing import Crash
from tests import aws_faults
from tests.aws_faults import DROPPABLE, AwsCall, answered, journal_items

CALL_KINDS = ("throttle", "server_error", "connection", "ambiguous", "crash_before", "crash_after")
KINDS = (
    *CALL_KINDS,
    *("drop", "duplicate", "concurrent", "takeover", "skew", "drop_firing", "forget"),
)
RUNNER_KINDS = {"duplicate", "concurrent", "takeover"}
COPY = "copy:"  # receipt handles of the deliveries the driver makes up (duplicates, takeovers)


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

        def before(call: AwsCall) -> Any:
            return self._before(call, container, role)

        aws_faults.attach(client, before, self._after)

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

    def _before(self, aws: AwsCall, container: str, role: str) -> Any:
        if self.dead():
            # A crash is modelled by an exception, which code may catch (asyncio.gather with
            # return_exceptions=True does): the process is gone all the same, so nothing it
            # does afterwards reaches AWS.
            raise Crash(f"{container} already died")
        self.calls += 1
        call = aws.notes["call"] = Call(self.calls, container, role, aws.name)
        self.trace.append(call)
        journal = aws.operation == "PutItem" and bool(journal_items(aws))
        fault = self._take_where(
            lambda f: f.at <= call.number and self._applies(f.kind, call, journal)
        )
        if fault is not None:
            self.fired.append((fault, call))
            if self.stack:
                self.stack[-1].faults.append(f"{fault.kind} at {call}")
            answer = self._play(fault.kind, call, aws)
            if answer is not None:
                return answer
        receipt = aws.payload.get("ReceiptHandle", "")
        if aws.operation == "ChangeMessageVisibility" and receipt.startswith(COPY):
            return answered({})  # a delivery the driver made up: SQS never saw it
        return None

    def _after(self, aws: AwsCall, status: int) -> None:
        if status < 300:
            for item in journal_items(aws):
                self.journal_puts[item] += 1
            if aws.operation == "ChangeMessageVisibility":
                receipt = aws.payload["ReceiptHandle"]
                self.visibility[receipt] = int(aws.payload["VisibilityTimeout"])
        after = aws.notes.pop("after", None)
        if after == "ambiguous":
            aws_faults.play("timeout", aws, where=str(aws.notes["call"]))
        if after == "crash_after":
            self.stack[-1].dead = True
            raise Crash(f"injected crash after call {aws.notes['call']}")
        if after == "forget" and self.forget is not None:
            for item in journal_items(aws):
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

    def _play(self, kind: str, call: Call, aws: AwsCall) -> Any:
        if kind in ("throttle", "server_error"):
            aws_faults.play(kind, aws, variant=call.number)
        if kind == "connection":
            aws_faults.play("unreachable", aws, where=str(call))
        if kind == "crash_before":
            self.stack[-1].dead = True
            raise Crash(f"injected crash before call {call}")
        if kind in ("ambiguous", "crash_after", "forget"):
            aws.notes["after"] = kind
            return None
        if kind == "drop":
            return aws_faults.play("drop", aws)
        if kind == "duplicate":
            self.stack[-1].duplicate = True
            return None
        assert self.on_nested is not None
        self.on_nested(kind, call)
        return None
