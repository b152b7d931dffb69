"""The work queue on SQS: one message = "advance this instance" (``{"workflow", "id"}``).

A single send due now goes to the runner as a direct invoke when the runner's ARN is known
(:mod:`lambda_workflows.aws.runner_invoke`), and here only if that invoke fails."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from lambda_workflows.engine.model import InstanceRef

from .errors import translate
from .work_messages import parse_work_message, work_message

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from .runner_invoke import RunnerInvokes

__all__ = ["BATCH", "MAX_DELAY", "SqsWorkQueue", "parse_work_message", "work_message"]

MAX_DELAY = 900  # SQS DelaySeconds upper bound (15 minutes)
BATCH = 10  # SendMessageBatch upper bound


class SqsWorkQueue:
    """:class:`~lambda_workflows.engine.instances.ports.WorkQueue` on an SQS queue.

    Args:
        client: a boto3 ``sqs`` client.
        queue_url: the work queue.
        direct: when given, a single send due now invokes the runner instead (one Lambda
            request for three SQS requests, see :mod:`lambda_workflows.aws.runner_invoke`);
            the message is sent when that invoke fails. Delayed sends and batches use SQS.
    """

    def __init__(
        self, client: SQSClient, queue_url: str, direct: RunnerInvokes | None = None
    ) -> None:
        self.client = client
        self.queue_url = queue_url
        self.direct = direct

    def send(self, ref: InstanceRef, delay: float = 0.0) -> None:
        seconds = min(MAX_DELAY, max(0, math.ceil(delay)))
        if seconds == 0 and self.direct is not None and self.direct.invoke(ref):
            return
        try:
            self.client.send_message(
                QueueUrl=self.queue_url, MessageBody=work_message(ref), DelaySeconds=seconds
            )
        except (ClientError, BotoCoreError) as exc:
            raise translate(exc, "SQS", f"SendMessage for {ref}") from exc

    def send_many(self, refs: Sequence[InstanceRef]) -> None:
        for start in range(0, len(refs), BATCH):
            chunk = refs[start : start + BATCH]
            entries = [
                {"Id": str(i), "MessageBody": work_message(ref)} for i, ref in enumerate(chunk)
            ]
            try:
                response = self.client.send_message_batch(
                    QueueUrl=self.queue_url,
                    Entries=entries,  # type: ignore[arg-type]
                )
            except (ClientError, BotoCoreError) as exc:
                raise translate(exc, "SQS", f"SendMessageBatch of {len(chunk)}") from exc
            for failed in response.get("Failed", []):
                # retry the few that failed one by one; a persistent failure surfaces
                self.send(chunk[int(failed["Id"])])

    def retry_later(self, receipt_handle: str, seconds: int) -> None:
        """Make a received message visible again in ``seconds`` (best effort: if this fails,
        the queue's visibility timeout brings it back later, and the sweep backs that up)."""
        with contextlib.suppress(ClientError, BotoCoreError):
            self.client.change_message_visibility(
                QueueUrl=self.queue_url,
                ReceiptHandle=receipt_handle,
                VisibilityTimeout=min(MAX_DELAY, max(0, seconds)),
            )
