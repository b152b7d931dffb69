"""Drives one program through the real handlers under one fault script, then quiesces.

The driver plays the outside world: a client that creates instances and sends events through
ApiFunction (retrying 5xx and dropped connections, reusing the event's ``Idempotency-Key``),
Lambda's SQS event source (one message per RunnerFunction invocation; a message reported in
``batchItemFailures`` is given back at once, the messages of an invocation that died come back
after the queue's visibility timeout), EventBridge Scheduler (due schedules are fired) and the
sweep's schedule (run whenever virtual time jumps).

Virtual time moves only when nothing is runnable: to the next schedule or message that
reappears. Then, with faults off, it quiesces: messages given back, the clock moved past every
lease and the sweep's grace, the sweep run, until every instance finished or nothing changes.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from lambda_workflows.aws.runtime import set_runtime
from lambda_workflows.engine import codec
from lambda_workflows.engine.errors import InstanceNotFound
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.observability import metrics
from lambda_workflows.testing import Crash

from . import lambdas
from .faults import COPY, Call, Fault
from .model import canonical_journal, event_payload
from .program import OBSERVED, WORKFLOW, Do, Program
from .world import World

HORIZON = 7 * 86_400.0  # time never jumps further than this from the start: later = stuck
QUIESCE_STEP = 3_600.0  # first step: past any lease (960 s) and the sweep's grace; then doubled
MAX_INVOCATIONS = 400
CLIENT_ATTEMPTS = 30


@dataclass
class InstanceOutcome:
    """How an instance ended up, read back with a fault-free client."""

    id: str
    status: str
    output: Any = None
    error: dict[str, str] | None = None
    journal: dict[str, list[Any]] = field(default_factory=dict)
    events: list[tuple[str, Any]] = field(default_factory=list)  # stored (type, payload)
    delivered: list[str] = field(default_factory=list)  # event ids consumed by waits


@dataclass
class RunResult:
    """Everything one run left behind that the invariants look at."""

    instances: list[InstanceOutcome]
    seen: dict[str, list[tuple[str, Any]]]
    accepted: dict[str, Counter[str]]
    anomalies: list[str]
    journal_puts: Counter[str]
    trace: list[Call]
    injected: Counter[str]
    unfired: list[Fault]
    dead_letters: list[str]


class _BatchFailures(logging.Handler):
    """Collects what Powertools' batch processor logs for a record that raised."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def listen(self) -> None:
        """Attach to the batch processor's logger (once; it logs each failure at debug)."""
        log = logging.getLogger("aws_lambda_powertools.utilities.batch.base")
        if self not in log.handlers:
            log.addHandler(self)
            log.setLevel(logging.DEBUG)
            log.propagate = False


_FAILURES = _BatchFailures()


