"""The template and the handler code agree: handlers exist, and every environment variable
the code reads is one the template sets (or one Lambda sets)."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows.infra import Resources
from lambda_workflows.infra.template import function_environment, load_template, resources_of_type

from .conftest import REGION

REPO = Path(__file__).resolve().parents[2]
CODE_URI = REPO / str(load_template()["Globals"]["Function"]["CodeUri"])
PACKAGE = CODE_URI / "lambda_workflows"

# Set by the Lambda runtime itself (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime),
# so the template must not set them.
AWS_PROVIDED = {
    "AWS_REGION": "region of the function",
    "AWS_DEFAULT_REGION": "region of the function (what boto3 reads)",
    "AWS_EXECUTION_ENV": "runtime identifier",
    "AWS_LAMBDA_FUNCTION_NAME": "name of the function",
    "AWS_LAMBDA_FUNCTION_VERSION": "version being run",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "memory in MB",
    "AWS_LAMBDA_LOG_GROUP_NAME": "CloudWatch log group",
    "AWS_LAMBDA_LOG_STREAM_NAME": "CloudWatch log stream",
    "AWS_LAMBDA_RUNTIME_API": "runtime API host",
    "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand, provisioned-concurrency or snap-start",
    "AWS_SAM_LOCAL": "set by `sam local` when running on a developer machine",
    "LAMBDA_TASK_ROOT": "where the code is unpacked",
    "LAMBDA_RUNTIME_DIR": "where the runtime is",
    "_HANDLER": "the configured handler",
    "_X_AMZN_TRACE_ID": "X-Ray trace header",
    "TZ": "time zone (UTC)",
}

# Read by a library, not by handler/lambda_workflows: excluded from "every variable set is read".
READ_BY_LIBRARIES = {
    "POWERTOOLS_SERVICE_NAME": "aws-lambda-powertools (Logger, Metrics, Tracer)",
    "POWERTOOLS_METRICS_NAMESPACE": "aws-lambda-powertools Metrics",
    "POWERTOOLS_LOG_LEVEL": "aws-lambda-powertools Logger",
}

ENTRYPOINTS = ("api", "runner", "trigger", "sweep")


# --- handlers --------------------------------------------------------------------------------


def handlers() -> list[tuple[str, str]]:
    template = load_template()
    default = template.get("Globals", {}).get("Function", {}).get("Handler")
    return [
        (name, function.get("Properties", {}).get("Handler", default))
        for name, function in resources_of_type(template, "AWS::Serverless::Function").items()
    ]


def module_file(module: str) -> Path | None:
    base = CODE_URI.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@pytest.mark.parametrize(("function", "handler"), handlers(), ids=[f for f, _ in handlers()])
def test_each_handler_is_a_callable_in_the_code_uri(
    function: str, handler: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the function's Handler, "package.module.attribute"
    module, dot, attribute = handler.rpartition(".")
    assert dot and module and attribute.isidentifier(), f"{function}: bad Handler {handler!r}"
    if module_file(module) is None:
        pytest.skip(f"{module} is not written yet (no {module.replace('.', '/')}.py in handler/)")
    # WHEN the module is imported with the function's environment, as Lambda would
    environment = Resources(
        table_name="table",
        work_queue_url=f"https://sqs.{REGION}.amazonaws.com/123456789012/work",
        work_queue_arn=f"arn:aws:sqs:{REGION}:123456789012:work",
        trigger_queue_url=f"https://sqs.{REGION}.amazonaws.com/123456789012/trigger",
        schedule_group="wake-ups",
        scheduler_role_arn="arn:aws:iam::123456789012:role/scheduler",
        region=REGION,
    ).environment(function)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    loaded = importlib.import_module(module)
    # THEN the attribute is there and callable
    assert callable(getattr(loaded, attribute, None)), f"{handler} is not a callable"


# --- environment variables ------------------------------------------------------------------


@dataclass(frozen=True)
class EnvironmentRead:
    """One place where the code reads an environment variable by a literal name."""

    name: str
    where: str
    has_default: bool


def _is_os_environ(node: ast.expr) -> bool:
    """``os.environ``, or ``environ`` imported from os."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "environ"


