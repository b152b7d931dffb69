"""template.yaml passes cfn-lint and `sam validate --lint` (both from .venv-sam)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "AWS_DEFAULT_REGION": "us-east-1",
        "SAM_CLI_TELEMETRY": "0",
        # No "new version available" check against PyPI.
        "SAM_CLI_POLL_VERSION": "0",
    }
    return subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=300
    )


def test_cfn_lint_finds_nothing() -> None:
    result = run(str(Path(sam()).parent / "cfn-lint"), "template.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def sam() -> str:
    """SAM CLI (and cfn-lint beside it) live in their own virtualenv, as they pin boto3 and
    pydantic: $SAM_CLI, or .venv-sam/bin/sam."""
    path = Path(os.environ.get("SAM_CLI") or REPO / ".venv-sam" / "bin" / "sam")
    if not path.exists():
        pytest.fail(f"SAM CLI not found at {path}: run `make install` (it creates .venv-sam)")
    return str(path)


def test_sam_validate_with_lint_passes() -> None:
    result = run(
        sam(),
        "validate",
        "--lint",
        "--region",
        "us-east-1",
        "--template-file",
        "template.yaml",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout + result.stderr
