"""Fixtures for the infrastructure tests: fake AWS credentials, a moto session, the template."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lambda_workflows.infra.template import load_template

REGION = "us-east-1"


@pytest.fixture(autouse=True)
def fake_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test here may reach a real AWS account, whatever the developer's shell has set."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SECURITY_TOKEN", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)


@pytest.fixture
def session() -> Iterator[boto3.Session]:
    """A boto3 session talking to moto's in-process AWS."""
    with mock_aws():
        yield boto3.Session(region_name=REGION)


@pytest.fixture
def template() -> dict[str, Any]:
    """The repository's template.yaml, parsed."""
    return load_template()
