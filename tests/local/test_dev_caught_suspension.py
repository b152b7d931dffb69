"""A suspension run() catches, through `lambda-workflows dev` over HTTP: the local runtime skips
the idle hour of a sleep, and the instance used to complete in a blink with the sleep never
having happened. It errors instead, at once, naming the rule and the lines, and says so in the
dev server's status line."""

from __future__ import annotations

import linecache
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.remote import HttpApi

from .devserver import serving, until_status


class Swallows(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        try:  # noqa: SIM105
            await step.sleep(event.payload["nap"], event.payload["for"])  # the step
        except BaseException:  # the handler
            pass
        return await step.do("after the nap", lambda: "after")


def line(marker: str) -> str:
    """``file:line`` of the line of this file that ends with ``# <marker>``."""
    for number, text in enumerate(linecache.getlines(__file__), start=1):
        if text.rstrip().endswith(f"# {marker}"):
            return f"{Path(__file__).name}:{number}"
    raise AssertionError(marker)


@pytest.fixture
def dev() -> Iterator[tuple[HttpApi, list[str]]]:
    lines: list[str] = []
    with serving(LocalRuntime({"swallows": Swallows}, out=lines.append)) as dev:
        yield HttpApi(dev.url), lines


@pytest.mark.parametrize("length", ["1 hour", "1 second"])  # skipped; slept in-process
def test_a_caught_sleep_errors_the_instance_over_http_instead_of_completing(
    dev: tuple[HttpApi, list[str]], length: str
) -> None:
    api, lines = dev
    params = {"nap": "nap", "for": length}
    api.request("POST", "/workflows/swallows/instances", {"instance_id": "s", "params": params})
    body = until_status(api, "swallows", "s", "errored")
    assert body["output"] is None
    error = body["error"]
    assert error["name"] == "SuspensionCaughtError"
    assert "do not catch BaseException / asyncio.CancelledError" in error["message"]
    assert line("the step") in error["message"] and line("the handler") in error["message"]
    assert [row["name"] for row in body["steps"]] == ["nap"]  # nothing after it ran
    assert any("swallows/s -> errored (SuspensionCaughtError" in text for text in lines), lines
