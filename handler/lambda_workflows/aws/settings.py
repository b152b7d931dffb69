"""The Lambdas' configuration, read from environment variables that template.yaml sets."""

from __future__ import annotations

import os
from collections.abc import Mapping

from lambda_workflows.engine.errors import ConfigurationError
from lambda_workflows.engine.immutable import immutable

from .shards import INDEX_SHARDS

_VARIABLES = {
    "table_name": "TABLE_NAME",
    "work_queue_url": "WORK_QUEUE_URL",
    "work_queue_arn": "WORK_QUEUE_ARN",
    "schedule_group": "SCHEDULE_GROUP",
    "scheduler_role_arn": "SCHEDULER_ROLE_ARN",
}
RETENTION_DAYS = 30.0
"""Days a finished instance is kept when ``RETENTION_DAYS`` is not set (template.yaml's
RetentionDays parameter defaults to the same)."""


@immutable
class AwsSettings:
    """Where the stack's resources are (a plain dataclass: every handler reads it, and pydantic
    would be a cold-start import of its own)."""

    table_name: str
    work_queue_url: str
    work_queue_arn: str
    schedule_group: str
    scheduler_role_arn: str
    retention_days: float = RETENTION_DAYS
    link_key: str = ""  # WORKFLOWS_LINK_KEY: the approval links' HMAC key ("" = no links)
    link_url: str = ""  # WORKFLOWS_LINK_URL: the API's URL, which approval links start with
    runner_function_arn: str = ""  # RUNNER_FUNCTION_ARN: work due now invokes it ("" = SQS)
    index_shards: int = INDEX_SHARDS  # see lambda_workflows.aws.shards: every container of a stack
    # must use the same (the embedded stack of `lambda-workflows dev` and the test kit uses fewer)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AwsSettings:
        """Read the settings; a missing or malformed variable is a ConfigurationError naming
        it."""
        env = os.environ if environ is None else environ
        missing = [var for var in _VARIABLES.values() if not env.get(var)]
        if missing:
            raise ConfigurationError(
                f"missing environment variable(s) {', '.join(missing)}; template.yaml "
                "(Globals) sets them in the environment of each of the stack's Lambda functions"
            )
        values = {field: env[var] for field, var in _VARIABLES.items()}
        days = env.get("RETENTION_DAYS") or str(RETENTION_DAYS)
        try:
            retention_days = float(days)
        except ValueError:
            raise ConfigurationError(
                f"RETENTION_DAYS={days!r} is not a number of days; set it to e.g. 30 (the "
                "stack's RetentionDays parameter)"
            ) from None
        return cls(
            **values,
            retention_days=retention_days,
            link_key=env.get("WORKFLOWS_LINK_KEY", ""),
            link_url=env.get("WORKFLOWS_LINK_URL", ""),
            runner_function_arn=env.get("RUNNER_FUNCTION_ARN", ""),
            index_shards=INDEX_SHARDS,
        )
