"""The embedded AWS one worker process reuses for every case: moto provisioned from
template.yaml (``EmbeddedAws``) with every workflow a program can use registered, and one runtime
per container — two API containers (one with a clock a few ms behind), two runners per pacing
(eager and as deployed), the trigger, the sweep — each with its own boto3 clients, so that the
fault hooks know which handler made a call.

moto stores EventBridge Scheduler's recurring schedules but never fires them: the world fires
them itself, from each deployed schedule's expression as virtual time passes, sending what
Scheduler would send to the trigger queue (:meth:`World.firings`).

Between runs the table, queues and schedules are emptied through moto's backends (a boto3
scan-and-delete would cost more than the run itself).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lambda_workflows.aws.dynamodb import DynamoStore
from lambda_workflows.aws.firings import DynamoFiringLedger
from lambda_workflows.aws.items import INSTANCE_SK, instance_pk
from lambda_workflows.aws.recurring import RECURRING_PREFIX, SCHEDULED_TIME, RecurringSchedules
from lambda_workflows.aws.runtime import LAMBDA_RUNNER, AwsRuntime, build_runtime
from lambda_workflows.aws.sqs import parse_work_message
from lambda_workflows.engine.instances.firing_recovery import FiringRecovery
from lambda_workflows.engine.instances.schedules import Schedule, scheduled_time
from lambda_workflows.local.embedded import TEST_RUNNER, EmbeddedAws
from lambda_workflows.testing import VirtualClock

from . import fastmoto
from .faults import FaultInjector
from .workflows import WORKFLOWS, declare_schedule

START = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
ACCOUNT = "123456789012"  # moto's default account
HIDDEN = 36_000  # real seconds a received message stays in flight (far beyond any run)
SKEW_SECONDS = 0.005  # the second API container's clock is 5 ms behind
_AT = re.compile(r"^at\((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\)$")


def quiet_lambdas() -> None:
    """Set this process up for many invocations: no EMF lines (they cost time and say
    nothing here), only critical log lines (the harness reports what matters). Called by
    :class:`World`, so that importing the harness changes nothing for other tests."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "lambda-workflows")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    os.environ["POWERTOOLS_LOG_LEVEL"] = "CRITICAL"
    warnings.filterwarnings("ignore", "No application metrics to publish")


class SimClock(VirtualClock):
    """The virtual clock of a run; every container reads it (the skewed one with an offset)."""

    def restart(self, when: float) -> None:
        """Start a new run at ``when`` (the only way time goes back: the world was emptied)."""
        self._now = when


class SkewedClock:
    """Another container's clock: the same virtual time, ``behind`` seconds late."""

    def __init__(self, base: SimClock, behind: float) -> None:
        self.base = base
        self.behind = behind

    def time(self) -> float:
        return self.base.time() - self.behind

    async def sleep(self, seconds: float) -> None:
        await self.base.sleep(seconds)


@dataclass(frozen=True)
class Firing:
    """One firing of a recurring schedule: when, and the trigger message Scheduler sends."""

    at: float
    body: str


@dataclass(frozen=True)
class DueSchedule:
    """A schedule moto holds: its name, when it is due, and the work message it sends."""

    name: str
    at: float
    body: str
    target: str = ""  # the runner's ARN (a direct wake-up) or the work queue's

    @property
    def invokes_lambda(self) -> bool:
        """True when Scheduler invokes the runner itself (no work message)."""
        return ":lambda:" in self.target


