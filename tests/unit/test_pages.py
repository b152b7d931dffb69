"""Pages of an instance's steps and history in process, on every store: the instance handle's
``steps()`` and the service's ``history_page()`` page with ``limit`` and ``cursor`` and put end
to end give the whole timeline and history; ``status(steps_limit=...)`` cuts to a first page
with the count and a cursor; each store signs its cursors, so a changed one or another store's
is refused; and ``status()`` without a limit (the test kit's) is whole, as before."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lambda_workflows import InvalidInput
from lambda_workflows.engine.errors import StaleCursor
from lambda_workflows.engine.instances.pages import ATTEMPTS_SHOWN, StepPage
from lambda_workflows.testing import TestInstance, WorkflowTestEnv
from tests.functional.api.many_steps import FlakySteps, StubbornStep

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

NAMES = [f"step {n}" for n in range(7)]


def seven_steps(make_env: EnvFactory) -> tuple[WorkflowTestEnv, TestInstance]:
    env = make_env({"flaky": FlakySteps})
    instance = env.create("flaky", id="seven", params={"steps": 7})
    env.run_until_idle()
    return env, instance


def every_page(instance: TestInstance, limit: int) -> list[StepPage]:
    pages = [instance.steps(limit=limit)]
    while pages[-1].cursor is not None:
        pages.append(instance.steps(cursor=pages[-1].cursor, limit=limit))
    return pages


def test_steps_pages_put_end_to_end_are_the_whole_timeline(make_env: EnvFactory) -> None:
    _, instance = seven_steps(make_env)
    pages = every_page(instance, 3)
    assert [len(page.steps) for page in pages] == [3, 3, 1]
    assert {page.total for page in pages} == {7}
    assert [step for page in pages for step in page.steps] == instance.status().steps


def test_history_pages_put_end_to_end_are_the_whole_history(make_env: EnvFactory) -> None:
    env, instance = seven_steps(make_env)
    pages = [env.service.history_page(instance.ref, limit=4)]
    while pages[-1].cursor is not None:
        pages.append(env.service.history_page(instance.ref, pages[-1].cursor, 4))
    whole = env.service.history(instance.ref)
    assert [len(page.history.entries) for page in pages] == [4, 4, 4, 2]
    assert tuple(e for page in pages for e in page.history.entries) == whole.entries
    assert all(head(page.history) == head(whole) for page in pages)  # each says whose it is
    assert "cursor" not in pages[-1].to_dict() and "cursor" in pages[0].to_dict()


def head(history: Any) -> Any:
    return dataclasses.replace(history, entries=(), events=())


def test_a_status_with_a_limit_is_its_first_page_with_the_count(make_env: EnvFactory) -> None:
    env, instance = seven_steps(make_env)
    cut = env.service.status(instance.ref, steps_limit=2)
    assert [step.name for step in cut.steps] == NAMES[:2]
    assert cut.steps_total == 7 and cut.steps_cursor is not None
    assert list(cut.to_dict())[-2:] == ["steps_total", "steps_cursor"]
    rest = instance.steps(cursor=cut.steps_cursor)
    assert [step.name for step in rest.steps] == NAMES[2:] and rest.cursor is None
    # the test kit's status() is whole, without either field
    whole = instance.status()
    assert len(whole.steps) == 7 and "steps_cursor" not in whole.to_dict()


def test_a_changed_cursor_or_another_stores_is_refused(make_env: EnvFactory) -> None:
    env, instance = seven_steps(make_env)
    cursor = instance.steps(limit=2).cursor
    assert cursor is not None
    _, other = seven_steps(make_env)  # the same instance on a store of its own
    for bad in (cursor[:-2] + ("AA" if cursor[-2:] != "AA" else "BB"), "1000", ""):
        with pytest.raises(InvalidInput, match="cursor is not valid"):
            instance.steps(cursor=bad)
    with pytest.raises(InvalidInput, match="cursor is not valid"):
        other.steps(cursor=cursor)
    with pytest.raises(InvalidInput, match="not one of the history pages"):
        env.service.history_page(instance.ref, cursor)


def test_a_cursor_from_before_a_restart_is_stale(make_env: EnvFactory) -> None:
    _, instance = seven_steps(make_env)
    cursor = instance.steps(limit=2).cursor
    instance.restart()
    with pytest.raises(StaleCursor, match="was restarted"):
        instance.steps(cursor=cursor)


@pytest.mark.parametrize("limit", [0, 1001, True, "10"])
def test_a_limit_out_of_range_is_refused(make_env: EnvFactory, limit: Any) -> None:
    _, instance = seven_steps(make_env)
    with pytest.raises(InvalidInput, match="limit must be a whole number from 1 to 1,000"):
        instance.steps(limit=limit)


def test_a_page_row_shows_the_first_and_newest_attempts(make_env: EnvFactory) -> None:
    env = make_env({"stubborn": StubbornStep})
    instance = env.create("stubborn", id="s", params={"failures": 29})
    env.run_until_idle()
    [row] = instance.steps().steps
    assert [a.attempt for a in row.attempt_history] == [1, *range(7, 31)]
    assert len(row.attempt_history) == ATTEMPTS_SHOWN and row.attempts_omitted == 5
    assert row.to_dict()["attempts_omitted"] == 5
    [whole] = instance.status().steps
    assert len(whole.attempt_history) == 30 and "attempts_omitted" not in whole.to_dict()
