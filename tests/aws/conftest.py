"""The DynamoDB store's sharded listing indexes on moto (in-process)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from lambda_workflows.aws.dynamodb import DynamoStore
from lambda_workflows.testing import WorkflowTestEnv

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "lambda-workflows")

SHARDS = 4  # K > 1, small enough that every shard holds several instances


@pytest.fixture
def env() -> Iterator[WorkflowTestEnv]:
    """A stack on moto (its table, with the template's indexes)."""
    with WorkflowTestEnv({}, backend="aws") as made:
        yield made


@pytest.fixture
def store(env: WorkflowTestEnv) -> DynamoStore:
    """A DynamoStore on the stack's table with SHARDS index shards."""
    assert env.aws is not None
    client = env.aws.session.client("dynamodb")
    return DynamoStore(client, env.aws.settings.table_name, env.clock, index_shards=SHARDS)
