"""The corpus of user-written workflow modules: each finding where its marker says, nothing else.

See :mod:`tests.unit.lint.corpus`: a line ending in ``# expect: WF1xx`` must be reported with
that rule; every other line, and every case without markers (the near misses), must be clean.
"""

from __future__ import annotations

import pytest

from lambda_workflows.lint import lint_source

from .corpus import (
    Case,
    event_copies,
    event_mutation,
    near_misses,
    process_state,
    races,
    set_order,
    sleeps,
    suspensions,
    tasks,
    variants_control,
    variants_values,
)

CASES: list[Case] = [
    *sleeps.CASES,
    *tasks.CASES,
    *suspensions.CASES,
    *process_state.CASES,
    *set_order.CASES,
    *event_mutation.CASES,
    *event_copies.CASES,
    *races.CASES,
    *near_misses.CASES,
    *variants_control.CASES,
    *variants_values.CASES,
]


def test_the_corpus_names_are_unique() -> None:
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_each_case_is_reported_exactly_where_its_markers_say(case: Case) -> None:
    # GIVEN a module written the way users write it
    # WHEN it is linted with suppressions honoured (the corpus has none)
    findings = lint_source(case.text, f"{case.name}.py")
    # THEN the findings are exactly the marked lines and rules
    assert {(f.line, f.rule) for f in findings} == case.expected
