"""WORKFLOWS: one place declares which names map to which classes."""

from __future__ import annotations

import pytest

from examples.showcase import SubscriptionWorkflow
from workflows.registry import default_env_values, default_workflows, load_workflows


def test_pairs_name_module_and_class() -> None:
    registry = load_workflows(
        "subs=examples.showcase:SubscriptionWorkflow, flaky = examples.showcase:FlakyFetchWorkflow"
    )
    assert set(registry) == {"subs", "flaky"}
    assert registry["subs"] is SubscriptionWorkflow
    assert default_env_values("subs=examples.showcase:SubscriptionWorkflow") == {}


def test_unset_registers_the_bundled_examples() -> None:
    registry = load_workflows("")
    assert registry == default_workflows()
    assert {"subscription", "idempotent-charge", "race-inside-step"} <= set(registry)
    assert "KV" in default_env_values("")


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
    with pytest.raises(RuntimeError, match="WORKFLOWS entry") as info:
        load_workflows(spec)
    assert fragment in str(info.value)


@pytest.mark.parametrize("handler", ["api", "runner", "trigger", "sweep"])
def test_a_lambda_cold_start_fails_on_a_bad_entry_naming_it(handler: str) -> None:
    import os
    import subprocess
    import sys

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
