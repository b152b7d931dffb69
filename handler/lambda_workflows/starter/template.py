"""A project's ``template.yaml``: the engine's template, rendered for a project that depends on
the engine instead of holding it.

Four edits, each made on exactly one anchor of the engine's template (a changed template that
loses an anchor fails here, and in the tests, instead of writing a wrong project):

- the functions' code is the project's ``src/`` (``CodeUri``), not this repository's
  ``handler/``;
- every function gets ``EngineLayer``: the engine and its runtime dependencies, built by
  ``engine/Makefile`` (``lambda-workflows layer``) from the engine installed where
  ``sam build`` runs;
- the ``Workflows`` parameter's default registers the project's workflows;
- the description names the project.

The rest (resources, permissions, parameters, ``Metadata.LambdaWorkflows.TemplateVersion``) is
the engine's, byte for byte.
"""

from __future__ import annotations

import re

from lambda_workflows.infra.template import TEMPLATE_PATH

__all__ = ["ARCHITECTURE", "PYTHON_VERSION", "project_template"]

_RUNTIME = re.compile(r"(?m)^    Runtime: python(?P<version>3\.\d+)$")
_ARCHITECTURES = re.compile(r"(?m)^    Architectures: \[(?P<arch>[a-z0-9_]+)\]$")


def _engine_template() -> str:
    return TEMPLATE_PATH.read_text(encoding="utf-8")


def _one(pattern: re.Pattern[str], text: str) -> re.Match[str]:
    matches = list(pattern.finditer(text))
    if len(matches) != 1:
        raise RuntimeError(f"the engine's template has {len(matches)} lines like {pattern.pattern}")
    return matches[0]


PYTHON_VERSION = _one(_RUNTIME, _engine_template()).group("version")
"""The functions' Python (``Runtime`` in the engine's template's Globals)."""
ARCHITECTURE = _one(_ARCHITECTURES, _engine_template()).group("arch")
"""The functions' architecture (``Architectures`` in the engine's template's Globals)."""

_LAYER = f"""\
Resources:
  # The engine (lambda-workflows) and its runtime dependencies, shared by every function.
  # engine/Makefile builds it with `lambda-workflows layer` from the lambda-workflows installed
  # where sam build runs: the functions run the version the project's tests ran on.
  EngineLayer:
    Type: AWS::Serverless::LayerVersion
    Metadata:
      BuildMethod: makefile
      BuildArchitecture: {ARCHITECTURE}
    Properties:
      Description: lambda-workflows, the durable workflows engine
      ContentUri: engine/
      CompatibleRuntimes: [python{PYTHON_VERSION}]
      CompatibleArchitectures: [{ARCHITECTURE}]
      RetentionPolicy: Delete
"""


def _replace_once(text: str, pattern: str, replacement: str) -> str:
    new, count = re.subn(pattern, lambda _: replacement, text, count=2, flags=re.MULTILINE)
    if count != 1:
        raise RuntimeError(f"the engine's template has {count} places matching {pattern!r}")
    return new


def project_template(workflows: str, project: str) -> str:
    """The engine's template for a project named ``project`` whose ``Workflows`` parameter
    defaults to ``workflows`` (``name=module:Class`` pairs)."""
    if '"' in workflows or "\n" in workflows:
        raise ValueError(f"a WORKFLOWS spec holds no quotes or newlines: {workflows!r}")
    text = _engine_template()
    text = _replace_once(
        text,
        r"^Description: >-\n(?:  .*\n)+",
        f"Description: >-\n  {project}: durable workflows (lambda-workflows) on Lambda, SQS, "
        "DynamoDB and\n  EventBridge Scheduler.\n",
    )
    text = _replace_once(text, r"^    CodeUri: handler/\n", "    CodeUri: src/\n")
    text = _replace_once(
        text,
        r"^(    Architectures: \[[a-z0-9_]+\]\n)",
        _one(_ARCHITECTURES, text).group(0) + "\n    Layers:\n      - !Ref EngineLayer\n",
    )
    text = _replace_once(
        text,
        r'^(  Workflows:\n    Type: String\n)    Default: ""\n',
        f'  Workflows:\n    Type: String\n    Default: "{workflows}"\n',
    )
    return _replace_once(text, r"^Resources:\n", _LAYER)
