"""self.logger: run()-level lines are not repeated on replay; lines carry instance and step."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from workflows.testing import WorkflowTestEnv


class Chatty(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        self.logger.info("starting")

        def work(ctx: Any) -> str:
            self.logger.info("inside %s", ctx.step.name)
            return "ok"

        await step.do("first", work)
        self.logger.info("before the sleep")
        await step.sleep("nap", "1 hour")
        self.logger.info("after the sleep")
        await step.do("second", work)
        await step.sleep("another nap", "1 hour")
        self.logger.info("finished")
        return "done"


def test_run_level_lines_are_logged_once_despite_replays(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="workflows")
    env = WorkflowTestEnv({"chatty": Chatty})
    env.create("chatty", id="c-1")
    env.run_until_idle()
    assert env.invocations == 3  # two sleeps: run() was replayed twice
    messages = [r.getMessage() for r in caplog.records if r.name == "workflows.Chatty"]
    assert messages == [
        "starting",
        "inside first",
        "before the sleep",
        "after the sleep",
        "inside second",
        "finished",
    ]


def test_lines_carry_the_instance_and_inside_a_step_its_name_and_attempt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="workflows")
    env = WorkflowTestEnv({"chatty": Chatty})
    env.create("chatty", id="c-2")
    env.run_until_idle()
    records = [r for r in caplog.records if r.name == "workflows.Chatty"]
    assert all(getattr(r, "instance_id", None) == "c-2" for r in records)
    inside = [r for r in records if r.getMessage() == "inside first"]
    assert [(getattr(r, "step", None), getattr(r, "attempt", None)) for r in inside] == [
        ("first", 1)
    ]
    starting = next(r for r in records if r.getMessage() == "starting")
    assert not hasattr(starting, "step")
