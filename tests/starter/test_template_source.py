"""One template: the package ships the repository's template.yaml, and a project's template is
rendered from it with exactly four edits (code root, engine layer, Workflows default,
description); everything else is the engine's, byte for byte."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows.infra.template import TEMPLATE_PATH, load_template
from lambda_workflows.infra.versioning import engine_template_version, template_version
from lambda_workflows.starter.template import ARCHITECTURE, PYTHON_VERSION, project_template

ROOT = Path(__file__).resolve().parents[2]
SPEC = "hello=my_app.workflows:HelloWorkflow"


def test_the_packaged_template_is_the_repositorys_template_byte_for_byte() -> None:
    assert TEMPLATE_PATH.read_bytes() == (ROOT / "template.yaml").read_bytes(), (
        "handler/lambda_workflows/infra/template.yaml differs from template.yaml: edit "
        "template.yaml, then `make template` copies it into the package"
    )


def test_the_engine_template_is_versioned_in_its_metadata_and_its_outputs() -> None:
    template = load_template()
    assert template_version(template) == engine_template_version() >= 1
    assert template["Outputs"]["TemplateVersion"]["Value"] == str(engine_template_version())


def test_a_project_template_changes_only_the_four_project_lines(tmp_path: Path) -> None:
    # GIVEN the engine's template WHEN rendered for a project
    engine = TEMPLATE_PATH.read_text().splitlines()
    rendered = project_template(SPEC, "my-app")
    # THEN the lines taken out are the description, the code root and the empty default
    diff = list(difflib.unified_diff(engine, rendered.splitlines(), n=0, lineterm=""))[2:]
    removed = [line[1:] for line in diff if line.startswith("-")]
    added = [line[1:] for line in diff if line.startswith("+")]
    description = engine[engine.index("Description: >-") + 1 :]
    description = description[
        : next(i for i, x in enumerate(description) if not x.startswith("  "))
    ]
    assert removed == [*description, '    Default: ""', "    CodeUri: handler/"]
    assert added[0].startswith("  my-app: durable workflows")
    assert {
        "    CodeUri: src/",
        "    Layers:",
        "      - !Ref EngineLayer",
        f'    Default: "{SPEC}"',
    } <= set(added)
    # AND the parsed template is the engine's plus the layer, the code root and the default
    engine_parsed, project = load_template(), _parse(tmp_path, rendered)
    function = project["Globals"]["Function"]
    assert function.pop("CodeUri") == "src/"
    assert function.pop("Layers") == [{"Ref": "EngineLayer"}]
    assert project["Parameters"]["Workflows"].pop("Default") == SPEC
    layer = project["Resources"].pop("EngineLayer")
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Metadata"] == {"BuildMethod": "makefile", "BuildArchitecture": ARCHITECTURE}
    assert layer["Properties"]["ContentUri"] == "engine/"
    assert layer["Properties"]["CompatibleRuntimes"] == [f"python{PYTHON_VERSION}"]
    del engine_parsed["Globals"]["Function"]["CodeUri"]
    del engine_parsed["Parameters"]["Workflows"]["Default"]
    for key in ("Resources", "Outputs", "Metadata", "Parameters", "Conditions", "Rules", "Globals"):
        assert project[key] == engine_parsed[key], key


def test_the_functions_runtime_and_architecture_come_from_the_engine_template() -> None:
    function = load_template()["Globals"]["Function"]
    assert function["Runtime"] == f"python{PYTHON_VERSION}"
    assert function["Architectures"] == [ARCHITECTURE]


@pytest.mark.parametrize("spec", ['a="b', "a=b:C\nx"])
def test_a_spec_that_would_break_the_yaml_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="no quotes or newlines"):
        project_template(spec, "my-app")


def _parse(folder: Path, text: str) -> dict[str, Any]:
    path = folder / "template.yaml"
    path.write_text(text)
    return load_template(path)
