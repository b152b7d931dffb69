"""self.logger: run()-level lines are not repeated on replay; lines carry the workflow, instance
and step; a record's location is the line that called self.logger."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.testing import WorkflowTestEnv


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
    caplog.set_level(logging.INFO, logger="lambda_workflows")
    env = WorkflowTestEnv({"chatty": Chatty})
    env.create("chatty", id="c-1")
    env.run_until_idle()
    assert env.invocations == 3  # two sleeps: run() was replayed twice
    messages = [r.getMessage() for r in caplog.records if r.name == "lambda_workflows.Chatty"]
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
    caplog.set_level(logging.INFO, logger="lambda_workflows")
    env = WorkflowTestEnv({"chatty": Chatty})
    env.create("chatty", id="c-2")
    env.run_until_idle()
    records = [r for r in caplog.records if r.name == "lambda_workflows.Chatty"]
    assert all(getattr(r, "instance_id", None) == "c-2" for r in records)
    inside = [r for r in records if r.getMessage() == "inside first"]
    assert [(getattr(r, "step", None), getattr(r, "attempt", None)) for r in inside] == [
        ("first", 1)
    ]
    starting = next(r for r in records if r.getMessage() == "starting")
    assert not hasattr(starting, "step")


# --- where a line comes from: the user's line, not the adapter ----------------------------------


def line_of(text: str) -> int:
    """The line number of the one line of this file that ends with the comment ``# text``."""
    lines = Path(__file__).read_text().splitlines()
    found = [n for n, line in enumerate(lines, 1) if line.endswith(f"# {text}")]
    assert len(found) == 1, found
    return found[0]


def log_from_a_helper(logger: Any, message: str) -> None:
    logger.info(message, stacklevel=2)  # the helper's caller is the line to show


class Located(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        self.logger.info("in run")  # run

        def work(ctx: Any) -> str:
            self.logger.warning("in the step")  # step
            try:
                raise ValueError("shown with its traceback")
            except ValueError:
                self.logger.exception("caught")  # exception
            self.logger.log(logging.INFO, "through log()")  # log
            log_from_a_helper(self.logger, "through a helper")  # helper
            return "ok"

        return await step.do("work", work)


def test_a_records_location_is_the_line_that_called_self_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a workflow that logs in run(), in a step callback, and through a helper of its own
    caplog.set_level(logging.INFO, logger="lambda_workflows")
    env = WorkflowTestEnv({"located": Located})
    # WHEN it runs
    env.create("located", id="l-1")
    env.run_until_idle()
    # THEN each record points at the line of this file that logged it, in its function
    records = {r.getMessage(): r for r in caplog.records if r.name == "lambda_workflows.Located"}
    expected = {
        "in run": (line_of("run"), "run"),
        "in the step": (line_of("step"), "work"),
        "caught": (line_of("exception"), "work"),
        "through log()": (line_of("log"), "work"),
        "through a helper": (line_of("helper"), "work"),
    }
    assert set(records) == set(expected)
    for message, (lineno, function) in expected.items():
        record = records[message]
        assert (record.pathname, record.lineno, record.funcName) == (
            __file__,
            lineno,
            function,
        ), message


def test_lines_carry_the_registered_workflow_name(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="lambda_workflows")
    env = WorkflowTestEnv({"located": Located})
    env.create("located", id="l-2")
    env.run_until_idle()
    records = [r for r in caplog.records if r.name == "lambda_workflows.Located"]
    assert records and {getattr(r, "workflow", None) for r in records} == {"located"}
