"""``lambda-workflows doctor``: the project's template version (and a deployed stack's) against
the version the installed engine expects, and whether its workflows import."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from lambda_workflows.cli import main
from lambda_workflows.infra.versioning import engine_template_version
from lambda_workflows.starter import init_project

VERSION = engine_template_version()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    init_project(tmp_path / "shop")
    monkeypatch.chdir(tmp_path / "shop")
    monkeypatch.delenv("WORKFLOWS", raising=False)
    return tmp_path / "shop"


def _set_version(project: Path, version: str | None) -> None:
    path = project / "template.yaml"
    text = path.read_text()
    old = f"    TemplateVersion: {VERSION}\n"
    assert old in text
    path.write_text(
        text.replace(old, "" if version is None else f"    TemplateVersion: {version}\n")
    )


def test_a_fresh_project_is_in_step(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    err = capsys.readouterr().err
    assert f"ok: template.yaml is engine template version {VERSION}" in err
    assert "ok: template.yaml registers hello, and each imports" in err


def test_an_older_template_is_out_of_step_and_names_the_upgrade_path(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _set_version(project, "0")
    assert main(["doctor"]) == 1
    err = capsys.readouterr().err
    assert re.search(rf"out of step: template.yaml is engine template version 0, older than the "
                     rf"{VERSION} lambda-workflows .* expects", err)  # fmt: skip
    assert "docs/deploy.md, 'Upgrading'" in err


def test_a_newer_template_asks_for_a_newer_engine(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _set_version(project, str(VERSION + 1))
    assert main(["doctor"]) == 1
    assert "pip install -U lambda-workflows" in capsys.readouterr().err


def test_a_template_without_a_version_is_out_of_step(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _set_version(project, None)
    assert main(["doctor"]) == 1
    assert "has no engine template version" in capsys.readouterr().err


def test_a_workflow_that_does_not_import_is_named(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a project whose package (a name no other test imports) lost its workflows module
    init_project(project / "other", "doctor-missing")
    os.chdir(project / "other")
    package = project / "other" / "src" / "doctor_missing"
    (package / "workflows.py").rename(package / "renamed.py")
    # THEN doctor names the module that does not import
    assert main(["doctor"]) == 1
    err = capsys.readouterr().err
    assert "out of step: template.yaml's Workflows parameter does not load" in err
    assert "doctor_missing.workflows" in err


def test_no_template_here_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["doctor"]) == 2
    assert "no template.yaml here" in capsys.readouterr().err


@pytest.fixture
def cloudformation() -> Iterator[object]:
    with mock_aws():
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        yield boto3.client("cloudformation", region_name=os.environ["AWS_DEFAULT_REGION"])


def _stack(client: object, name: str, version: str | None) -> None:
    outputs = "" if version is None else f'Outputs:\n  TemplateVersion:\n    Value: "{version}"\n'
    body = (
        "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n" + outputs
    )  # a stand-in stack: moto runs no SAM transform
    client.create_stack(StackName=name, TemplateBody=body)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("deployed", "code", "says"),
    [
        (str(VERSION), 0, f"ok: stack shop is engine template version {VERSION}"),
        ("0", 1, "out of step: stack shop is engine template version 0, older"),
        (None, 1, "out of step: stack shop has no engine template version"),
    ],
)
def test_the_deployed_stacks_version_is_read_from_its_output(
    project: Path,
    cloudformation: object,
    capsys: pytest.CaptureFixture[str],
    deployed: str | None,
    code: int,
    says: str,
) -> None:
    _stack(cloudformation, "shop", deployed)
    assert main(["doctor", "--stack", "shop"]) == code
    assert says in capsys.readouterr().err


def test_a_stack_that_cannot_be_read_is_a_usage_error_with_cloudformations_words(
    project: Path, cloudformation: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--stack", "nope"]) == 2
    err = capsys.readouterr().err
    assert "stack nope cannot be read from CloudFormation" in err and "does not exist" in err