class World:
    """moto, the containers, the fault injector, and direct access for the driver."""

    def __init__(self) -> None:
        quiet_lambdas()
        fastmoto.install()
        self.clock = SimClock(START)
        self.aws = EmbeddedAws(WORKFLOWS, self.clock)
        self.settings = self.aws.settings
        self.faults = FaultInjector()
        self.faults.forget = self._forget
        self.containers: dict[str, AwsRuntime] = {}
        for name, role in (
            ("api", "api"),
            ("api-skewed", "api"),
            ("runner", "runner"),
            ("runner-2", "runner"),
            ("lambda-runner", "runner"),
            ("lambda-runner-2", "runner"),
            ("sweep", "sweep"),
            ("trigger", "trigger"),
        ):
            clock: Any = SkewedClock(self.clock, SKEW_SECONDS) if name == "api-skewed" else None
            runtime = build_runtime(
                self.settings,
                WORKFLOWS,
                session=self.aws.session,
                clock=clock or self.clock,
                runner_settings=LAMBDA_RUNNER if name.startswith("lambda") else TEST_RUNNER,
                sqs_max_delay=0.0,  # moto delays in real time: every wake-up is a schedule
                # Every call is numbered in order, and a case must replay call for call: the
                # journal writes of a gather go one after the other here (threads would number
                # them in any order). tests/functional/test_parallel_writes.py covers faults
                # of concurrent writes.
                parallel_writes=False,
            )
            self.aws.intercept_invokes(runtime)  # its direct invokes of the runner: kept
            for client in _clients(runtime):
                self.faults.attach(client, name, role)
            self.containers[name] = runtime
        self.sqs = self.aws.sqs  # the driver's own clients: never faulted, never numbered
        self.dynamodb = self.aws.session.client("dynamodb")
        self.store = DynamoStore(self.dynamodb, self.settings.table_name, self.clock)
        self.queue_url = self.settings.work_queue_url
        self.trigger_url = self.aws.resources.trigger_queue_url
        self.trigger_arn = self.aws.resources.environment("SweepFunction")["TRIGGER_QUEUE_ARN"]
        self.visibility = self._visibility(self.queue_url)
        self.trigger_visibility = self._visibility(self.trigger_url)

    def _visibility(self, url: str) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["VisibilityTimeout"]
        )["Attributes"]
        return int(attributes["VisibilityTimeout"])

    @staticmethod
    def runners(pacing: str) -> tuple[str, str]:
        """The two runner containers of a pacing (the second takes over, or runs copies)."""
        return (
            ("lambda-runner", "lambda-runner-2") if pacing == "lambda" else ("runner", "runner-2")
        )

    def lease_seconds(self, container: str) -> float:
        return float(self.containers[container].runner.settings.lease_seconds)

    def close(self) -> None:
        self.aws.close()

    # --- between runs -------------------------------------------------------------------------

    def empty(self) -> None:
        """Forget every item, message and schedule, and restart the clock."""
        self._table().items.clear()
        backend = self._sqs_backend()
        for queue in list(backend.queues.values()):
            queue._messages = []
            queue._pending_messages = set()
            queue.deleted_messages = set()
        self._schedule_group().schedules.clear()
        self.aws.invokes.clear()
        declare_schedule(False)
        self.clock.restart(START)

    # --- the queue ----------------------------------------------------------------------------

    def receive(self, trigger: bool = False) -> list[dict[str, Any]]:
        """Visible messages kept in flight: one work message (batch size 1, as the template),
        or up to 10 trigger messages."""
        url = self.trigger_url if trigger else self.queue_url
        if not self._queue(url).messages:  # nothing visible: spare the call
            return []
        response = self.sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10 if trigger else 1,
            VisibilityTimeout=HIDDEN,  # real seconds: the driver decides when it reappears
            AttributeNames=["All"],
        )
        return [dict(m) for m in response.get("Messages", [])]

    def delete(self, message: dict[str, Any], trigger: bool = False) -> None:
        url = self.trigger_url if trigger else self.queue_url
        self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    def make_visible(self, message: dict[str, Any], trigger: bool = False) -> None:
        url = self.trigger_url if trigger else self.queue_url
        self.sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )

    def hide(self, message: dict[str, Any], trigger: bool = False) -> None:
        """Keep a message in flight until the driver makes it visible (in virtual time)."""
        self.sqs.change_message_visibility(
            QueueUrl=self.trigger_url if trigger else self.queue_url,
            ReceiptHandle=message["ReceiptHandle"],
            VisibilityTimeout=HIDDEN,
        )

    def send(self, body: str, trigger: bool = False) -> None:
        url = self.trigger_url if trigger else self.queue_url
        self.sqs.send_message(QueueUrl=url, MessageBody=body)

    def dead_letters(self) -> list[str]:
        """What the dead-letter queues hold: the instances of work messages, the bodies of
        trigger messages."""
        found = [str(parse_work_message(body)) for body in self._dead(self.queue_url)]
        return found + [f"trigger {body}" for body in self._dead(self.trigger_url)]

    def _dead(self, url: str) -> list[str]:
        policy = self._queue(url).redrive_policy or {}
        dlq_name = str(policy.get("deadLetterTargetArn", "")).rsplit(":", 1)[-1]
        if not dlq_name:
            return []
        return [m.body for m in self._sqs_backend().get_queue(dlq_name)._messages]

    # --- schedules ----------------------------------------------------------------------------

    def schedules(self) -> Iterator[DueSchedule]:
        """Every one-time schedule of the group, read from moto (no API calls)."""
        for schedule in list(self._schedule_group().schedules.values()):
            match = _AT.match(schedule.schedule_expression)
            if match is None:
                continue
            at = datetime.fromisoformat(match.group(1)).replace(tzinfo=UTC).timestamp()
            target = schedule.target
            yield DueSchedule(schedule.name, at, target.get("Input", "{}"), target.get("Arn", ""))

    def fire(self, schedule: DueSchedule) -> None:
        """What EventBridge Scheduler does at the due time for a schedule that targets the
        work queue (one made before the direct wake-up): send the input, delete itself."""
        self.send(schedule.body)
        self.forget_schedule(schedule)

    def forget_schedule(self, schedule: DueSchedule) -> None:
        """Delete ``schedule`` (fired: ``ActionAfterCompletion=DELETE``)."""
        self._schedule_group().schedules.pop(schedule.name, None)

    def deploy_schedules(self) -> None:
        """Deploy the scheduled workflow's recurring schedule: its declaration, the Scheduler
        schedule and the ledger's watermark, as the sweep that runs after a deploy does (with
        the world's own clients: the deploy is not under faults)."""
        declare_schedule(True)
        RecurringSchedules(
            self.aws.scheduler,
            self.settings.schedule_group,
            self.trigger_arn,
            self.settings.scheduler_role_arn,
            self.clock,
        ).reconcile(WORKFLOWS)
        self.recover_firings()

    def undeploy_schedules(self) -> None:
        """A deploy that removed the schedule: the last sweep before it starts the firings lost
        until then (so call this a grace period after the last firing), then the declaration
        and the Scheduler schedule go."""
        self.recover_firings()
        declare_schedule(False)
        schedules = self._schedule_group().schedules
        for name in [n for n in schedules if n.startswith(RECURRING_PREFIX)]:
            del schedules[name]

    def recover_firings(self) -> None:
        """One sweep's recovery of lost firings, with the world's own clients (no faults)."""
        runtime = self.aws.runtime
        ledger = DynamoFiringLedger(self.dynamodb, self.settings.table_name)
        retention = self.settings.retention_days * 86_400
        FiringRecovery(WORKFLOWS, ledger, runtime.service, retention).recover(self.clock.time())

    def firings(self, after: float, until: float) -> list[Firing]:
        """The firings of the deployed recurring schedules in ``(after, until]``, in order:
        each the message Scheduler sends to the trigger queue (read from moto, no calls)."""
        found = []
        for schedule in list(self._schedule_group().schedules.values()):
            if not schedule.name.startswith(RECURRING_PREFIX):
                continue
            expression = Schedule(
                schedule.schedule_expression, schedule.schedule_expression_timezone
            )
            body = str(schedule.target["Input"])
            for at in expression.firings(after, until):
                found.append(Firing(at, body.replace(SCHEDULED_TIME, scheduled_time(at))))
        return sorted(found, key=lambda f: (f.at, f.body))

    # --- the table, read directly ---------------------------------------------------------------

    def partition(self, pk: str) -> list[dict[str, Any]]:
        """Every item of a partition, in the wire format (the world's own client)."""
        found: list[dict[str, Any]] = []
        query: dict[str, Any] = {
            "TableName": self.settings.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ConsistentRead": True,
        }
        while True:
            page = self.dynamodb.query(**query)
            found += page.get("Items", [])
            if not page.get("LastEvaluatedKey"):
                return found
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def partitions(self, prefix: str) -> list[str]:
        """The partition keys that start with ``prefix`` (from moto's table, no calls)."""
        items = list(self._table().items.items())
        return sorted(str(k.value) for k, v in items if v and str(k.value).startswith(prefix))

    def statuses(self, workflow: str) -> dict[str, str]:
        """Instance id -> status of ``workflow``'s instances (tombstones left out), read from
        moto's table without a call: cheap enough to look at every step."""
        from moto.dynamodb.models.dynamo_type import DynamoType

        prefix = instance_pk(workflow, "")
        instance_sk = DynamoType({"S": INSTANCE_SK})
        found = {}
        for key, items in list(self._table().items.items()):
            if not str(key.value).startswith(prefix):
                continue
            item = items.get(instance_sk)
            if item is not None and "status" in item.attrs:
                found[str(key.value)[len(prefix) :]] = str(item.attrs["status"].value)
        return found

    def deletes_owed(self) -> int:
        """Tombstones (and carried-over markers) whose cleanup is still owed or settling: on
        the sweep's due index under ``deleted#<n>`` (from moto's table, no calls)."""
        return sum(
            1
            for items in list(self._table().items.values())
            for item in list(items.values())
            if str(getattr(item.attrs.get("due_shard"), "value", "")).startswith("deleted#")
        )

    def _forget(self, item: str) -> None:
        """Lose a table item (``pk/sk``) behind everybody's back: the canary fault."""
        from moto.dynamodb.models.dynamo_type import DynamoType

        pk, sk = item.split("/", 1)
        self._table().delete_item(DynamoType({"S": pk}), DynamoType({"S": sk}))

    # --- moto's insides -----------------------------------------------------------------------

    def _table(self) -> Any:
        from moto.dynamodb.models import dynamodb_backends

        backend = dynamodb_backends[ACCOUNT]["us-east-1"]
        return backend.get_table(self.settings.table_name)

    def _sqs_backend(self) -> Any:
        from moto.sqs.models import sqs_backends

        return sqs_backends[ACCOUNT]["us-east-1"]

    def _queue(self, url: str) -> Any:
        return self._sqs_backend().get_queue(url.rsplit("/", 1)[1])

    def _schedule_group(self) -> Any:
        from moto.scheduler.models import scheduler_backends

        backend = scheduler_backends[ACCOUNT]["us-east-1"]
        return backend.get_schedule_group(self.settings.schedule_group)


def _clients(runtime: AwsRuntime) -> list[Any]:
    """Every distinct boto3 client the runtime's adapters hold."""
    found: dict[int, Any] = {}
    for part in (runtime.store, runtime.queue, runtime.wakeups, runtime.service, runtime.runner):
        for value in vars(part).values() if hasattr(part, "__dict__") else ():
            client = getattr(value, "client", value)
            if hasattr(client, "meta") and hasattr(client.meta, "events"):
                found[id(client)] = client
        client = getattr(part, "client", None)
        if client is not None:
            found[id(client)] = client
    return list(found.values())
