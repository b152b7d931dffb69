"""Drives one program through the real handlers under one fault script, then quiesces.

The driver plays the outside world: a client (:mod:`.client`) that creates instances, sends
events and the program's control operation through ApiFunction; Lambda's SQS event sources (one
work message per RunnerFunction invocation; up to 10 trigger messages per TriggerFunction
invocation; a message reported in ``batchItemFailures``, or whose invocation died, comes back
after the queue's visibility timeout); Lambda's asynchronous invokes of the runner (work due
now, delivered as wake-ups are, :mod:`.direct_wake_ups`); EventBridge Scheduler (due one-time
schedules are fired, and the deployed recurring schedule's firings are sent to the trigger
queue, see :meth:`~.world.World.firings`) and the sweep's schedule (run whenever virtual time
jumps).

Virtual time moves only when nothing is runnable: to the next schedule, firing or message that
reappears. Then, with faults off, it quiesces: messages given back, the clock moved past every
lease and the sweep's grace, the sweep run, until every instance finished or nothing changes.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Any

from lambda_workflows.engine.instances.firing_recovery import FIRING_GRACE
from lambda_workflows.engine.instances.schedules import Schedule, firing_id, scheduled_time
from lambda_workflows.local.embedded import scheduler_input
from lambda_workflows.observability import metrics
from lambda_workflows.testing import Crash

from . import lambdas
from .client import Client
from .direct_wake_ups import DIRECT, DirectWakeUps
from .faults import COPY, Call, Fault
from .outcome import RunResult, read_instances, slot_items
from .program import HOLD, LIMIT, LIMITED, SCHEDULE, SCHEDULED, Do, Program, Wait
from .workflows import OBSERVED, WORKFLOWS
from .world import World

HORIZON = 7 * 86_400.0  # time never jumps further than this from the start: later = stuck
QUIESCE_STEP = 3_600.0  # first step: past any lease (960 s) and the sweep's grace; then doubled
MAX_INVOCATIONS = 600
FINISHED = {"complete", "errored", "terminated"}


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


class Driver(DirectWakeUps):
    """One run of ``program`` under ``script``; instance ids carry ``tag``."""

    def __init__(self, world: World, program: Program, script: list[Fault], tag: str) -> None:
        _FAILURES.listen()
        self.world = world
        self.program = program
        self.script = script
        self.workflow = program.workflow
        self.ids = [f"p{program.number}-{tag}-{k}" for k in range(program.instances)]
        self.anomalies: list[str] = []
        self.client = Client(world, self._call, self.anomalies)
        self.accepted: dict[str, Counter[str]] = {i: Counter() for i in self.ids}
        self.limit_breaches: list[str] = []
        self._late = [
            (iid, index)
            for iid in self.ids
            for index, plan in enumerate(program.events)
            if plan.when == "late"
        ]
        self._during_done: set[tuple[str, str]] = set()
        self._inflight: list[tuple[float, dict[str, Any], bool]] = []  # died with their invocation
        self._resends: list[tuple[float, str]] = []  # copies given back later
        self._records: list[dict[str, Any]] = []  # the message of each runner in progress
        self._invocations = 0
        self._swept_after: list[Any] = []
        self._start = world.clock.time()
        self._steps = {op.name: op for op in program.steps() if isinstance(op, Do)}
        self._runner, self._other_runner = world.runners(program.pacing)
        self._control_due = program.control is not None
        self._has_hold = any(isinstance(s, Wait) and s.type == HOLD for s in program.steps())
        self._fired_through = self._window_end = self._start
        self._deployed = False

    # --- the run ------------------------------------------------------------------------------

    def run(self) -> RunResult:
        world = self.world
        world.empty()
        self._start = world.clock.time()
        world.faults.reset(self.script)
        world.faults.on_nested = self._nested
        OBSERVED.seen.clear()
        OBSERVED.undone.clear()
        OBSERVED.on_callback = self._on_callback
        OBSERVED.on_reach = self._on_reach
        OBSERVED.dead = world.faults.dead
        try:
            self._begin()
            self._loop()
            world.faults.armed = False
            self._quiesce()
        finally:
            OBSERVED.on_callback = OBSERVED.on_reach = None
            OBSERVED.dead = lambda: False
            world.faults.on_nested = None
        return self._result()

    def _begin(self) -> None:
        """Deploy the schedule, create the instances, send the early events."""
        if self.program.schedule_hours:
            self.world.deploy_schedules()
            self._deployed = True
            self._fired_through = self._start
            self._window_end = self._start + self.program.schedule_hours * 3600.0
        for iid in self.ids:
            self.client.create(self.workflow, iid, self.program.to_json())
        for k, iid in enumerate(self.ids):
            for index, plan in enumerate(self.program.events):
                if plan.when == "early":
                    self._send_event(iid, index)
            if k > 0 and self._has_hold:  # only instance 0 gets the control operation
                self._send(iid, HOLD, f"{iid}-hold")

    def _result(self) -> RunResult:
        world = self.world
        instances = read_instances(world, self.ids, self.workflow)
        roles = {o.id: role for role, o in instances.items()}
        firings = self._firing_roles() if self.program.schedule_hours else {}
        return RunResult(
            instances=instances,
            seen={roles[i]: list(v) for i, v in OBSERVED.seen.items() if i in roles},
            undone={roles[i]: list(v) for i, v in OBSERVED.undone.items() if i in roles},
            accepted={f"top{k}": self.accepted[iid] for k, iid in enumerate(self.ids)},
            anomalies=self.anomalies,
            journal_puts=Counter(world.faults.journal_puts),
            trace=list(world.faults.trace),
            injected=world.faults.injected(),
            unfired=list(world.faults.pending),
            dead_letters=world.dead_letters(),
            limit_breaches=self.limit_breaches,
            slots={LIMITED: slot_items(world, LIMITED)},
            firings=firings,
            controls=self.client.answers,
        )

    def _firing_roles(self) -> dict[str, str]:
        """The role of each firing of the schedule's window, and its scheduled time."""
        times = Schedule(SCHEDULE).firings(self._start, self._window_end)
        prefix = f"{SCHEDULED}-"
        return {
            f"fire/{firing_id(SCHEDULED, t).removeprefix(prefix)}": scheduled_time(t) for t in times
        }

    def _loop(self) -> bool:
        """Run everything runnable, jumping time, until nothing is left below the horizon."""
        moved = False
        while self._invocations < MAX_INVOCATIONS:
            if (
                self._deliver_direct()
                or self._deliver()
                or self._deliver_triggers()
                or self._fire_due()
                or self._fire_recurring()
                or self._send_late()
                or self._control_at_end()
                or self._jump()
            ):
                moved = True
                continue
            return moved
        self.anomalies.append(
            f"runaway: more than {MAX_INVOCATIONS} handler invocations without settling"
        )
        return moved

    def _quiesce(self) -> None:
        """Faults off: give every message back, then move time in doubling steps (an instance
        may legitimately be due hours later: a lost wake-up is found only once it is due) and
        run the sweep after each, until every instance finished or time reaches the horizon."""
        now = self.world.clock.time()
        self._inflight = [(now, m, t) for _, m, t in self._inflight]
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
        """Every instance finished, the control operation sent, every slot free and nobody
        in line (a slot whose holder was deleted is reclaimed by a sweep, once due), every
        delete's cleanup finished."""
        if self._control_due or self.world.partitions(f"Q#{LIMITED}#"):
            return False
        if self.world.deletes_owed():  # a delete's cleanup settles once the sweep is due
            return False
        if any("holder" in i for pk in self._slots() for i in self.world.partition(pk)):
            return False
        return all(
            status in FINISHED
            for workflow in WORKFLOWS
            for status in self.world.statuses(workflow).values()
        )

    def _slots(self) -> list[str]:
        return self.world.partitions(f"S#{LIMITED}#")

    # --- the queues and the runner --------------------------------------------------------------

    def _deliver(self) -> bool:
        self._release_due()
        messages = self.world.receive()
        if not messages:
            return False
        self._invoke(messages, self._runner)
        self._check_limit("after a runner invocation")
        return True

    def _deliver_direct(self) -> bool:
        """One direct invoke of the runner Lambda accepted (work due now): its asynchronous
        invocation, as a wake-up schedule's (see :mod:`.direct_wake_ups`)."""
        payload = self.world.aws.take_invoke()
        if payload is None:
            return False
        self._wake(payload)
        self._check_limit("after a direct invocation")
        return True

    def _release_due(self) -> None:
        now = self.world.clock.time()
        for entry in [e for e in self._inflight if e[0] <= now]:
            self._inflight.remove(entry)
            self.world.make_visible(entry[1], trigger=entry[2])
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
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        if failed and not invocation.faults:
            why = "; ".join(_FAILURES.messages) or "no exception logged"
            self.anomalies.append(f"runner gave a message back with no fault injected: {why}")
        self._settle(records, died, failed, copy=copy)
        if invocation.duplicate:  # at-least-once: the same message, delivered once more
            duplicate = {**records[0], "ReceiptHandle": f"{COPY}duplicate"}
            self._invoke([duplicate], self._other_runner, copy=True)

    def _settle(
        self,
        records: list[dict[str, Any]],
        died: bool,
        failed: set[str],
        *,
        copy: bool = False,
        trigger: bool = False,
    ) -> None:
        """Delete the messages an invocation handled; the others come back after their
        visibility timeout: the queue's, or what the handler asked for (virtual seconds;
        moto would count them in real time)."""
        world = self.world
        now = world.clock.time()
        for record in records:
            asked = world.faults.visibility.pop(record["ReceiptHandle"], None)
            if not died and record["MessageId"] not in failed:
                if not copy:
                    world.delete(record, trigger=trigger)
                continue
            timeout = world.trigger_visibility if trigger else world.visibility
            back = now + (asked if asked is not None else timeout)
            if copy:
                self._resends.append((back, record["Body"]))
            else:
                self._inflight.append((back, record, trigger))
                world.hide(record, trigger=trigger)

    def _nested(self, kind: str, call: Call) -> None:
        """A second runner on the same instance while the first is between two calls."""
        record = self._records[-1]
        if DIRECT in record:
            self._nested_wake(kind, record[DIRECT])
            return
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

    def _deliver_triggers(self) -> bool:
        """One TriggerFunction invocation for the visible trigger messages."""
        messages = self.world.receive(trigger=True)
        if not messages:
            return False
        self._invocations += 1
        invocation = self.world.faults.begin("trigger")
        died, response = False, {}
        try:
            event = lambdas.sqs_event(messages, self.world.trigger_arn)
            context = lambdas.context("TriggerFunction")
            response = self._call("trigger", lambdas.trigger, event, context)
        except Crash:
            died = True
        except BaseException as exc:
            self.anomalies.append(f"exception escaped the trigger handler: {exc!r}")
            died = True
        finally:
            self.world.faults.end(invocation)
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        if failed and not invocation.faults:
            self.anomalies.append("the trigger gave a message back with no fault injected")
        self._settle(messages, died, failed, trigger=True)
        return True

    # --- time, schedules and the sweep ---------------------------------------------------------

    def _fire_due(self) -> bool:
        now = self.world.clock.time()
        due = [s for s in self.world.schedules() if s.at <= now]
        for schedule in due:
            if schedule.invokes_lambda:
                self.world.forget_schedule(schedule)
                self._wake(scheduler_input(schedule.body))
            else:
                self.world.fire(schedule)
        return bool(due)

    def _fire_recurring(self) -> bool:
        """Send the recurring schedule's firings that came due in its window (a
        ``drop_firing`` fault loses one, as a Scheduler delivery that ran out of retries);
        undeploy it a grace period after the window's last firing."""
        if not self._deployed:
            return False
        now = self.world.clock.time()
        until = min(now, self._window_end)
        due = self.world.firings(self._fired_through, until)
        self._fired_through = max(self._fired_through, until)
        for firing in due:
            if not self.world.faults.take_firing_drop(firing.body):
                self.world.send(firing.body, trigger=True)
        if now >= self._undeploy_at:
            self.world.undeploy_schedules()
            self._deployed = False
            return True
        return bool(due)

    @property
    def _undeploy_at(self) -> float:
        return self._window_end + FIRING_GRACE + 1.0

    def _jump(self) -> bool:
        """Move time to the next thing that will happen (below the horizon), run the sweep."""
        upcoming = [s.at for s in self.world.schedules()]
        upcoming += [at for at, _, _ in self._inflight] + [at for at, _ in self._resends]
        if self._deployed:
            upcoming += [f.at for f in self.world.firings(self._fired_through, self._window_end)]
            upcoming.append(self._undeploy_at)
        now = self.world.clock.time()
        later = [t for t in upcoming if t > now]
        if not later or min(later) > self._start + HORIZON:
            return False
        self.world.clock.set(min(later))
        if self.world.faults.fired != self._swept_after:
            # something may have been lost since the last sweep; with nothing lost the sweep
            # finds nothing (the fault-free run never needs it), and it costs a few queries
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
        """Call a handler as ``container`` (on that container's runtime)."""
        try:
            return handler(self.world.containers[container], *args)
        finally:
            metrics().clear_metrics()  # disabled, they would pile up

    # --- events and the control operation ------------------------------------------------------

    def _send_event(self, iid: str, index: int) -> None:
        self._send(iid, self.program.events[index].type, f"{iid}-event-{index}")

    def _send(self, iid: str, event_type: str, key: str) -> None:
        if self.client.send_event(self.workflow, iid, event_type, key):
            self.accepted[iid][event_type] += 1

    def _send_late(self) -> bool:
        if not self._late:
            return False
        iid, index = self._late.pop(0)
        self._send_event(iid, index)
        return True

    def _on_callback(self, workflow: str, iid: str, step_name: str) -> None:
        """A step callback started: check the limit, send the events planned "during" it."""
        if workflow == LIMITED:
            self._check_limit(f"while {iid} runs {step_name}")
        if iid not in self.accepted or (iid, step_name) in self._during_done:
            return
        self._during_done.add((iid, step_name))
        for index in self._steps[step_name].sends if step_name in self._steps else ():
            self._send_event(iid, index)

    def _check_limit(self, when: str) -> None:
        running = sorted(i for i, s in self.world.statuses(LIMITED).items() if s == "running")
        if len(running) > LIMIT:
            self.limit_breaches.append(f"{len(running)} running {when}: {running}")

    def _on_reach(self, iid: str, op_name: str) -> None:
        control = self.program.control
        if self._control_due and control and iid == self.ids[0] and op_name == control.at:
            self._control()

    def _control_at_end(self) -> bool:
        control = self.program.control
        if not self._control_due or control is None or control.at:
            return False
        if self.world.statuses(self.workflow).get(self.ids[0]) not in FINISHED:
            return False
        self._control()
        return True

    def _control(self) -> None:
        """Send the control operation to instance 0; after a restart, the hold event."""
        control = self.program.control
        assert control is not None
        self._control_due = False
        iid = self.ids[0]
        done = self.client.control(self.workflow, iid, control.kind, control.from_step)
        if done and control.kind.startswith("restart") and self._has_hold:
            self._send(iid, HOLD, f"{iid}-hold")
