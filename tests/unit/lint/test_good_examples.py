"""The ported ✅ examples: clean with suppressions, and free of false positives without them."""

from __future__ import annotations

from pathlib import Path

import pytest

import lambda_workflows.examples
from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.examples import GOOD_WORKFLOWS
from lambda_workflows.examples._fakes import example_env
from lambda_workflows.lint import lint_paths
from lambda_workflows.testing import WorkflowTestEnv

from .examples_index import EXAMPLE_MODULES, EXAMPLES_DIR, marked, spans

HANDLER_DIR = EXAMPLES_DIR.parent


@pytest.mark.parametrize("path", EXAMPLE_MODULES, ids=lambda p: p.stem)
def test_each_example_module_is_clean_when_suppressions_are_honoured(path: Path) -> None:
    assert lint_paths([path], jobs=1) == []


def test_the_examples_directory_and_the_whole_handler_tree_are_clean() -> None:
    assert lint_paths([EXAMPLES_DIR], jobs=1) == []
    assert lint_paths([HANDLER_DIR], jobs=1) == []


@pytest.mark.parametrize("path", EXAMPLE_MODULES, ids=lambda p: p.stem)
def test_good_examples_have_no_findings_even_without_suppressions(path: Path) -> None:
    # GIVEN every finding of the module with suppression comments ignored
    findings = lint_paths([path], honor_ignores=False, jobs=1)
    # THEN none of them is inside a good class or function (no false positives)
    good = [span for span in spans(path) if not span.bad]
    assert [f for f in findings if any(s.first <= f.line <= s.last for s in good)] == []


@pytest.mark.parametrize("path", EXAMPLE_MODULES, ids=lambda p: p.stem)
def test_every_suppression_comment_marks_a_real_finding(path: Path) -> None:
    # The comments name exactly the findings --no-ignore reports: none stale, none missing.
    findings = lint_paths([path], honor_ignores=False, jobs=1)
    assert {(f.line, f.rule) for f in findings} == marked(path)
    assert all(
        any(s.bad and s.first <= line <= s.last for s in spans(path)) for line, _ in marked(path)
    )


def test_good_workflows_maps_names_to_the_good_classes() -> None:
    assert GOOD_WORKFLOWS
    for name, workflow in GOOD_WORKFLOWS.items():
        assert issubclass(workflow, WorkflowEntrypoint)
        assert not workflow.__name__.startswith("Bad")
        assert name == name.lower() and " " not in name
        assert workflow.__module__.startswith(lambda_workflows.examples.__name__ + ".")


def test_every_good_example_runs_to_completion_on_the_engine() -> None:
    # GIVEN the good examples on the in-memory engine, with local fakes for their services
    values = example_env()
    env = WorkflowTestEnv(GOOD_WORKFLOWS, env=values)
    params = {"user": "alice", "user_type": "premium", "repo_name": "cats/cats", "customer_id": 7}
    instances = {name: env.create(name, id=f"{name}-1", params=params) for name in GOOD_WORKFLOWS}
    # WHEN they run (sleeps pass in virtual time)
    env.run_until_idle()
    # THEN each one completes, and the customer was charged exactly once
    statuses = {name: instance.status() for name, instance in instances.items()}
    assert {name: s.status for name, s in statuses.items()} == dict.fromkeys(
        GOOD_WORKFLOWS, "complete"
    )
    assert values["PAYMENTS"].charge_count(7) == 1
    assert statuses["race-inside-step"].output == "second"
    assert statuses["large-results"].output == {"rows": 20_000, "top_score": 999}
