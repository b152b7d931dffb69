"""One translation of AWS failures for every adapter: throttling, AWS's own 5xx and failures on
the way (a refused connection, a read timeout) from DynamoDB, SQS or EventBridge Scheduler are
one retryable InfrastructureError (a StorageError when the store failed); another refusal names
its code; a bad setting is a ConfigurationError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError
from botocore.stub import Stubber

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.errors import translate
from lambda_workflows.aws.settings import AwsSettings
from lambda_workflows.engine.errors import (
    ConfigurationError,
    InfrastructureError,
    InvalidInput,
    StorageError,
    SuspendReason,
    WorkflowError,
)
from lambda_workflows.engine.model import InstanceRef
from tests.aws_faults import Faults

REF = InstanceRef("naps", "n-1")


class Nap(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("nap", "1 hour")


def calls(runtime: Any) -> dict[str, tuple[Any, str, Callable[[], object]]]:
    """Per service: its client, the operation one adapter call makes, and that call."""
    later = runtime.clock.time() + 3600
    return {
        "dynamodb": (runtime.store.client, "GetItem", lambda: runtime.store.get(REF)),
        "sqs": (runtime.queue.client, "SendMessage", lambda: runtime.queue.send(REF, 5.0)),
        "scheduler": (
            runtime.wakeups.client,
            "CreateSchedule",
            lambda: runtime.wakeups.schedule(REF, later, SuspendReason.SLEEP),
        ),
    }


NAMES = {"dynamodb": "DynamoDB", "sqs": "SQS", "scheduler": "EventBridge Scheduler"}


@pytest.mark.parametrize("service", ["dynamodb", "sqs", "scheduler"])
@pytest.mark.parametrize("kind", ["throttle", "unreachable", "timeout"])
def test_a_throttle_or_a_failure_on_the_way_is_the_one_retryable_error(
    aws_env: Any, service: str, kind: str
) -> None:
    env = aws_env({"naps": Nap})
    env.create("naps", id=REF.id)
    runtime = env.aws.runtime
    _, operation, call = calls(runtime)[service]
    # GIVEN the service fails the adapter's next call
    Faults.on(runtime).arm(f"{service}.{operation}", kind)
    # WHEN the adapter calls it
    with pytest.raises(InfrastructureError) as info:
        call()
    # THEN it is the retryable root, a StorageError only when the store failed, and it says
    # which service failed and to retry
    assert isinstance(info.value, StorageError) == (service == "dynamodb")
    assert NAMES[service] in str(info.value)
    assert "retry" in str(info.value)


@pytest.mark.parametrize("service", ["dynamodb", "sqs", "scheduler"])
def test_an_aws_5xx_is_the_one_retryable_error(aws_env: Any, service: str) -> None:
    env = aws_env({"naps": Nap})
    client, operation, call = calls(env.aws.runtime)[service]
    method = "".join(f"_{c.lower()}" if c.isupper() else c for c in operation).lstrip("_")
    with Stubber(client) as stubber:
        stubber.add_client_error(method, "ServiceUnavailable", http_status_code=503)
        with pytest.raises(InfrastructureError) as info:
            call()
    assert "HTTP 503" in str(info.value) and "retry" in str(info.value)


def error(code: str, status: int, operation: str = "PutItem", message: str = "no") -> ClientError:
    response: Any = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, operation)


def test_another_refusal_names_its_code_and_what_to_check() -> None:
    refused = translate(error("AccessDeniedException", 400), "SQS", "SendMessage for a/b")
    assert type(refused) is InfrastructureError
    assert "SQS SendMessage for a/b was refused (AccessDeniedException" in str(refused)
    assert "permissions" in str(refused)


def test_every_throttling_code_is_retryable_on_every_service() -> None:
    for code in ("ThrottlingException", "ProvisionedThroughputExceededException", "Throttling"):
        for service in NAMES.values():
            throttled = translate(error(code, 400), service)
            assert isinstance(throttled, InfrastructureError)
            assert "throttled" in str(throttled) and "retry" in str(throttled)
    assert isinstance(
        translate(ConnectionClosedError(endpoint_url="x"), "SQS"), InfrastructureError
    )


def test_a_value_too_large_is_the_callers_invalid_input() -> None:
    too_large = translate(
        error("ValidationException", 400, message="Item size too big"), "DynamoDB"
    )
    assert isinstance(too_large, InvalidInput)


def test_a_missing_or_malformed_setting_is_a_configuration_error_naming_it() -> None:
    with pytest.raises(ConfigurationError, match="TABLE_NAME") as missing:
        AwsSettings.from_env({})
    assert isinstance(missing.value, WorkflowError) and not isinstance(missing.value, RuntimeError)
    complete = {
        "TABLE_NAME": "t",
        "WORK_QUEUE_URL": "u",
        "WORK_QUEUE_ARN": "a",
        "SCHEDULE_GROUP": "g",
        "SCHEDULER_ROLE_ARN": "r",
    }
    assert AwsSettings.from_env(complete).retention_days == 30
    with pytest.raises(ConfigurationError, match="RETENTION_DAYS='a week'"):
        AwsSettings.from_env({**complete, "RETENTION_DAYS": "a week"})
