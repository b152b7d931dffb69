"""Work due now as an asynchronous invoke of the RunnerFunction, instead of an SQS message.

"Advance this instance now" (a new instance, an event for a waiting one, a runner handing its
instance on) is one Lambda request as an asynchronous invoke (``InvocationType=Event``), where
a work message costs three SQS requests (the send, the event source's receive and delete). Its
payload is fenced as a wake-up schedule's direct invocation is (see
:mod:`lambda_workflows.aws.wake_events`)::

    {"workflow": ..., "id": ..., "reason": "work",
     "wake": {"execution": "send-<uuid4>", "attempt": "1"}}

The runner takes the lease as ``wake:send-<uuid4>``, delivery 1000: a Lambda retry of an
invocation that died holding it is turned away and fails, so Lambda tries again, then hands it
to the work queue (the function's OnFailure destination), whose later delivery takes it back.

Nothing is lost on the way: an invoke Lambda refuses (throttled, a 5xx, no connection, any
error) returns False, and the caller sends the work message instead. So does an invoke that
timed out after Lambda may have accepted it: then the instance gets two deliveries, which the
lease and the journal make harmless (each step still runs once). The Lambda client is made on
the first invoke: a cold start that sends nothing does not load Lambda's service model.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from lambda_workflows.engine.model import InstanceRef

from .work_messages import work_message

REASON = "work"
EXECUTION_PREFIX = "send-"
ACCEPTED = 202  # an asynchronous invoke Lambda queued
CLIENT_CONFIG = Config(
    connect_timeout=3, read_timeout=5, retries={"mode": "standard", "total_max_attempts": 2}
)
"""Lambda answers an asynchronous invoke at once (202): a call that hangs or is throttled
again is better sent as a work message at once than retried for long."""
log = logging.getLogger("lambda_workflows.runner_invoke")


def direct_work(ref: InstanceRef) -> str:
    """The payload of a direct invoke of the runner for ``ref`` (a fresh execution id: each
    send is its own delivery)."""
    body = json.loads(work_message(ref, REASON))
    body["wake"] = {"execution": f"{EXECUTION_PREFIX}{uuid.uuid4()}", "attempt": "1"}
    return json.dumps(body, separators=(",", ":"))


class RunnerInvokes:
    """Asynchronous invokes of the RunnerFunction (the direct path of the work queue).

    Args:
        make_client: makes the boto3 ``lambda`` client, on the first invoke.
        runner_arn: the RunnerFunction's ARN (``RUNNER_FUNCTION_ARN``); None until known (the
            runner learns its own from its invocation context): every send goes to SQS.
    """

    def __init__(self, make_client: Callable[[], Any], runner_arn: str | None = None) -> None:
        self._make_client = make_client
        self.runner_arn = runner_arn

    @functools.cached_property
    def client(self) -> Any:
        """The boto3 ``lambda`` client (made on first use)."""
        return self._make_client()

    def invoke(self, ref: InstanceRef) -> bool:
        """Invoke the runner for ``ref``, asynchronously; True once Lambda accepted it, False
        when the ARN is unknown or the invoke failed (send the work message instead)."""
        arn = self.runner_arn
        if arn is None:
            return False
        try:
            answer = self.client.invoke(
                FunctionName=arn, InvocationType="Event", Payload=direct_work(ref).encode()
            )
        except (ClientError, BotoCoreError) as exc:
            # refused, or maybe accepted (a timeout): the work message goes instead, and a
            # second delivery is harmless
            log.warning("direct invoke of the runner for %s failed (%s); queueing it", ref, exc)
            return False
        return int(answer.get("StatusCode", 0)) == ACCEPTED
