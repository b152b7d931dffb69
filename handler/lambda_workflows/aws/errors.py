"""One translation of AWS failures into the library's errors, for every adapter.

Every failed call to DynamoDB, SQS or EventBridge Scheduler becomes an
:class:`~lambda_workflows.engine.errors.InfrastructureError` (a
:class:`~lambda_workflows.engine.errors.StorageError` for DynamoDB, the instance store), which the
engine treats as "try again later", never as a step failure:

- throttling (any service's throttling code), AWS's own failures (HTTP 5xx) and botocore's
  errors on the way (connection refused or reset, read timeouts: the outcome may be unknown)
  say to retry;
- any other refusal (a missing table, a denied action) names its code and says to check the
  stack's resources and permissions; retrying is still safe, and a redelivery after a fix
  succeeds.

A value too large for the service is the caller's
:class:`~lambda_workflows.engine.errors.InvalidInput`.
What an adapter handles in place (a failed condition, a schedule that already exists) it
catches before calling :func:`translate`.
"""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from lambda_workflows.engine.errors import (
    InfrastructureError,
    InvalidInput,
    StorageError,
    WorkflowError,
)

THROTTLED = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "RequestThrottledException",
        "SlowDown",
        "ThrottledException",
        "Throttling",
        "ThrottlingException",
        "TooManyRequestsException",
    }
)
_ERROR_OF_SERVICE: dict[str, type[InfrastructureError]] = {"DynamoDB": StorageError}


def error_code(exc: ClientError) -> str:
    """The AWS error code of a ClientError (``""`` when it has none)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def translate(
    exc: ClientError | BotoCoreError, service: str, action: str | None = None
) -> WorkflowError:
    """The library's error for a failed AWS call.

    Args:
        exc: what botocore raised.
        service: the service called (``"DynamoDB"``, ``"SQS"``, ``"EventBridge Scheduler"``).
        action: what the call was for, for the message (default: the operation's name).
    """
    error = _ERROR_OF_SERVICE.get(service, InfrastructureError)
    if isinstance(exc, BotoCoreError):
        return error(
            f"{service} {action or 'call'} failed on the way ({type(exc).__name__}: {exc}); "
            "its outcome is unknown, retry"
        )
    code = error_code(exc)
    doing = f"{service} {action or exc.operation_name}"
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    if code in THROTTLED:
        return error(f"{doing} was throttled ({code}); retry with backoff")
    if code == "ValidationException" and "size" in str(exc).lower():
        return InvalidInput(f"value too large for {service}: {exc}")
    if status >= 500:
        return error(f"{doing} failed on AWS's side ({code or 'no code'}, HTTP {status}); retry")
    return error(
        f"{doing} was refused ({code or 'no code'}: {exc}); check the stack's resources and "
        "permissions"
    )
