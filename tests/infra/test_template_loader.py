"""lambda_workflows.infra.template reads CloudFormation YAML the way CloudFormation does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from lambda_workflows.infra.intrinsics import Unresolvable, Values, references, resolve
from lambda_workflows.infra.template import function_environment, load_template, parameter_defaults

SAMPLE = """\
AWSTemplateFormatVersion: 2010-09-09
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
Resources:
  Thing:
    Type: AWS::Test::Thing
    Properties:
      Arn: !GetAtt Queue.Arn
      Address: !GetAtt Cache.Endpoint.Address
      LongForm: !GetAtt [Queue, QueueName]
      Url: !Sub "https://${Api}.execute-api.${AWS::Region}.amazonaws.com"
      Maybe: !If [IsProd, !Ref Big, !Ref AWS::NoValue]
      First: !Select [0, !GetAZs ""]
      Joined: !Join [",", [a, b]]
      Mapped: !Sub
        - "${Name}-x"
        - Name: !Ref Stage
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "template.yaml"
    path.write_text(text)
    return path


def test_short_tags_become_their_long_json_form(tmp_path: Path) -> None:
    # GIVEN a template written with short tags
    # WHEN it is loaded
    template = load_template(write(tmp_path, SAMPLE))
    # THEN every tag is in the form CloudFormation's JSON uses
    properties = template["Resources"]["Thing"]["Properties"]
    assert template["Conditions"]["IsProd"] == {"Fn::Equals": [{"Ref": "Stage"}, "prod"]}
    assert properties["Arn"] == {"Fn::GetAtt": ["Queue", "Arn"]}
    assert properties["LongForm"] == {"Fn::GetAtt": ["Queue", "QueueName"]}
    assert properties["Url"] == {
        "Fn::Sub": "https://${Api}.execute-api.${AWS::Region}.amazonaws.com"
    }
    assert properties["Maybe"] == {"Fn::If": ["IsProd", {"Ref": "Big"}, {"Ref": "AWS::NoValue"}]}
    assert properties["First"] == {"Fn::Select": [0, {"Fn::GetAZs": ""}]}
    assert properties["Joined"] == {"Fn::Join": [",", ["a", "b"]]}
    assert properties["Mapped"] == {"Fn::Sub": ["${Name}-x", {"Name": {"Ref": "Stage"}}]}


def test_getatt_short_form_splits_at_the_first_dot_only(tmp_path: Path) -> None:
    template = load_template(write(tmp_path, SAMPLE))
    address = template["Resources"]["Thing"]["Properties"]["Address"]
    assert address == {"Fn::GetAtt": ["Cache", "Endpoint.Address"]}


def test_dates_stay_strings_as_in_cloudformation(tmp_path: Path) -> None:
    template = load_template(write(tmp_path, SAMPLE))
    assert template["AWSTemplateFormatVersion"] == "2010-09-09"


def test_an_unknown_tag_is_an_error_not_a_guess(tmp_path: Path) -> None:
    with pytest.raises(yaml.YAMLError, match="unknown CloudFormation tag !Reff"):
        load_template(write(tmp_path, "Value: !Reff Table\n"))


def test_the_caller_owns_the_loaded_template() -> None:
    first = load_template()
    first["Resources"].clear()
    assert load_template()["Resources"], "a cached template was handed out and changed"


def test_the_repository_template_is_a_sam_template(template: dict[str, Any]) -> None:
    assert template["Transform"] == "AWS::Serverless-2016-10-31"
    assert template["AWSTemplateFormatVersion"] == "2010-09-09"


def test_function_environment_is_globals_overlaid_by_the_function(
    template: dict[str, Any],
) -> None:
    shared = function_environment(template)
    trigger = function_environment(template, "TriggerFunction")
    assert trigger == {
        **shared,
        "TRIGGER_WORKFLOW": {"Ref": "TriggerWorkflow"},
        "RUNNER_FUNCTION_ARN": {"Fn::GetAtt": ["RunnerFunction", "Arn"]},
    }


def test_parameter_defaults_of_the_template(template: dict[str, Any]) -> None:
    defaults = parameter_defaults(template)
    assert defaults["ApiAuth"] == "AWS_IAM"
    assert defaults["RetentionDays"] == 30
    assert defaults["LogLevel"] == "INFO"
    assert defaults["Workflows"] == ""


def test_resolve_ref_getatt_sub_and_join() -> None:
    values = Values(
        refs={"Table": "t", "AWS::Region": "eu-west-1"},
        attributes={("Queue", "Arn"): "arn:q"},
    )
    assert resolve({"Ref": "Table"}, values) == "t"
    assert resolve({"Fn::GetAtt": ["Queue", "Arn"]}, values) == "arn:q"
    assert resolve({"Fn::Sub": "${Table}@${AWS::Region}/${Queue.Arn}"}, values) == (
        "t@eu-west-1/arn:q"
    )
    assert resolve({"Fn::Sub": "${!Literal}"}, values) == "${Literal}"
    assert resolve({"Fn::Sub": ["${X}-${Table}", {"X": {"Ref": "Table"}}]}, values) == "t-t"
    assert resolve({"Fn::Join": ["/", ["a", {"Ref": "Table"}]]}, values) == "a/t"
    assert resolve({"A": [{"Ref": "Table"}, 5, True]}, values) == {"A": ["t", 5, True]}


def test_resolve_refuses_what_it_cannot_know() -> None:
    with pytest.raises(Unresolvable, match="Ref 'Missing'"):
        resolve({"Ref": "Missing"}, Values())
    with pytest.raises(Unresolvable, match="Condition 'C'"):
        resolve({"Fn::If": ["C", 1, 2]}, Values())
    with pytest.raises(Unresolvable, match="Fn::Select"):
        resolve({"Fn::Select": [0, [1]]}, Values())


def test_resolve_picks_by_a_condition_on_the_parameters() -> None:
    conditions = {
        "IsHttp": {"Fn::Equals": [{"Ref": "ApiType"}, "HTTP"]},
        "NotHttp": {"Fn::Not": [{"Condition": "IsHttp"}]},
        "Both": {"Fn::And": [{"Condition": "IsHttp"}, {"Fn::Or": [{"Condition": "NotHttp"}]}]},
    }
    values = Values(refs={"ApiType": "HTTP"}, conditions=conditions)

    assert resolve({"Fn::If": ["IsHttp", {"Ref": "ApiType"}, "rest"]}, values) == "HTTP"
    assert resolve({"Fn::If": ["NotHttp", 1, 2]}, values) == 2
    assert resolve({"Fn::If": ["Both", 1, 2]}, values) == 2


def test_references_finds_ref_getatt_and_sub_names() -> None:
    value = {
        "A": {"Ref": "Table"},
        "B": [{"Fn::GetAtt": ["Dlq", "Arn"]}],
        "C": {"Fn::Sub": "${Queue.Arn}/${AWS::Region}/${!Escaped}"},
    }
    assert references(value) == {"Table", "Dlq", "Queue", "AWS::Region"}