class Driver:
    """One run of ``program`` under ``script``; instance ids carry ``tag``."""

    def __init__(self, world: World, program: Program, script: list[Fault], tag: str) -> None:
        _FAILURES.listen()
        self.world = world
        self.program = program
        self.script = script
        self.ids = [f"p{program.number}-{tag}-{k}" for k in range(program.instances)]
        self.anomalies: list[str] = []
        self.accepted: dict[str, Counter[str]] = {i: Counter() for i in self.ids}
        self._numbers: Counter[tuple[str, str]] = Counter()
        self._late = [
            (iid, index)
            for iid in self.ids
            for index, plan in enumerate(program.events)
            if plan.when == "late"
        ]
        self._during_done: set[tuple[str, str]] = set()
        self._inflight: list[tuple[float, dict[str, Any]]] = []  # died with their invocation
        self._resends: list[tuple[float, str]] = []  # copies given back later
        self._records: list[dict[str, Any]] = []  # the message of each runner in progress
        self._containers: list[str] = []
        self._invocations = 0
        self._swept_after: list[Any] = []
        self._start = world.clock.time()
        self._steps = {op.name: op for op in program.steps() if isinstance(op, Do)}
        self._runner, self._other_runner = world.runners(program.pacing)

    # --- the run ------------------------------------------------------------------------------

    def run(self) -> RunResult:
        world = self.world
        world.empty()
        self._start = world.clock.time()
        world.faults.reset(self.script)
        world.faults.on_nested = self._nested
        for iid in self.ids:
            OBSERVED.seen.pop(iid, None)
        OBSERVED.on_callback = self._on_callback
        OBSERVED.dead = world.faults.dead
        try:
            for iid in self.ids:
                self._create(iid)
            for iid in self.ids:
                for index, plan in enumerate(self.program.events):
                    if plan.when == "early":
                        self._send_event(iid, index)
            self._loop()
            world.faults.armed = False
            self._quiesce()
        finally:
            OBSERVED.on_callback = None
            OBSERVED.dead = lambda: False
            world.faults.on_nested = None
        return RunResult(
            instances=[self._outcome(iid) for iid in self.ids],
            seen={iid: list(OBSERVED.seen.get(iid, [])) for iid in self.ids},
            accepted=self.accepted,
            anomalies=self.anomalies,
            journal_puts=Counter(world.faults.journal_puts),
            trace=list(world.faults.trace),
            injected=world.faults.injected(),
            unfired=list(world.faults.pending),
            dead_letters=[str(ref) for ref in world.dead_letters()],
        )

    def _loop(self) -> bool:
        """Run everything runnable, jumping time, until nothing is left below the horizon."""
        moved = False
        while self._invocations < MAX_INVOCATIONS:
            if self._deliver() or self._fire_due() or self._send_late() or self._jump():
                moved = True
                continue
            return moved
        self.anomalies.append(
            f"runaway: more than {MAX_INVOCATIONS} runner invocations without settling"
        )
        return moved

    def _quiesce(self) -> None:
        """Faults off: give every message back, then move time in doubling steps (an instance
        may legitimately be due hours later: a lost wake-up is found only once it is due) and
        run the sweep after each, until every instance finished or time reaches the horizon."""
        now = self.world.clock.time()
        self._inflight = [(now, m) for _, m in self._inflight]
        self._resends = [(now, b) for _, b in self._resends]
        step = QUIESCE_STEP
        while True:
            self._loop()
            if self._all_finished() or self.world.clock.time() >= self._start + HORIZON:
                return
            self.world.clock.advance(step)
            step *= 2
            self._sweep()

    def _all_finished(self) -> bool:
        for iid in self.ids:
            try:
                record = self.world.store.get(InstanceRef(WORKFLOW, iid))
            except InstanceNotFound:
                return False
            if not record.status.finished:
                return False
        return True

    # --- the queue and the runner ---------------------------------------------------------------

    def _deliver(self) -> bool:
        self._release_due()
        messages = self.world.receive()
        if not messages:
            return False
        self._invoke(messages, self._runner)
        return True

    def _release_due(self) -> None:
        now = self.world.clock.time()
        for entry in [e for e in self._inflight if e[0] <= now]:
            self._inflight.remove(entry)
            self.world.make_visible(entry[1])
        for resend in [r for r in self._resends if r[0] <= now]:
            self._resends.remove(resend)
            self.world.send(resend[1])

    def _invoke(self, records: list[dict[str, Any]], container: str, *, copy: bool = False) -> None:
        """One RunnerFunction invocation; ``copy``: a delivery the queue does not track."""
        world = self.world
        self._invocations += 1
        nested = bool(self._records)
        invocation = world.faults.begin("runner", nested)
        self._records.append(records[0])
        _FAILURES.messages.clear()
        died = False
        response: dict[str, Any] = {}
        try:
            response = self._call(
                container,
                lambdas.runner,
                lambdas.sqs_event(records, world.settings.work_queue_arn),
                lambdas.context(),
            )
        except Crash:
            died = True
        except BaseException as exc:
            self.anomalies.append(f"exception escaped the runner handler: {exc!r}")
            died = True
        finally:
            self._records.pop()
            world.faults.end(invocation)
        now = world.clock.time()
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        if failed and not invocation.faults:
            why = "; ".join(_FAILURES.messages) or "no exception logged"
            self.anomalies.append(f"runner gave a message back with no fault injected: {why}")
        for record in records:
            # a message comes back after its visibility timeout: the queue's, or what the
            # handler asked for (virtual seconds; moto would count them in real time)
            asked = world.faults.visibility.pop(record["ReceiptHandle"], None)
            if not died and record["MessageId"] not in failed:
                if not copy:
                    world.delete(record)
                continue
            back = now + (asked if asked is not None else world.visibility)
            if copy:
                self._resends.append((back, record["Body"]))
            else:
                self._inflight.append((back, record))
                world.hide(record)
        if invocation.duplicate:  # at-least-once: the same message, delivered once more
            duplicate = {**records[0], "ReceiptHandle": f"{COPY}duplicate"}
            self._invoke([duplicate], self._other_runner, copy=True)

    def _nested(self, kind: str, call: Call) -> None:
        """A second runner on the same instance while the first is between two calls."""
        record = self._records[-1]
        if kind == "takeover":  # the first runner stalls past its lease; a new message arrives
            self.world.clock.advance(self.world.lease_seconds(self._runner) + 1)
            record = {**record, "MessageId": f"takeover-{call.number}"}
        copy = {**record, "ReceiptHandle": f"{COPY}{kind}-{call.number}"}

        def second_runner() -> None:
            try:
                self._invoke([copy], self._other_runner, copy=True)
            except Exception as exc:  # the driver's own failure: say so, never lose it
                self.anomalies.append(f"harness error in a {kind} runner: {exc!r}")

        thread = threading.Thread(target=second_runner)
        thread.start()  # its own thread: the first runner's event loop is still running
        thread.join()

    def _fire_due(self) -> bool:
        now = self.world.clock.time()
        due = [s for s in self.world.schedules() if s.at <= now]
        for schedule in due:
            self.world.fire(schedule)
        return bool(due)

    def _jump(self) -> bool:
        """Move time to the next thing that will happen (below the horizon), run the sweep."""
        upcoming = [s.at for s in self.world.schedules()]
        upcoming += [at for at, _ in self._inflight] + [at for at, _ in self._resends]
        now = self.world.clock.time()
        later = [t for t in upcoming if t > now]
        if not later or min(later) > self._start + HORIZON:
            return False
        self.world.clock.set(min(later))
        if self.world.faults.fired != self._swept_after:
            # something may have been lost since the last sweep; with nothing lost the sweep
            # finds nothing (the fault-free run never needs it), and it costs 8 queries
            self._swept_after = list(self.world.faults.fired)
            self._sweep()
        return True

    def _sweep(self) -> int:
        invocation = self.world.faults.begin("sweep")
        try:
            answer = self._call("sweep", lambdas.sweep, {}, lambdas.context("SweepFunction"))
            return int(answer.get("requeued", 0)) if isinstance(answer, dict) else 0
        except Crash:
            return 0
        except Exception as exc:
            if not invocation.faults:
                self.anomalies.append(f"the sweep raised with no fault injected: {exc!r}")
            return 0
        except BaseException as exc:
            self.anomalies.append(f"exception escaped the sweep handler: {exc!r}")
            return 0
        finally:
            self.world.faults.end(invocation)

    def _call(self, container: str, handler: Any, *args: Any) -> Any:
        """Call a handler as ``container`` (its runtime is the process's for the call)."""
        self._containers.append(container)
        set_runtime(self.world.containers[container])
        try:
            return handler(*args)
        finally:
            metrics().clear_metrics()  # disabled, they would pile up
            self._containers.pop()
            set_runtime(self.world.containers[self._containers[-1]] if self._containers else None)

    # --- the client ---------------------------------------------------------------------------

    def _create(self, iid: str) -> None:
        body = {"instance_id": iid, "params": self.program.to_json()}
        for attempt in range(1, CLIENT_ATTEMPTS + 1):
            status, answer = self._api("POST", f"/workflows/{WORKFLOW}/instances", body)
            if status == 201 or (status == 409 and attempt > 1):
                return  # 409 after a failed attempt: that attempt created it
            if status is None or status >= 500:
                continue
            self.anomalies.append(f"creating {iid} answered {status}: {answer}")
            return
        self.anomalies.append(f"the client gave up creating {iid}")

    def _send_event(self, iid: str, index: int) -> None:
        event_type = self.program.events[index].type
        self._numbers[(iid, event_type)] += 1
        payload = event_payload(event_type, self._numbers[(iid, event_type)])
        path = f"/workflows/{WORKFLOW}/instances/{iid}/events/{event_type}"
        headers = {"Idempotency-Key": f"{iid}-event-{index}"}
        skewed = self.world.faults.take_skew()
        for _ in range(CLIENT_ATTEMPTS):
            status, answer = self._api("POST", path, payload, headers, skewed=skewed)
            if status == 202:
                self.accepted[iid][event_type] += 1
                return
            if status is None or status >= 500:
                continue
            self.anomalies.append(f"sending {payload} to {iid} answered {status}: {answer}")
            return
        self.anomalies.append(f"the client gave up sending {payload} to {iid}")

    def _send_late(self) -> bool:
        if not self._late:
            return False
        iid, index = self._late.pop(0)
        self._send_event(iid, index)
        return True

    def _on_callback(self, iid: str, step_name: str) -> None:
        """A step callback started: send the events planned "during" it (its first run)."""
        if iid not in self.accepted or (iid, step_name) in self._during_done:
            return
        self._during_done.add((iid, step_name))
        for index in self._steps[step_name].sends if step_name in self._steps else ():
            self._send_event(iid, index)

    def _api(
        self,
        method: str,
        path: str,
        body: Any,
        headers: dict[str, str] | None = None,
        *,
        skewed: bool = False,
    ) -> tuple[int | None, Any]:
        """One API request; None when the container died (API Gateway answers 502)."""
        invocation = self.world.faults.begin("api")
        container = "api-skewed" if skewed else "api"
        try:
            response = self._call(
                container, lambdas.api, lambdas.api_event(method, path, body, headers), None
            )
        except Crash:
            return None, None
        except BaseException as exc:
            self.anomalies.append(f"exception escaped the API handler ({method} {path}): {exc!r}")
            return None, None
        finally:
            self.world.faults.end(invocation)
        status = int(response["statusCode"])
        try:
            answer = json.loads(response.get("body") or "null")
        except ValueError:
            answer = response.get("body")
        if status >= 500 and not invocation.faults:
            self.anomalies.append(
                f"{method} {path} answered {status} with no fault injected: {answer}"
            )
        return status, answer

    # --- reading the result -------------------------------------------------------------------

    def _outcome(self, iid: str) -> InstanceOutcome:
        try:
            state = self.world.store.load(InstanceRef(WORKFLOW, iid))
        except InstanceNotFound:
            return InstanceOutcome(iid, "missing")
        record = state.record
        return InstanceOutcome(
            id=iid,
            status=str(record.status),
            output=codec.decode(record.output) if record.output is not None else None,
            error=dict(record.error) if record.error else None,
            journal=canonical_journal(state.entries, state.events),
            events=[(e.type, codec.decode(e.payload)) for e in state.events],
            delivered=[e.event_id for e in state.entries if e.event_id],
        )
