"""Issue 27, point 5: the rules of Workflows the linter missed, each as the issue words it.

The corpus (:mod:`.corpus`) holds the many ways users write each pattern; these tests pin the
issue's own examples, what the findings say, and that their suppressions work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lambda_workflows.lint import RULES, lint_source, main

from .snippets import lint_module, lint_run, rules, run_rules


@pytest.mark.parametrize("sleep", ["await asyncio.sleep(3600)", "time.sleep(10)"])
def test_a_real_time_sleep_in_run_is_wf113_pointing_to_step_sleep(sleep: str) -> None:
    findings = lint_run(f'{sleep}\nawait step.do("after", lambda: 1)')
    assert rules(findings) == ["WF113"]
    assert "step.sleep" in findings[0].message
    assert findings[0].workflow_rule == "side-effects-in-steps"


def test_a_task_of_a_step_never_awaited_is_wf104() -> None:
    findings = lint_run('asyncio.create_task(step.do("notify", lambda: 1))\nreturn "done"')
    assert rules(findings) == ["WF104"]
    assert "create_task" in findings[0].message


@pytest.mark.parametrize("handler", ["except BaseException:", "except:"])
def test_except_base_exception_or_bare_except_around_a_step_is_wf114(handler: str) -> None:
    body = f'try:\n    await step.sleep("nap", "1 hour")\n{handler}\n    pass'
    findings = lint_run(body)
    assert rules(findings) == ["WF114"]
    assert "catch `Exception` instead" in findings[0].message
    assert findings[0].workflow_rule == "await-steps"


def test_a_module_global_mutated_in_run_and_used_in_a_step_name_is_wf115() -> None:
    findings = lint_module(
        """
        from lambda_workflows import WorkflowEntrypoint

        counter = 0

        class W(WorkflowEntrypoint):
            async def run(self, event, step):
                global counter
                counter += 1
                await step.do(f"step {counter}", lambda: 1)
        """
    )
    assert rules(findings) == ["WF115"]
    assert "`counter`" in findings[0].message
    assert findings[0].workflow_rule == "deterministic-step-names"


def test_step_names_built_while_iterating_a_set_are_wf116_and_sorted_is_fine() -> None:
    bad = 'for tag in set(event.payload["tags"]):\n    await step.do(f"tag {tag}", lambda: 1)'
    findings = lint_run(bad)
    assert rules(findings) == ["WF116"]
    assert "sorted(" in findings[0].message
    assert run_rules(bad.replace("in set(", "in sorted(set(").replace("]):", "])):")) == []


def test_the_event_mutated_by_a_helper_run_calls_is_wf105_naming_the_helper() -> None:
    findings = lint_module(
        """
        from lambda_workflows import WorkflowEntrypoint

        def normalise(payload):
            payload["email"] = payload["email"].lower()

        class W(WorkflowEntrypoint):
            async def run(self, event, step):
                normalise(event.payload)
                await step.do("go", lambda: 1)
        """
    )
    assert rules(findings) == ["WF105"]
    assert findings[0].line == 9
    assert "normalise() changes the event passed to it (line 5)" in findings[0].message


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ("time.sleep(10){ignore}", "WF113"),
        ('try:\n    await step.do("a", lambda: 1)\nexcept:{ignore}\n    pass', "WF114"),
        ('for t in {{"a", "b"}}:\n    await step.do(f"t {{t}}", lambda: 1){ignore}', "WF116"),
    ],
)
def test_the_new_rules_can_be_silenced_on_their_line(body: str, rule: str) -> None:
    assert run_rules(body.format(ignore="")) == [rule]
    assert run_rules(body.format(ignore=f"  # lambda-workflows: ignore[{rule}]")) == []


def test_the_new_rules_are_listed_with_their_rule_of_workflows() -> None:
    assert {r: RULES[r].workflow_rule for r in ("WF113", "WF114", "WF115", "WF116")} == {
        "WF113": "side-effects-in-steps",
        "WF114": "await-steps",
        "WF115": "deterministic-step-names",
        "WF116": "deterministic-step-names",
    }


def test_the_command_reports_the_issues_examples_in_one_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN one module with the six patterns of the issue, written as a user would
    source = """
import asyncio
import time

from lambda_workflows import WorkflowEntrypoint

counter = 0


def tidy(payload):
    payload.pop("secret", None)


class Everything(WorkflowEntrypoint):
    async def run(self, event, step):
        global counter
        counter += 1
        await asyncio.sleep(3600)
        time.sleep(10)
        asyncio.create_task(step.do("fire and forget", lambda: 1))
        try:
            await step.sleep("nap", "1 hour")
        except BaseException:
            pass
        await step.do(f"numbered {counter}", lambda: 1)
        for tag in {"a", "b"}:
            await step.do(f"tag {tag}", lambda: 1)
        tidy(event.payload)
"""
    path = tmp_path / "everything.py"
    path.write_text(source)
    # WHEN `lambda-workflows lint --format json` checks it
    assert main([str(path), "--format", "json"]) == 1
    found = json.loads(capsys.readouterr().out)
    # THEN each pattern is reported once, with its rule
    assert sorted(f["rule"] for f in found) == [
        "WF104",
        "WF105",
        "WF113",
        "WF113",
        "WF114",
        "WF115",
        "WF116",
    ]
    assert lint_source(source) != []
