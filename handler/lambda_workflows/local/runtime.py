"""The local runtime: the real Lambda handlers on an embedded AWS, in one process.

- a worker thread feeds the work queue's messages to the real RunnerFunction handler;
- a scheduler emulator fires due EventBridge Scheduler schedules (moto never does) and deletes
  them; with ``skip_sleeps`` it also jumps the clock over idle sleeps and retry delays, with
  ``skip_event_timeouts`` over event-wait timeouts; the time skipped does not count toward the
  wake-ups it does not skip (see :class:`.clock.HeldWakeUps`);
- the workflows' recurring schedules (``schedules = [...]``) are reconciled at start, as the
  sweep does after a deploy, and fire on the clock, real time passing or moved by
  ``POST /_dev/clock/advance``, through the trigger queue and the real TriggerFunction
  (:mod:`.recurring`); idle time skipped over a sleep fires none;
- :meth:`LocalRuntime.handle_http` turns an HTTP request into an API Gateway (REST, proxy)
  event for the real ApiFunction handler, except the ``/_dev`` routes that read and move the
  clock (:mod:`.dev_routes`) and put EventBridge events through the real TriggerFunction
  handler (:mod:`.dev_events`), which only a local runtime has;
- each registered workflow's ``self.logger`` lines are printed with the status lines, at INFO
  (:mod:`.workflow_logs`).

A step callback that raises :class:`lambda_workflows.testing.Crash` kills its invocation as a Lambda
crash would: the message is redelivered and takes back the lease it held.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lambda_workflows.aws.sqs import parse_work_message
from lambda_workflows.engine.clock import iso
from lambda_workflows.engine.durations import format_duration
from lambda_workflows.engine.entrypoint import WorkflowEntrypoint
from lambda_workflows.engine.instances.advance import RunnerSettings
from lambda_workflows.engine.model import InstanceRecord

from .clock import HeldWakeUps, SkippingClock
from .dev_events import DevEvents
from .dev_routes import DevRoutes, is_dev_path
from .embedded import EmbeddedAws, LambdaContext, PendingSchedule
from .recurring import RecurringEmulator
from .workflow_logs import WorkflowLogPrinter

DEV_RUNNER = RunnerSettings(lease_seconds=960.0, inline_wait=1.0, signal_interval=0.0)
Printer = Callable[[str], None]
_WAKE_UP = {"sleep": "sleep", "retry": "retry delay", "event": "event-wait timeout"}


class LocalRuntime:
    """Embedded AWS + worker + scheduler emulator + HTTP-to-API-Gateway adapter.

    Args:
        workflows: the registry.
        env_values: values readable as ``self.env.NAME`` in workflows.
        skip_sleeps: when nothing is runnable, jump the clock to the next sleep or retry delay
            instead of waiting for it.
        skip_event_timeouts: when nothing is runnable, jump the clock to the next event-wait
            timeout too: a ``wait_for_event`` that gets no event times out at once.
        out: where the status lines and the workflows' log lines go.
        log_level: the level of the workflows' ``self.logger`` lines shown (a logger whose
            author set a level keeps it).
    """

    def __init__(
        self,
        workflows: Mapping[str, type[WorkflowEntrypoint]],
        *,
        env_values: Mapping[str, Any] | None = None,
        skip_sleeps: bool = True,
        skip_event_timeouts: bool = False,
        out: Printer = print,
        log_level: int = logging.INFO,
    ) -> None:
        self.clock = SkippingClock()
        self.skip_sleeps = skip_sleeps
        self.skip_event_timeouts = skip_event_timeouts
        self.out = out
        self._statuses: dict[str, str] = {}
        self._lock = threading.Lock()
        self._api_lock = threading.Lock()  # see handle_http
        # the worker and POST /_dev/clock/advance both fire due schedules: one at a time, or
        # both would send the same wake-up and one would delete a deleted schedule
        self._schedules_lock = threading.Lock()
        self._dev_routes = DevRoutes(self.clock.time, self.advance_clock)
        self._logs = WorkflowLogPrinter(workflows.values(), out, self.clock.time, log_level)
        self.aws = EmbeddedAws(
            workflows,
            self.clock,
            runner_settings=DEV_RUNNER,
            env_values=env_values,
            on_status=self._status_changed,
        )
        self.workflows = workflows
        self._dev_routes.add(DevEvents(self.aws, out).routes())
        self.recurring = RecurringEmulator(self.aws)
        self._deployed(self.recurring.reconcile().created)
        from lambda_workflows.entrypoints.api import make_handler

        # a subscription's long poll lets other requests in while it waits (see handle_http)
        api_runtime = dataclasses.replace(self.aws.runtime, poll_pause=self._pause_unlocked)
        self._api_handler = make_handler(api_runtime)
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self.crashes = 0
        self._held = HeldWakeUps(self.clock)  # wake-ups not skipped: skipped time not counted
        self._said_held: set[str] = set()  # those the screen said so of
        self._logs.attach()  # last: a runtime that failed to start has changed no logger

    # --- status lines ---------------------------------------------------------------------

    def _status_changed(self, record: InstanceRecord) -> None:
        key = f"{record.workflow}/{record.id}"
        with self._lock:
            if self._statuses.get(key) == record.status.value:
                return
            self._statuses[key] = record.status.value
        detail = ""
        if record.status.value == "waiting" and record.wake_at:
            detail = f" (until {iso(record.wake_at)})"
        if record.error:
            detail = f" ({record.error.name}: {record.error.message})"
        self.out(f"[{iso(self.clock.time())}] {key} -> {record.status.value}{detail}")

    # --- the worker -----------------------------------------------------------------------

    def step(self) -> bool:
        """Do one unit of work: run one direct invoke or message, or fire due schedules, or
        skip idle time.

        Returns False when there was nothing to do.
        """
        direct = self.aws.take_invoke()  # work due now, invoked directly
        if direct is not None:
            self._invoke_direct(direct)
            return True
        messages = self.aws.receive(max_messages=1)
        if messages:
            self._invoke(messages)
            return True
        with self._schedules_lock:
            if self._fire_due() or self._fire_recurring():
                return True
        if self.skip_sleeps or self.skip_event_timeouts:
            upcoming = [s for s in self.aws.schedules() if self._skippable(s)]
            if upcoming:
                gap = self.clock.skip_to(upcoming[0].at)
                self.recurring.skip(self.clock.time())  # no firings for skipped idle time
                if gap > 1:
                    what = _WAKE_UP.get(upcoming[0].reason, upcoming[0].reason)
                    self.out(
                        f"[{iso(self.clock.time())}] skipped {gap:,.0f} s of idle time "
                        f"({what} of {upcoming[0].ref})"
                    )
                    self._say_held()
                return True
        return False

    def _fire_due(self) -> int:
        """Fire the schedules due now; one of a kind that is not skipped is due once its time
        passed without counting the time skipped since it was set (see HeldWakeUps)."""
        now = self.clock.time()
        pending = self.aws.schedules()
        self._held.keep_only({(s.name, s.at) for s in pending})
        due = [s for s in pending if self._due_at(s) <= now]
        for schedule in due:
            self.aws.fire(schedule)
        return len(due)

    def _due_at(self, schedule: PendingSchedule) -> float:
        if self._skippable(schedule):
            return schedule.at
        return self._held.due_at(schedule.name, schedule.at)

    def _say_held(self) -> None:
        """Say once of each wake-up a skip passed that it still waits for its own time."""
        for schedule in self.aws.schedules():
            if self._skippable(schedule) or schedule.at > self.clock.time():
                continue
            if schedule.name in self._said_held:
                continue
            self._said_held.add(schedule.name)
            what = _WAKE_UP.get(schedule.reason, schedule.reason)
            self.out(
                f"[{iso(self.clock.time())}] the {what} of {schedule.ref} (at "
                f"{iso(schedule.at)}) keeps its time: the time skipped does not count toward it"
            )

    def _skippable(self, schedule: PendingSchedule) -> bool:
        if schedule.reason == "event":
            return self.skip_event_timeouts
        return self.skip_sleeps

    def advance_clock(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` and fire what came due; return the new time.

        The wake-ups fired are on the work queue when this returns; the worker runs them.
        """
        with self._schedules_lock:
            now = self.clock.advance(seconds)
            fired = self._fire_due()
            self._fire_recurring()
        self.out(
            f"[{iso(now)}] clock moved forward {format_duration(seconds)}; "
            f"{fired} wake-up{'' if fired == 1 else 's'} came due"
        )
        return now

    def _deployed(self, names: list[str]) -> None:
        now = self.clock.time()
        for workflow, schedule in self.recurring.described(names):
            zone = "" if schedule.timezone == "UTC" else f" {schedule.timezone}"
            upcoming = [iso(at) for at in schedule.next_firings(now, 1)] or ["never"]
            self.out(
                f"[{iso(now)}] schedule {schedule.expression}{zone} of {workflow} deployed; "
                f"next firing {upcoming[0]}"
            )

    def _fire_recurring(self) -> int:
        """Fire the recurring schedules due by now, a line each; how many fired."""
        firings = self.recurring.fire()
        for one in firings:
            self.out(
                f"[{iso(self.clock.time())}] {one.expression} of {one.workflow} fired for "
                f"{iso(one.at)}: instance {one.workflow}/{one.id}"
            )
        return len(firings)

    def _invoke(self, messages: list[dict[str, Any]]) -> None:
        died = self.aws.run_invocation(messages)  # any exception escaping it: a crash
        if died is None:
            return
        self.crashes += 1
        for message in messages:
            self.out(
                f"[{iso(self.clock.time())}] {parse_work_message(message['Body'])} invocation "
                f"died ({died}); the message is redelivered and the instance resumes from its "
                "journal"
            )

    def _invoke_direct(self, payload: dict[str, Any]) -> None:
        died = self.aws.invoke_wake_up(payload)  # any exception escaping it: a crash
        if died is None:
            return
        self.crashes += 1
        self.out(
            f"[{iso(self.clock.time())}] {payload['workflow']}/{payload['id']} invocation died "
            f"({died}); Lambda hands it to the work queue and the instance resumes from its "
            "journal"
        )

    def run_until_idle(self, max_steps: int = 100_000) -> None:
        """Work until nothing is runnable (what ``lambda-workflows run`` uses)."""
        for _ in range(max_steps):
            if not self.step():
                return

    def start(self) -> None:
        """Start the background worker."""
        self._worker = threading.Thread(target=self._work, name="local-runner", daemon=True)
        self._worker.start()

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self.step()
            except Exception as exc:  # keep serving; show what went wrong
                self.out(f"worker error: {type(exc).__name__}: {exc}")
                busy = False
            if not busy:
                self._stop.wait(0.05)

    def close(self) -> None:
        """Stop the worker and the embedded AWS."""
        self._stop.set()
        if self._worker is not None:
            self._worker.join(timeout=10)
        self._logs.detach()
        self.aws.close()

    # --- HTTP -----------------------------------------------------------------------------

    def _pause_unlocked(self, seconds: float) -> None:
        """A long poll's pause between two reads (``GET …/subscribe?wait=``): the API lock is
        let go meanwhile, or one waiting subscriber would hold every other request up to 25 s.
        (Lambda runs each waiting request in a container of its own.)"""
        self._api_lock.release()
        try:
            time.sleep(seconds)
        finally:
            self._api_lock.acquire()

    def serve_links_at(self, base_url: str) -> None:
        """Approval links start with ``base_url`` (where the dev server listens)."""
        runtime = self.aws.runtime
        if runtime.links is not None:
            runtime.use_links(runtime.links.at(base_url))

    def handle_http(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: Sequence[tuple[str, str]],
        body: bytes,
    ) -> tuple[int, dict[str, str], bytes]:
        """Serve one HTTP request through the real ApiFunction handler.

        Called from every connection thread of the dev server, and serialized: one request is
        inside the handler at a time. The handler's resolver (Powertools) keeps the request
        being resolved in shared state — ``BaseRouter.current_event`` is a class attribute,
        the matched route sits in the resolver's ``context`` dict — so two threads inside it
        answer with each other's status codes, or fail with ``KeyError: '_route'``. A resolver
        per thread would not help (the class attribute is shared by every instance), and
        serializing costs nothing measurable: the handler's work is moto calls, which the
        embedded AWS already runs one at a time, and pure-Python validation, which the GIL
        runs one at a time. It is also what Lambda does: one request per container at a time.
        Sockets, body framing and JSON encoding of the answer stay concurrent, outside the lock.

        Args:
            method: the request method, as sent.
            path: the request path, still percent-encoded (as API Gateway's REST API passes it).
            query: the decoded query parameters, in order; a repeated name keeps every value.
            headers: the request headers, in order; a repeated name keeps every value.
            body: the request body, de-chunked.

        Returns:
            The status, the headers and the body of the answer.
        """
        if is_dev_path(path):
            return self._dev_routes.answer(method, path, body)
        event = api_gateway_event(method, path, query, headers, body)
        with self._api_lock:
            response = self._api_handler(event, LambdaContext("ApiFunction", 29_000))
        payload = response.get("body") or ""
        if response.get("isBase64Encoded"):
            data = base64.b64decode(payload)
        else:
            data = payload.encode() if isinstance(payload, str) else bytes(payload)
        out_headers = {k: str(v) for k, v in (response.get("headers") or {}).items()}
        for key, values in (response.get("multiValueHeaders") or {}).items():
            out_headers[key] = ", ".join(map(str, values))
        return int(response.get("statusCode", 500)), out_headers, data


def api_gateway_event(
    method: str,
    path: str,
    query: Sequence[tuple[str, str]],
    headers: Sequence[tuple[str, str]],
    body: bytes,
) -> dict[str, Any]:
    """The API Gateway REST API proxy event (payload format 1.0) for an HTTP request.

    As API Gateway builds it: a repeated header or query parameter is in the single-value map
    with its last value and in the multi-value map with all of them; ``path`` is passed as
    sent; a body that is not UTF-8 is base64-encoded.
    """
    text: str | None
    encoded = False
    if not body:
        text = None
    else:
        try:
            text = body.decode()
        except UnicodeDecodeError:
            text, encoded = base64.b64encode(body).decode(), True
    single_headers = dict(headers)
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": single_headers,
        "multiValueHeaders": _multi(headers),
        "queryStringParameters": dict(query) or None,
        "multiValueQueryStringParameters": _multi(query) or None,
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "path": f"/local{path}",
            "stage": "local",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {
                "sourceIp": "127.0.0.1",
                "userAgent": single_headers.get("User-Agent", ""),
            },
            "accountId": "123456789012",
            "apiId": "local",
            "protocol": "HTTP/1.1",
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


def _multi(pairs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return grouped
