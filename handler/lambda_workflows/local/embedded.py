"""An embedded AWS (moto, in-process) provisioned from template.yaml, with the engine's real
adapters and the real RunnerFunction handler driven by hand.

moto stores EventBridge Scheduler schedules but never fires them, and honours SQS delays in
real time; so wake-ups all go through schedules here (``sqs_max_delay=0``), and
:meth:`EmbeddedAws.fire_due_schedules` fires the due ones itself, by their target, and deletes
them as ``ActionAfterCompletion=DELETE`` would: a wake-up targeting the RunnerFunction calls its
real handler with the schedule's input (a Lambda invoke would need Docker here); one targeting
the work queue (made before the direct wake-up) sends the input to the queue.

Work due now invokes the RunnerFunction directly too (:mod:`lambda_workflows.aws.runner_invoke`):
each runtime's Lambda client is answered here, as Lambda accepts an asynchronous invoke (202),
and the payload is held in :attr:`EmbeddedAws.invokes` until the worker delivers it
(:meth:`EmbeddedAws.take_invoke`, then :meth:`EmbeddedAws.invoke_wake_up`), as moto would need
Docker to run the function.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse, HTTPHeaders

from lambda_workflows.aws.runtime import AwsRuntime, build_runtime
from lambda_workflows.aws.settings import AwsSettings
from lambda_workflows.aws.shards import LOCAL_INDEX_SHARDS
from lambda_workflows.aws.sqs import parse_work_message, work_message
from lambda_workflows.aws.wake_events import ATTEMPT_NUMBER, EXECUTION_ID
from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.entrypoint import WorkflowEntrypoint
from lambda_workflows.engine.instances.advance import RunnerSettings, StatusListener
from lambda_workflows.engine.model import InstanceRef

_AT = re.compile(r"^at\((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\)$")
TEST_RUNNER = RunnerSettings(lease_seconds=960.0, inline_wait=0.0, signal_interval=0.0)


@dataclass(frozen=True)
class PendingSchedule:
    """A schedule moto holds: when it is due, and what it will send."""

    name: str
    at: float
    ref: InstanceRef
    reason: str
    target: str = ""  # the target's ARN: the runner (Lambda) or the work queue (SQS)
    body: str = ""  # the target's input, as stored

    @property
    def invokes_lambda(self) -> bool:
        """True when the schedule invokes a function rather than sending to a queue."""
        return ":lambda:" in self.target


class EmbeddedAws:
    """moto + provisioned resources + the engine wired to them.

    Args:
        workflows: the registry.
        clock: the engine's time source (a virtual clock in tests).
        runner_settings: runner pacing (default: check signals before every step).
        env_values: values readable as ``self.env.NAME`` in workflows.
        on_status: called after each status change the runner makes.
    """

    def __init__(
        self,
        workflows: Mapping[str, type[WorkflowEntrypoint]],
        clock: Clock,
        *,
        runner_settings: RunnerSettings = TEST_RUNNER,
        env_values: Mapping[str, Any] | None = None,
        on_status: StatusListener | None = None,
    ) -> None:
        from moto import mock_aws

        from lambda_workflows.infra.provision import provision

        self._mock = mock_aws()
        self._mock.start()
        _serialize_moto()
        self.session = boto3.session.Session(
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        self.resources = provision(self.session, prefix=f"wf-{uuid.uuid4().hex[:8]}")
        self.environment = self.resources.environment()
        # one developer's load, not 10,000 transitions a second: fewer index shards make each
        # listing and count a few moto Queries instead of 33 (still sharded: every path runs)
        # ... and every function knows the runner's ARN, as the deployed senders do
        # (RUNNER_FUNCTION_ARN): work due now invokes it
        self.settings = replace(
            AwsSettings.from_env(self.environment),
            index_shards=LOCAL_INDEX_SHARDS,
            runner_function_arn=LambdaContext().invoked_function_arn,
        )
        self.clock = clock
        self.runtime: AwsRuntime = build_runtime(
            self.settings,
            workflows,
            session=self.session,
            clock=clock,
            runner_settings=runner_settings,
            sqs_max_delay=0.0,
            env_values=env_values,
            on_status=on_status,
        )
        self.sqs = self.session.client("sqs")
        self.scheduler = self.session.client("scheduler")
        self.invocations = 0
        self.invokes: list[dict[str, Any]] = []  # accepted direct invokes, oldest first
        self._invokes_lock = threading.Lock()
        self.intercept_invokes(self.runtime)
        from lambda_workflows.entrypoints.runner import make_handler

        self._runner_handler = make_handler(self.runtime)

    def close(self) -> None:
        """Stop moto (everything is forgotten)."""
        self._mock.stop()

    # --- the work queue -------------------------------------------------------------------

    def receive(self, max_messages: int = 10) -> list[dict[str, Any]]:
        """Take visible work messages off the queue (they stay in flight until deleted)."""
        response = self.sqs.receive_message(
            QueueUrl=self.settings.work_queue_url,
            MaxNumberOfMessages=max_messages,
            VisibilityTimeout=900,
            WaitTimeSeconds=0,
            AttributeNames=["All"],
        )
        return [dict(m) for m in response.get("Messages", [])]

    def invoke_runner(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """Call the real RunnerFunction handler with an SQS event for ``messages``.

        Successful messages are deleted; failed ones become visible again at once. A
        ``BaseException`` (a simulated crash) propagates, leaving the messages in flight: call
        :meth:`redeliver` to model their visibility timeout running out.
        """
        self.invocations += 1
        event = sqs_event(messages, self.settings.work_queue_arn)
        response = self._runner_handler(event, LambdaContext())
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        for message in messages:
            if message["MessageId"] in failed:
                self.sqs.change_message_visibility(
                    QueueUrl=self.settings.work_queue_url,
                    ReceiptHandle=message["ReceiptHandle"],
                    VisibilityTimeout=0,
                )
            else:
                self.sqs.delete_message(
                    QueueUrl=self.settings.work_queue_url, ReceiptHandle=message["ReceiptHandle"]
                )
        return response

    def run_invocation(
        self,
        messages: list[dict[str, Any]],
        *,
        dies: tuple[type[BaseException], ...] = (BaseException,),
    ) -> BaseException | None:
        """One RunnerFunction invocation for ``messages``, which may die.

        Returns None when the handler returned (see :meth:`invoke_runner`). When one of
        ``dies`` escapes it — the invocation died, as a Lambda timeout or crash ends one — its
        messages are made visible again at once (their visibility timeout ran out, early) and
        the exception is returned. Nothing else needs mending: the lease is taken in the
        message's name, so each message delivered again takes back the lease it held, and the
        instance resumes from its journal. Ctrl-C and ``SystemExit`` always propagate.
        """
        try:
            self.invoke_runner(messages)
        except (KeyboardInterrupt, SystemExit):
            raise
        except dies as exc:
            self.redeliver(messages)
            return exc
        return None

    def redeliver(self, messages: list[dict[str, Any]]) -> None:
        """Make in-flight messages visible again (their invocation died)."""
        for message in messages:
            self.sqs.change_message_visibility(
                QueueUrl=self.settings.work_queue_url,
                ReceiptHandle=message["ReceiptHandle"],
                VisibilityTimeout=0,
            )

    def send(self, ref: InstanceRef) -> None:
        """Post a work message for ``ref``."""
        self.sqs.send_message(QueueUrl=self.settings.work_queue_url, MessageBody=work_message(ref))

    # --- direct invokes of the runner ------------------------------------------------------

    def intercept_invokes(self, runtime: AwsRuntime) -> None:
        """Answer the direct invokes ``runtime`` makes as Lambda accepts an asynchronous one
        (202), keeping each payload in :attr:`invokes`. Registered last, so that a fault hook
        (tests.aws_faults) still refuses or times out the call around it."""
        direct = runtime.queue.direct
        if direct is not None:
            direct.client.meta.events.register_last("before-call", self._accept_invoke)

    def queue_only(self) -> None:
        """Send all work through the work queue, as a stack did before direct invokes (and a
        sender that does not know the runner's ARN does): for tests of the queue's path."""
        self.runtime.queue.direct = None

    def _accept_invoke(self, model: Any, params: dict[str, Any], **_: Any) -> Any:
        if model.name != "Invoke":
            return None
        with self._invokes_lock:
            self.invokes.append(json.loads(params["body"]))
        meta = {"HTTPStatusCode": 202, "HTTPHeaders": {}}
        return AWSResponse("https://lambda.local", 202, HTTPHeaders(), None), {
            "StatusCode": 202,
            "ResponseMetadata": meta,
        }

    def take_invoke(self) -> dict[str, Any] | None:
        """The oldest accepted direct invoke not yet delivered (None: none)."""
        with self._invokes_lock:
            return self.invokes.pop(0) if self.invokes else None

    # --- the scheduler emulator -----------------------------------------------------------

    def schedules(self) -> list[PendingSchedule]:
        """Every schedule in the group, earliest first."""
        group = self.settings.schedule_group
        found: list[PendingSchedule] = []
        pages = self.scheduler.get_paginator("list_schedules").paginate(GroupName=group)
        for page in pages:
            for summary in page.get("Schedules", []):
                detail = self.scheduler.get_schedule(Name=summary["Name"], GroupName=group)
                match = _AT.match(detail["ScheduleExpression"])
                if match is None:
                    continue
                at = datetime.fromisoformat(match.group(1)).replace(tzinfo=UTC).timestamp()
                body = detail["Target"].get("Input", "{}")
                reason = str(json.loads(body).get("reason", ""))
                target = str(detail["Target"].get("Arn", ""))
                found.append(
                    PendingSchedule(
                        summary["Name"], at, parse_work_message(body), reason, target, body
                    )
                )
        return sorted(found, key=lambda s: s.at)

    def due_schedules(self) -> list[PendingSchedule]:
        """The schedules due at the clock's time, earliest first."""
        now = self.clock.time()
        return [s for s in self.schedules() if s.at <= now]

    def fire_due_schedules(self) -> int:
        """Fire every schedule due at the clock's time (see :meth:`fire`); how many fired."""
        due = self.due_schedules()
        for schedule in due:
            self.fire(schedule)
        return len(due)

    def fire(self, schedule: PendingSchedule) -> BaseException | None:
        """Fire ``schedule`` now, at its target, and delete it; what a direct invocation of
        the runner failed with, if it did (see :meth:`invoke_wake_up`)."""
        self.scheduler.delete_schedule(Name=schedule.name, GroupName=self.settings.schedule_group)
        if schedule.invokes_lambda:
            return self.invoke_wake_up(scheduler_input(schedule.body))
        self.sqs.send_message(QueueUrl=self.settings.work_queue_url, MessageBody=schedule.body)
        return None

    def invoke_wake_up(self, payload: dict[str, Any]) -> BaseException | None:
        """An asynchronous invocation of the real RunnerFunction handler with ``payload``.

        If it fails (raises, or dies as a crash does) the payload goes to the work queue
        wrapped in Lambda's invocation record, as the function's OnFailure destination does
        once Lambda's retries are spent; the exception is returned. Ctrl-C and ``SystemExit``
        always propagate.
        """
        self.invocations += 1
        try:
            self._runner_handler(payload, LambdaContext())
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            record = invocation_record(payload, self._runner_arn, type(exc).__name__)
            self.sqs.send_message(QueueUrl=self.settings.work_queue_url, MessageBody=record)
            return exc
        return None

    @property
    def _runner_arn(self) -> str:
        return LambdaContext().invoked_function_arn


_MOTO_LOCK = threading.RLock()


def _serialize_moto() -> None:
    """Make each moto call atomic, as each AWS call is.

    moto's in-process backends are not thread-safe: two conditional updates racing from two
    threads (the local runtime's HTTP threads and its worker) could both pass their condition.
    Real DynamoDB evaluates a condition and applies the write atomically, and the engine relies
    on that; so the embedded AWS handles one request at a time.
    """
    from moto.core.models import botocore_stubber

    if getattr(botocore_stubber, "_workflows_serialized", False):
        return
    process = botocore_stubber.process_request

    def serialized(request: Any) -> Any:
        with _MOTO_LOCK:
            return process(request)

    botocore_stubber.process_request = serialized  # type: ignore[method-assign]
    botocore_stubber._workflows_serialized = True  # type: ignore[attr-defined]


class LambdaContext:
    """Enough of a Lambda context for the handlers: a name and a fixed time budget."""

    memory_limit_in_mb = 512
    aws_request_id = "local"

    def __init__(self, function_name: str = "RunnerFunction", remaining_ms: int = 900_000) -> None:
        self.function_name = function_name
        self.invoked_function_arn = (
            f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        )
        self._remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self._remaining_ms


def scheduler_input(body: str, attempt: int = 1) -> dict[str, Any]:
    """A schedule's input as Scheduler delivers it: its context attributes filled in."""
    filled = body.replace(EXECUTION_ID, uuid.uuid4().hex[:16]).replace(ATTEMPT_NUMBER, str(attempt))
    payload: dict[str, Any] = json.loads(filled)
    return payload


def invocation_record(payload: dict[str, Any], function_arn: str, error: str) -> str:
    """The record Lambda sends to an OnFailure destination once an asynchronous invocation of
    ``payload`` failed for good (its retries spent)."""
    return json.dumps(
        {
            "version": "1.0",
            "timestamp": datetime.now(UTC).isoformat(),
            "requestContext": {
                "requestId": uuid.uuid4().hex,
                "functionArn": f"{function_arn}:$LATEST",
                "condition": "RetriesExhausted",
                "approximateInvokeCount": 3,
            },
            "requestPayload": payload,
            "responseContext": {"statusCode": 200, "functionError": "Unhandled"},
            "responsePayload": {"errorType": error},
        }
    )


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """The SQS event Lambda would deliver for ``messages``."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
    }
