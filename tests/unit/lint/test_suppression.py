"""``# lambda-workflows: ignore[...]`` comments and ``honor_ignores``."""

from __future__ import annotations

import pytest

from lambda_workflows.lint.suppression import ignored_rules

from .snippets import lint_run, rules


def test_an_ignore_comment_naming_the_rule_silences_it() -> None:
    assert rules(lint_run("x = random.random()  # lambda-workflows: ignore[WF102]")) == []


def test_an_ignore_comment_naming_another_rule_does_not() -> None:
    assert rules(lint_run("x = random.random()  # lambda-workflows: ignore[WF101]")) == ["WF102"]


def test_an_ignore_comment_may_name_several_rules() -> None:
    body = 'step.do(f"at {time.time()}", lambda: 1)  # lambda-workflows: ignore[WF101, WF104]'
    assert rules(lint_run(body)) == []


def test_a_bare_ignore_comment_silences_every_rule_on_its_line() -> None:
    body = 'step.do(f"at {time.time()}", lambda: 1)  # lambda-workflows: ignore'
    assert rules(lint_run(body)) == []


def test_an_ignore_comment_only_covers_its_own_line() -> None:
    body = "# lambda-workflows: ignore[WF102]\nx = random.random()"
    assert rules(lint_run(body)) == ["WF102"]


def test_honor_ignores_false_reports_suppressed_findings() -> None:
    body = "x = random.random()  # lambda-workflows: ignore[WF102]"
    assert rules(lint_run(body, honor_ignores=False)) == ["WF102"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("x = 1  # lambda-workflows: ignore[WF101]", {"WF101"}),
        ("x = 1  #lambda-workflows:ignore[wf101,WF102]", {"WF101", "WF102"}),
        ("x = 1  # lambda-workflows: ignore", {"*"}),
        ("x = 1  # noqa: E501  # lambda-workflows: ignore[WF103]", {"WF103"}),
        ('x = "# lambda-workflows: ignore[WF101]"', set()),
        ("x = 1  # workflows are great", set()),
    ],
)
def test_ignore_comments_are_parsed_from_real_comments_only(line: str, expected: set[str]) -> None:
    assert ignored_rules(line) == expected
