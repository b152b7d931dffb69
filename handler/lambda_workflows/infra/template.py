"""Read ``template.yaml`` as data.

CloudFormation's YAML short tags (``!Ref``, ``!GetAtt``, ``!Sub``, ...) are turned into their
long JSON form (``{"Ref": ...}``, ``{"Fn::GetAtt": [...]}``, ``{"Fn::Sub": ...}``) by a YAML
loader that knows them, so the result is exactly what CloudFormation itself would see.
Everything that reads the template (``lambda_workflows.infra.provision``, ``tests/infra``) goes
through here.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

__all__ = [
    "TEMPLATE_PATH",
    "CloudFormationLoader",
    "code_root",
    "function_environment",
    "load_template",
    "parameter_defaults",
    "resource",
    "resources_of_type",
]

TEMPLATE_PATH = Path(__file__).resolve().parent / "template.yaml"
"""The engine's SAM template, shipped in the package (the repository's ``template.yaml`` is the
same file; ``lambda-workflows init`` writes a project's template from it)."""

# Short tags whose long form is ``Fn::<Name>``; ``!Ref`` and ``!Condition`` keep their name.
_FUNCTION_TAGS = frozenset(
    {
        "And",
        "Base64",
        "Cidr",
        "Equals",
        "FindInMap",
        "ForEach",
        "GetAtt",
        "GetAZs",
        "If",
        "ImportValue",
        "Join",
        "Length",
        "Not",
        "Or",
        "Select",
        "Split",
        "Sub",
        "ToJsonString",
        "Transform",
    }
)


class CloudFormationLoader(yaml.SafeLoader):
    """A ``SafeLoader`` that also understands CloudFormation's short-form tags.

    Timestamps stay strings, as CloudFormation reads them (``AWSTemplateFormatVersion:
    2010-09-09`` is the string ``"2010-09-09"``, not a ``datetime.date``).
    """


def _construct_tagged(loader: CloudFormationLoader, tag: str, node: yaml.Node) -> dict[str, Any]:
    """Build the long form of one ``!Tag value``; ``tag`` is the name after the ``!``."""
    if tag in ("Ref", "Condition"):
        key = tag
    elif tag in _FUNCTION_TAGS:
        key = f"Fn::{tag}"
    else:
        raise ConstructorError(None, None, f"unknown CloudFormation tag !{tag}", node.start_mark)
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        assert isinstance(node, yaml.MappingNode)
        value = loader.construct_mapping(node, deep=True)
    if key == "Fn::GetAtt" and isinstance(value, str):
        # The short form names "Resource.Attribute" in one scalar; the long form is a pair.
        # Only the first dot separates them (attributes such as Endpoint.Address have dots).
        logical_id, _, attribute = value.partition(".")
        value = [logical_id, attribute]
    return {key: value}


def _construct_timestamp_as_string(loader: CloudFormationLoader, node: yaml.Node) -> str:
    assert isinstance(node, yaml.ScalarNode)
    return str(loader.construct_scalar(node))


CloudFormationLoader.add_multi_constructor("!", _construct_tagged)
CloudFormationLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp_as_string)


def load_template(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Parse a CloudFormation / SAM template.

    Args:
        path: the template file; the engine's (:data:`TEMPLATE_PATH`) when None.

    Returns:
        The template as plain dicts, lists and scalars, intrinsic functions in long form.
        The caller owns the result and may change it.

    Raises:
        OSError: the file cannot be read.
        yaml.YAMLError: it is not YAML, or uses a tag CloudFormation does not know.
    """
    resolved = Path(path).resolve() if path is not None else TEMPLATE_PATH
    try:
        stat = resolved.stat()
    except FileNotFoundError:
        stat = None
    # Cached by the file's absolute path and its modification: an edited template is read anew.
    return copy.deepcopy(_parse(resolved, stat and (stat.st_mtime_ns, stat.st_size)))


@functools.lru_cache(maxsize=8)
def _parse(path: Path, _version: tuple[int, int] | None) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(
            f"no template at {path}: the package ships its template as"
            " lambda_workflows/infra/template.yaml (reinstall lambda-workflows), or pass a path"
        )
    text = path.read_text(encoding="utf-8")
    template = yaml.load(text, Loader=CloudFormationLoader)
    if not isinstance(template, dict):
        raise ValueError(f"{path} is not a template: its top level is not a mapping")
    return template


def resource(template: Mapping[str, Any], logical_id: str) -> dict[str, Any]:
    """The resource ``logical_id`` of the template (its ``Type``, ``Properties``, ...).

    Raises:
        KeyError: the template has no such resource.
    """
    resources: Mapping[str, dict[str, Any]] = template.get("Resources", {})
    if logical_id not in resources:
        raise KeyError(f"template.yaml has no resource {logical_id!r}")
    return resources[logical_id]


def resources_of_type(template: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    """Every resource of ``resource_type`` (e.g. ``AWS::SQS::Queue``), by logical id."""
    resources: Mapping[str, dict[str, Any]] = template.get("Resources", {})
    return {
        logical_id: definition
        for logical_id, definition in resources.items()
        if definition.get("Type") == resource_type
    }


def function_environment(
    template: Mapping[str, Any], function: str | None = None
) -> dict[str, Any]:
    """The environment variables a function gets: the Globals', then its own on top.

    SAM merges ``Globals.Function.Environment.Variables`` with the function's own, the
    function winning on a clash; this does the same.

    Args:
        template: a parsed template.
        function: the logical id of an ``AWS::Serverless::Function``; None for the Globals
            alone (what every function gets).

    Returns:
        Variable name → value, still unresolved (``{"Ref": "Table"}``, literals, ...).
    """
    globals_ = template.get("Globals", {}).get("Function", {})
    variables = dict(globals_.get("Environment", {}).get("Variables", {}))
    if function is not None:
        properties = resource(template, function).get("Properties", {})
        variables.update(properties.get("Environment", {}).get("Variables", {}))
    return variables


def parameter_defaults(template: Mapping[str, Any]) -> dict[str, Any]:
    """Each template parameter that has a ``Default``, with that default."""
    parameters: Mapping[str, Mapping[str, Any]] = template.get("Parameters", {})
    return {name: spec["Default"] for name, spec in parameters.items() if "Default" in spec}


def code_root(template: Mapping[str, Any], folder: Path) -> Path | None:
    """The functions' code folder (``Globals.Function.CodeUri``) of the template in ``folder``,
    when it names one; None otherwise."""
    uri = template.get("Globals", {}).get("Function", {}).get("CodeUri")
    return (folder / uri).resolve() if isinstance(uri, str) else None
