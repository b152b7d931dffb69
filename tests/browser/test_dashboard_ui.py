"""The dashboard opened through `lambda-workflows ui` (in-process, forwarding to the module's
`lambda-workflows dev`): the pages come from the ui, every API call goes through it, and a control
sent from the real browser passes its same-origin check (issue 16)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from lambda_workflows.dashboard.ui_server import UiServer, make_ui_server, serve_in_background
from lambda_workflows.remote import HttpApi

from .browser import Browser
from .conftest import DevApi
from .test_dashboard import ROWS, row_cells


@dataclass
class RunningUi:
    """`lambda-workflows ui` serving on a thread, and the lines it printed (one per request)."""

    server: UiServer
    lines: list[str]

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture(scope="module")
def ui(dev: DevApi) -> Iterator[RunningUi]:
    lines: list[str] = []
    server = make_ui_server(HttpApi(dev.url), 0, out=lines.append)
    serve_in_background(server)
    try:
        yield RunningUi(server, lines)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def session_browser(chromium: tuple[str, str], ui: RunningUi) -> Iterator[Browser]:
    """This module's browser opens the ui, not the dev server."""
    browser = Browser.start(ui.url, chromium)
    try:
        yield browser
    finally:
        browser.quit()


def test_an_instance_seen_and_completed_through_workflows_ui(
    browser: Browser, dev: DevApi, ui: RunningUi
) -> None:
    # GIVEN a gate instance waiting for its "go" event on the dev server
    dev.create("gate", "through-ui")
    dev.wait_status("gate", "through-ui", "waiting")

    # WHEN the dashboard is opened at the ui's address, and the instance from its workflow's list
    browser.open("#/workflows/gate")
    browser.find('tr[data-instance="through-ui"] a').click()

    # THEN its page shows it, with the timeline the dev server recorded
    browser.wait(lambda: len(browser.all(ROWS)) == 2, why="two timeline rows")
    assert row_cells(browser) == [
        ("prepare", "do", "complete"),
        ("gate", "waitForEvent", "waiting"),
    ]
    browser.wait_text(".facts .status", "waiting")
    browser.screenshot("ui-instance")

    # WHEN the event is sent from the page's form (a POST the ui forwards)
    payload = browser.find("#event-payload")
    payload.clear()
    payload.send_keys('{"by": "ui"}')
    browser.find("#send-event").click()
    browser.confirm()

    # THEN the dev server got it, and the page shows the instance complete
    browser.wait_text(".facts .status", "complete")
    assert dev.instance("gate", "through-ui")["output"] == {"opened_by": "ui"}
    forwarded = "POST /workflows/gate/instances/through-ui/events/go -> 202"
    assert any(line.startswith(forwarded) for line in ui.lines), ui.lines


def test_a_diagram_without_the_workflows_source_here_says_how_to_get_it(browser: Browser) -> None:
    # GIVEN a ui started without WORKFLOWS: it has no workflow's source
    browser.expect_failure("/_dashboard/workflows/gate/diagram")  # the 404 it answers

    # WHEN a workflow's diagram is opened
    browser.open("#/workflows/gate/diagram")

    # THEN the page shows the ui's answer, which says what to set, and draws nothing
    browser.wait_text(
        ".problem .api-error", "start lambda-workflows ui with WORKFLOWS=name=module:Class"
    )
    assert browser.text(".problem .problem-code") == "404 unknown_workflow"
    assert not browser.all("svg.diagram")
