"""WORKFLOWS: one place declares which names map to which classes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lambda_workflows.engine.errors import (
    NOTHING_REGISTERED,
    ConfigurationError,
    UnknownWorkflow,
    WorkflowError,
)
from lambda_workflows.examples import EXAMPLES, GOOD_WORKFLOWS
from lambda_workflows.examples.showcase import SHOWCASE_WORKFLOWS, SubscriptionWorkflow
from lambda_workflows.registry import load_workflows
from lambda_workflows.testing import WorkflowTestEnv


def test_pairs_name_module_and_class() -> None:
    registry = load_workflows(
        "subs=lambda_workflows.examples.showcase:SubscriptionWorkflow, flaky = "
        "lambda_workflows.examples.showcase:FlakyFetchWorkflow"
    )
    assert set(registry) == {"subs", "flaky"}
    assert registry["subs"] is SubscriptionWorkflow


def test_unset_or_empty_registers_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKFLOWS", raising=False)
    assert load_workflows() == {}
    assert load_workflows("") == load_workflows(" , ") == {}


def test_the_examples_spec_registers_every_example() -> None:
    assert load_workflows(EXAMPLES) == {**GOOD_WORKFLOWS, **SHOWCASE_WORKFLOWS}


def test_an_empty_registry_says_to_set_workflows() -> None:
    # GIVEN a runtime that serves no workflow WHEN an instance is asked for
    with pytest.raises(UnknownWorkflow) as info:
        WorkflowTestEnv({}).create("orders")
    # THEN the error says how to register one
    assert "no workflow is registered as 'orders'" in str(info.value)
    assert "WORKFLOWS=name=module:Class" in str(info.value)


def test_the_library_never_imports_the_examples() -> None:
    # GIVEN no WORKFLOWS WHEN every part of the library is imported and the registry read
    code = (
        "import sys, lambda_workflows, lambda_workflows.client, lambda_workflows.testing, "
        "lambda_workflows.cli, "
        "lambda_workflows.aws.runtime, lambda_workflows.local.runtime, "
        "lambda_workflows.entrypoints.api, "
        "lambda_workflows.entrypoints.runner, lambda_workflows.entrypoints.trigger, "
        "lambda_workflows.entrypoints.sweep;"
        "from lambda_workflows.registry import load_workflows; load_workflows();"
        "print(sorted(m for m in sys.modules if m.startswith('lambda_workflows.examples')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "WORKFLOWS"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    # THEN no module of the examples was loaded
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("orders", "malformed"),
        ("orders=no_colon", "malformed"),
        ("orders=no_such_module_xyz:Thing", "cannot import module 'no_such_module_xyz'"),
        ("orders=lambda_workflows.examples.showcase:Missing", "has no class 'Missing'"),
        ("orders=lambda_workflows.examples.showcase:attempts", "not a WorkflowEntrypoint subclass"),
        ("bad name!=lambda_workflows.examples.showcase:SubscriptionWorkflow", "workflow name"),
    ],
)
def test_a_bad_entry_fails_at_start_up_naming_it(spec: str, fragment: str) -> None:
    with pytest.raises(ConfigurationError, match="WORKFLOWS entry") as info:
        load_workflows(spec)
    assert fragment in str(info.value)
    assert isinstance(info.value, WorkflowError) and not isinstance(info.value, RuntimeError)


@pytest.mark.parametrize("handler", ["api", "runner", "trigger", "sweep"])
def test_a_lambda_cold_start_fails_on_a_bad_entry_naming_it(handler: str) -> None:
    env = {**os.environ, "WORKFLOWS": "orders=no_such_module_xyz:OrderWorkflow"}
    result = subprocess.run(
        [sys.executable, "-c", f"import lambda_workflows.entrypoints.{handler}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "cannot import module 'no_such_module_xyz'" in result.stderr


# --- a module that cannot be imported, and an empty registry -------------------------------

ORDERS_MODULE = """\
from lambda_workflows import WorkflowEntrypoint


class OrderWorkflow(WorkflowEntrypoint):
    async def run(self, event, step):
        return await step.do("ship", lambda: "shipped")
"""


def test_a_module_outside_the_project_gets_the_pythonpath_that_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a workflow module in a folder of its own, run from that folder
    (tmp_path / "my_orders_outside.py").write_text(ORDERS_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    spec = "orders=my_orders_outside:OrderWorkflow"
    # WHEN it is registered without its folder on the Python path
    with pytest.raises(ConfigurationError) as info:
        load_workflows(spec)
    # THEN the error shows the exact command that finds it
    message = str(info.value)
    assert "cannot import module 'my_orders_outside'" in message
    assert f"`PYTHONPATH={tmp_path} lambda-workflows dev`" in message
    # AND that PYTHONPATH does register it (a fresh process, the current folder not on its path)
    hinted = re.search(r"`PYTHONPATH=(\S+) lambda-workflows dev`", message)
    assert hinted is not None
    code = "from lambda_workflows.registry import load_workflows; print(sorted(load_workflows()))"
    env = {**os.environ, "WORKFLOWS": spec, "PYTHONPATH": hinted.group(1)}
    done = subprocess.run(
        [sys.executable, "-P", "-c", code],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['orders']"


def test_a_module_found_nowhere_gets_a_pythonpath_placeholder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    with pytest.raises(ConfigurationError) as info:
        load_workflows("orders=no_such_module_xyz:OrderWorkflow")
    assert (
        "`PYTHONPATH=/path/to/the/folder/holding/no_such_module_xyz lambda-workflows dev`"
        in str(info.value)
    )
    assert "CodeUri (src/" in str(info.value)  # where a deployed module goes


def test_a_missing_module_of_a_package_in_the_project_does_not_suggest_pythonpath() -> None:
    with pytest.raises(ConfigurationError) as info:
        load_workflows("orders=lambda_workflows.no_such_module:OrderWorkflow")
    message = str(info.value)
    assert "has no module 'lambda_workflows.no_such_module'" in message
    assert "PYTHONPATH" not in message


def test_a_module_importing_something_not_installed_names_the_dependency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "orders_with_dependency.py").write_text(
        "import no_such_dependency_xyz\n" + ORDERS_MODULE
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigurationError) as info:
        load_workflows("orders=orders_with_dependency:OrderWorkflow")
    message = str(info.value)
    assert "it imports 'no_such_dependency_xyz', which is not installed" in message
    assert "src/requirements.txt" in message
    assert "PYTHONPATH" not in message


def test_the_empty_registry_error_shows_a_workflows_setting_to_copy() -> None:
    assert "`WORKFLOWS=orders=my_module:OrderWorkflow lambda-workflows dev`" in NOTHING_REGISTERED
    with pytest.raises(UnknownWorkflow) as info:
        WorkflowTestEnv({}).create("orders")
    assert "WORKFLOWS=orders=my_module:OrderWorkflow" in str(info.value)


@pytest.mark.parametrize("command", [["run", "orders"], ["dev", "--port", "0"]])
def test_run_and_dev_with_nothing_registered_say_to_set_workflows(command: list[str]) -> None:
    # GIVEN no WORKFLOWS WHEN `lambda-workflows run orders` / `lambda-workflows dev` starts
    env = {k: v for k, v in os.environ.items() if k != "WORKFLOWS"}
    code = "import sys; from lambda_workflows.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # THEN it exits 2 saying how to set WORKFLOWS, with an example
    assert done.returncode == 2, done.stdout + done.stderr
    assert "WORKFLOWS=orders=my_module:OrderWorkflow" in done.stderr
