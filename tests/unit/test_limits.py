"""Names, ids and event types are validated over the whole string (a trailing newline is no
exception), and the in-memory store refuses a cursor it did not hand out."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import InvalidStepError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import InvalidInput
from lambda_workflows.engine.limits import check_event_type, check_id, check_workflow_name
from lambda_workflows.testing import WorkflowTestEnv

ENDINGS = ["\n", "\r\n", "\n\n", "\x00"]


@pytest.mark.parametrize("ending", ENDINGS, ids=repr)
def test_an_instance_id_with_a_trailing_control_character_is_refused(ending: str) -> None:
    with pytest.raises(InvalidInput, match="may only contain letters"):
        check_id(f"abc{ending}")


@pytest.mark.parametrize("ending", ENDINGS, ids=repr)
def test_an_event_type_with_a_trailing_control_character_is_refused(ending: str) -> None:
    with pytest.raises(InvalidInput, match="event type"):
        check_id(f"approved{ending}", what="event type")
    with pytest.raises(InvalidStepError, match="event type"):
        check_event_type(f"approved{ending}")


def test_a_workflow_name_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(InvalidInput, match="workflow name"):
        check_workflow_name("orders\n")


@pytest.mark.parametrize("value", ["abc", "a-b_c", "_1", "A" * 100])
def test_valid_ids_pass_unchanged(value: str) -> None:
    assert check_id(value) == value
    assert check_workflow_name(value[:64]) == value[:64]


class WaitsForANewline(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.wait_for_event("approval", type="approved\n", timeout="1 hour")


def test_a_workflow_waiting_for_an_event_type_with_a_newline_fails_naming_it() -> None:
    env = WorkflowTestEnv({"w": WaitsForANewline})
    instance = env.create("w", id="w-1")

    env.run_until_idle()

    view = instance.status()
    assert view.status == "errored"
    assert view.error is not None
    assert view.error.name == "InvalidStepError"
    assert "'approved\\n'" in view.error.message


def test_the_client_refuses_an_id_or_event_type_with_a_trailing_newline() -> None:
    env = WorkflowTestEnv({"w": WaitsForANewline})
    env.create("w", id="w-2")

    with pytest.raises(InvalidInput, match="instance id"):
        env.create("w", id="w-3\n")
    with pytest.raises(InvalidInput, match="event type"):
        env.get("w", "w-2").send_event(type="approved\n", payload=None)
    assert [r.id for r in env.service.list("w").records] == ["w-2"]


# --- the in-memory store's cursors ----------------------------------------------------------


@pytest.mark.parametrize("cursor", ["abc", "-1", "1e3", " 1", "1\n", "²", "9" * 10, "1.5"])
def test_the_memory_store_refuses_a_cursor_it_did_not_issue(cursor: str) -> None:
    env = WorkflowTestEnv({"w": WaitsForANewline})
    env.create("w", id="m-1")

    with pytest.raises(InvalidInput, match="cursor is not valid"):
        env.service.list("w", cursor=cursor)


def test_the_memory_store_pages_with_its_own_cursors() -> None:
    env = WorkflowTestEnv({"w": WaitsForANewline})
    for n in range(5):
        env.clock.advance(1)
        env.create("w", id=f"m-{n}")

    seen: list[str] = []
    cursor = None
    while True:
        page = env.service.list("w", cursor=cursor, limit=2)
        seen.extend(r.id for r in page.records)
        if page.cursor is None:
            break
        cursor = page.cursor

    assert seen == [f"m-{n}" for n in reversed(range(5))]
