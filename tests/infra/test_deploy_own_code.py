"""This repository's own stack with code added to handler/ (a fork's way to deploy): `sam build`
packages the engine, the code and its dependencies. (A project of its own, from
``lambda-workflows init``, is tested in tests/package.)

A copy of the repository gets a workflow module under ``handler/`` and a dependency in
``handler/requirements.txt``; ``sam build`` (offline, no Docker) must put both in every
function's artifact, and the artifact alone (no site-packages) must register the workflow from
``WORKFLOWS`` and serve nothing without it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAM = ROOT / ".venv-sam" / "bin" / "sam"
FUNCTIONS = (
    "ApiFunction",
    "RunnerFunction",
    "TriggerFunction",
    "SweepFunction",
    "LifecycleEventsFunction",  # built whatever LifecycleEventBus is: sam build ignores conditions
)
DEPENDENCY = "humanize"  # pure Python, not a dependency of the project

ORDERS = '''
"""A user's workflow, in a package of its own under handler/."""

import humanize

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


class Orders(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> str:
        size = await step.do("size", lambda: humanize.naturalsize(event.payload["bytes"]))
        return f"order of {size}"
'''

# The artifact's compiled wheels are for the functions' architecture (arm64), so the probe
# loads the compiled dependencies from this machine's environment first, then everything else
# (the engine, the user's module, their dependency) from the artifact.
PROBE = """
import json, sys
import pydantic, pydantic_core  # this machine's build; the artifact's may be for arm64
sys.path[:0] = [sys.argv[1]]
from lambda_workflows.registry import load_workflows
import humanize, lambda_workflows
assert humanize.__file__.startswith(sys.argv[1]), humanize.__file__
assert lambda_workflows.__file__.startswith(sys.argv[1]), lambda_workflows.__file__
print(json.dumps({name: cls.__module__ for name, cls in load_workflows().items()}))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project with a user's module, built by `sam build`."""
    if not SAM.exists():
        pytest.fail(f"{SAM} is missing: `make sam` installs it (make test does)")
    project = tmp_path_factory.mktemp("project")
    shutil.copy(ROOT / "template.yaml", project)
    shutil.copy(ROOT / "samconfig.toml", project)
    shutil.copytree(
        ROOT / "handler",
        project / "handler",
        ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"),
    )
    shop = project / "handler" / "shop"
    shop.mkdir()
    (shop / "__init__.py").write_text("")
    (shop / "orders.py").write_text(textwrap.dedent(ORDERS))
    with (project / "handler" / "requirements.txt").open("a") as requirements:
        requirements.write(f"\n{DEPENDENCY}>=4,<5\n")
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0"}
    result = subprocess.run(
        [str(SAM), "build"], cwd=project, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return project / ".aws-sam" / "build"


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_function_carries_the_users_module_and_its_dependency(
    built: Path, function: str
) -> None:
    artifact = built / function
    assert (artifact / "shop" / "orders.py").is_file()
    assert (artifact / DEPENDENCY).is_dir()
    assert (artifact / "lambda_workflows" / "entrypoints" / "api.py").is_file()


def _probe(artifact: Path, workflows: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WORKFLOWS")}
    env["PYTHONSAFEPATH"] = "1"  # not the working folder's packages either
    env["WORKFLOWS"] = workflows
    return subprocess.run(
        [sys.executable, "-c", PROBE, str(artifact)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_artifact_registers_the_workflow_workflows_names(built: Path) -> None:
    result = _probe(built / "ApiFunction", "orders=shop.orders:Orders")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"orders": "shop.orders"}


def test_the_artifact_registers_nothing_by_default(built: Path) -> None:
    """The bundled examples ship in the zip but are never served unless WORKFLOWS names them."""
    result = _probe(built / "ApiFunction", "")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {}


# Counts the modules the interpreter compiles from source (no usable .pyc) under the artifact.
COMPILES = """
import importlib.machinery, json, os, sys
import pydantic, pydantic_core  # this machine's build, as in PROBE
compiled = []
to_code = importlib.machinery.SourceFileLoader.source_to_code
def counting(self, data, path, *args, **kwargs):
    if str(path).startswith(sys.argv[1]):
        compiled.append(os.path.relpath(path, sys.argv[1]))
    return to_code(self, data, path, *args, **kwargs)
importlib.machinery.SourceFileLoader.source_to_code = counting
sys.path[:0] = [sys.argv[1]]
importlib.import_module(sys.argv[2])
print(json.dumps(compiled))
"""
HANDLERS = {
    "ApiFunction": "lambda_workflows.entrypoints.api",
    "RunnerFunction": "lambda_workflows.entrypoints.runner",
    "TriggerFunction": "lambda_workflows.entrypoints.trigger",
    "SweepFunction": "lambda_workflows.entrypoints.sweep",
    "LifecycleEventsFunction": "lambda_workflows.entrypoints.lifecycle",
}


def _compiled_on_import(artifact: Path, module: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WORKFLOWS")}
    env.update(PYTHONSAFEPATH="1", PYTHONDONTWRITEBYTECODE="1", AWS_DEFAULT_REGION="us-east-1")
    result = subprocess.run(
        [sys.executable, "-c", COMPILES, str(artifact), module],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    compiled: list[str] = json.loads(result.stdout)
    return compiled


def test_make_bytecode_ships_compiled_code_so_a_cold_start_compiles_nothing(built: Path) -> None:
    """`make build` = `sam build` + `make bytecode`: the handlers import from .pyc alone."""
    before = _compiled_on_import(built / "ApiFunction", HANDLERS["ApiFunction"])
    assert "lambda_workflows/entrypoints/api.py" in before  # sam build ships no bytecode
    done = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "bytecode", f"BUILD={built}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for function, module in HANDLERS.items():
        assert _compiled_on_import(built / function, module) == [], function