def _is_getenv(node: ast.expr) -> bool:
    """``os.getenv``, or ``getenv`` imported from os."""
    if isinstance(node, ast.Attribute):
        return node.attr == "getenv" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "getenv"


def _literal(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def environment_reads(path: Path) -> Iterator[EnvironmentRead]:
    """``os.environ["X"]``, ``os.environ.get("X"[, d])``, ``os.getenv("X"[, d])`` in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        where = f"{shown}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Subscript) and _is_os_environ(node.value):
            name = _literal(node.slice)
            if name is not None:
                # A store (os.environ["X"] = ...) is not a read, but harmless to check.
                yield EnvironmentRead(name, where, has_default=False)
        elif isinstance(node, ast.Call):
            function = node.func
            is_environ_get = (
                isinstance(function, ast.Attribute)
                and function.attr in ("get", "setdefault", "pop")
                and _is_os_environ(function.value)
            )
            if (is_environ_get or _is_getenv(function)) and node.args:
                name = _literal(node.args[0])
                if name is not None:
                    has_default = len(node.args) > 1 or any(
                        k.arg == "default" for k in node.keywords
                    )
                    yield EnvironmentRead(name, where, has_default)


def all_environment_reads() -> list[EnvironmentRead]:
    return [read for path in sorted(PACKAGE.rglob("*.py")) for read in environment_reads(path)]


def template_variables() -> dict[str, Any]:
    """Every variable the template sets on any function (the Globals' and each function's)."""
    template = load_template()
    variables = function_environment(template)
    for name in resources_of_type(template, "AWS::Serverless::Function"):
        variables.update(function_environment(template, name))
    return variables


def test_every_variable_the_code_requires_is_set_by_the_template_or_lambda() -> None:
    # GIVEN every os.environ / getenv read with a literal name in handler/lambda_workflows
    # THEN a read without a default is of a variable the template or Lambda sets. (A read with
    # a default is an optional setting: the code works without it.)
    known = set(template_variables()) | set(AWS_PROVIDED)
    missing = [read for read in all_environment_reads() if not read.has_default]
    missing = [read for read in missing if read.name not in known]
    assert not missing, (
        "the code requires environment variables the template does not set; add them to"
        f" Globals (or the function) in template.yaml: {missing}"
    )


def test_the_template_sets_no_variable_lambda_reserves() -> None:
    assert not set(template_variables()) & set(AWS_PROVIDED)


def _string_constants_and_fields() -> set[str]:
    """String literals of handler/lambda_workflows, and field names of its classes upper-cased (a
    settings model whose fields are environment variables, case-insensitively)."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
            elif isinstance(node, ast.ClassDef):
                found |= {
                    item.target.id.upper()
                    for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                }
    return found


def test_every_variable_the_template_sets_is_read_by_the_code() -> None:
    # The other half of the agreement: a name set in the template but spelt differently in the
    # code (read with a default, so the first test cannot see it) would be silently ignored.
    missing_entrypoints = [
        name for name in ENTRYPOINTS if module_file(f"lambda_workflows.entrypoints.{name}") is None
    ]
    if missing_entrypoints:
        pytest.skip(f"entrypoints not written yet: {missing_entrypoints}")
    mentioned = _string_constants_and_fields()
    unread = set(template_variables()) - set(READ_BY_LIBRARIES) - mentioned
    assert not unread, (
        f"template.yaml sets variables handler/lambda_workflows never reads: {unread}"
    )


def test_the_environment_scan_finds_each_way_of_reading(tmp_path: Path) -> None:
    # GIVEN a module reading variables in every supported way
    source = tmp_path / "reads.py"
    source.write_text(
        "import os\nfrom os import environ, getenv\n"
        "a = os.environ['A']\nb = os.environ.get('B')\nc = os.getenv('C', 'x')\n"
        "d = environ['D']\ne = getenv('E')\nf = os.environ.get('F', default='y')\n"
    )
    # WHEN it is scanned
    reads = {read.name: read.has_default for read in environment_reads(source)}
    # THEN each read is found, with whether it has a default
    assert reads == {"A": False, "B": False, "C": True, "D": False, "E": False, "F": True}
