"""The Python client's HTTP mode and the CLI read a long instance whole, though the API answers
it in pages (issue 24, item 1): the client's ``status()`` has every step and equals the direct
mode's, ``instance.steps()`` reads one page at a time, the history comes back whole, and
``lambda-workflows instances describe`` and ``export`` print every step and every entry. A read
that a restart interrupts (its cursor gone stale) starts again.

Against one `lambda-workflows dev` in-process; its instance has 70 steps whose failed attempts
each say 8,000 characters, so the API's 512 KiB pages hold fewer rows than that.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")

from lambda_workflows import Workflow
from lambda_workflows.cli import main
from lambda_workflows.cli.console import Console
from lambda_workflows.engine.instances.pages import StepPage
from lambda_workflows.engine.instances.service import InstanceService
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.http_service import HttpInstanceService
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.remote import Answer, HttpApi
from tests.functional.api.many_steps import LoudSteps

from .devserver import RunningDev, serving

STEPS = 70
NAMES = [f"loud {n}" for n in range(STEPS)]
REF = InstanceRef("loud", "loud-1")


@pytest.fixture(scope="module")
def dev() -> Iterator[RunningDev]:
    with serving(LocalRuntime({"loud": LoudSteps}, out=lambda line: None), worker=False) as dev:
        direct(dev).create("loud", REF.id, {"steps": STEPS})
        dev.runtime.run_until_idle()
        yield dev


def direct(dev: RunningDev) -> InstanceService:
    """The server's own instance service (the client's direct mode)."""
    return dev.runtime.aws.runtime.service


def cli(dev: RunningDev, *argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--url", dev.url], console=Console(out, err)) == 0, err.getvalue()
    return out.getvalue()


def test_the_api_answers_the_instance_in_pages(dev: RunningDev) -> None:
    # the premise of this file: the instance's own answer holds its first page only
    first = HttpApi(dev.url).request("GET", "/workflows/loud/instances/loud-1").body
    assert first["steps_total"] == STEPS and 1 < len(first["steps"]) < STEPS
    assert first["steps_cursor"]


def test_the_http_clients_status_has_every_step_as_the_direct_mode_does(dev: RunningDev) -> None:
    # WHEN the HTTP client reads the instance's status
    view = Workflow("loud", url=dev.url).get(REF.id).status()
    # THEN it has every step, and is the direct mode's view (times to the millisecond)
    assert [step.name for step in view.steps] == NAMES
    assert view.steps_total is None and view.steps_cursor is None
    assert view.to_dict() == direct(dev).status(REF).to_dict()


def test_instance_steps_reads_the_timeline_a_page_at_a_time(dev: RunningDev) -> None:
    instance = Workflow("loud", url=dev.url).get(REF.id)
    pages = [instance.steps(limit=25)]
    while pages[-1].cursor is not None:
        pages.append(instance.steps(cursor=pages[-1].cursor, limit=25))
    assert all(isinstance(page, StepPage) and page.total == STEPS for page in pages)
    assert [len(page.steps) for page in pages] == [25, 25, 20]
    assert [step.name for page in pages for step in page.steps] == NAMES


def test_the_http_client_reads_the_whole_history(dev: RunningDev) -> None:
    history = HttpInstanceService(HttpApi(dev.url)).history(REF)
    assert len(history.entries) == 2 * STEPS
    assert history.to_dict() == direct(dev).history(REF).to_dict()


def test_describe_prints_every_step_and_export_the_whole_history(dev: RunningDev) -> None:
    # WHEN the instance is described (as JSON and as text) and exported
    described = json.loads(cli(dev, "instances", "describe", "loud", REF.id, "--json"))
    text = cli(dev, "instances", "describe", "loud", REF.id)
    exported = json.loads(cli(dev, "instances", "export", "loud", REF.id))
    # THEN the JSON has every step and no cursor: the answer an unpaged API would give
    assert [step["name"] for step in described["steps"]] == NAMES
    assert "steps_cursor" not in described and "steps_total" not in described
    # AND the text shows every step, the export is the whole history
    assert all(name in text for name in (NAMES[0], NAMES[-1]))
    assert text.count("loud ") >= STEPS
    assert exported == direct(dev).history(REF).to_dict()


class RestartsAfterFirstRead(HttpApi):
    """The API, with the instance restarted right after the client read its first page."""

    def __init__(self, url: str, restart: Any) -> None:
        super().__init__(url)
        self.restart = restart
        self.paths: list[str] = []

    def request(self, method: str, path: str, body: Any = None, **options: Any) -> Answer:
        self.paths.append(path.split("?")[0])
        answer = super().request(method, path, body, **options)
        if len(self.paths) == 1:
            self.restart()
        return answer


def test_a_read_that_a_restart_made_stale_starts_again(dev: RunningDev) -> None:
    # GIVEN an instance restarted between the client's first page and its next one
    ref = InstanceRef("loud", "loud-2")
    direct(dev).create("loud", ref.id, {"steps": STEPS})
    dev.runtime.run_until_idle()
    api = RestartsAfterFirstRead(dev.url, lambda: direct(dev).restart(ref))
    # WHEN the client reads its status
    view = HttpInstanceService(api).status(ref)
    # THEN the next page was refused as stale, and the client read the new run from the start
    instance = "/workflows/loud/instances/loud-2"
    assert api.paths == [instance, f"{instance}/steps", instance]
    assert view.status == "queued" and view.steps == []
    assert view.to_dict() == direct(dev).status(ref).to_dict()
