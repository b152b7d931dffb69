"""WORKFLOWS: one place declares which names map to which classes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from examples import EXAMPLES, GOOD_WORKFLOWS
from examples.showcase import SHOWCASE_WORKFLOWS, SubscriptionWorkflow
from workflows.engine.errors import ConfigurationError, UnknownWorkflow, WorkflowError
from workflows.registry import load_workflows
from workflows.testing import WorkflowTestEnv


def test_pairs_name_module_and_class() -> None:
    registry = load_workflows(
        "subs=examples.showcase:SubscriptionWorkflow, flaky = examples.showcase:FlakyFetchWorkflow"
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
        "import sys, workflows, workflows.client, workflows.testing, workflows.cli, "
        "workflows.aws.runtime, workflows.local.runtime, workflows.entrypoints.api, "
        "workflows.entrypoints.runner, workflows.entrypoints.trigger, workflows.entrypoints.sweep;"
        "from workflows.registry import load_workflows; load_workflows();"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'examples'))"
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
        ("orders=examples.showcase:Missing", "has no class 'Missing'"),
        ("orders=examples.showcase:attempts", "not a WorkflowEntrypoint subclass"),
        ("bad name!=examples.showcase:SubscriptionWorkflow", "workflow name"),
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
        [sys.executable, "-c", f"import workflows.entrypoints.{handler}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "cannot import module 'no_such_module_xyz'" in result.stderr
