"""The instance page follows its instance through the subscription (``GET …/subscribe``
long polls), not by reading the whole status again: it updates as events happen, and while it
is open no ``GET …/instances/{id}`` is made."""

from __future__ import annotations

from typing import Any

from .browser import Browser
from .conftest import DevApi

ROWS = ".tl-rows > details.step"


def requests_made(browser: Browser) -> list[str]:
    """The paths (and queries) of the API requests the page made since the last clear."""
    urls = browser.script(
        "return performance.getEntriesByType('resource')"
        ".filter(e => e.initiatorType === 'fetch').map(e => e.name)"
    )
    base = browser.script("return location.origin")
    return [str(url).removeprefix(base) for url in urls]


def full_status_reads(paths: list[str], workflow: str, instance_id: str) -> list[str]:
    whole = f"/workflows/{workflow}/instances/{instance_id}"
    return [path for path in paths if path.split("?")[0] == whole]


def test_the_instance_page_updates_from_the_subscription_without_reading_the_status(
    browser: Browser, dev: DevApi
) -> None:
    # GIVEN a gate instance waiting for its "go" event, its page open and drawn
    dev.create("gate", "gate-follow")
    dev.wait_status("gate", "gate-follow", "waiting")
    browser.open("#/workflows/gate/instances/gate-follow")
    browser.wait_text(".facts .status", "waiting")
    browser.wait(lambda: len(browser.all(ROWS)) == 2, why="two timeline rows")
    browser.wait(
        lambda: any("/subscribe" in p for p in requests_made(browser)) or None,
        why="the page's first subscription answer",
    )
    browser.script("performance.clearResourceTimings()")

    # WHEN the event is sent by someone else (not from the page)
    status, answer = dev.call("POST", "/workflows/gate/instances/gate-follow/events/go", {"n": 1})
    assert status == 202, answer

    # THEN the page shows the instance complete, its wait received and its output
    browser.wait_text(".facts .status", "complete")
    browser.wait_text(ROWS + '[data-type="waitForEvent"] .note', 'received "go"')
    assert browser.text(".page-head .live") == "finished"
    # AND it learned that from its subscription, never reading the instance's whole status
    made = requests_made(browser)
    assert any(p.startswith("/workflows/gate/instances/gate-follow/subscribe?") for p in made)
    assert "wait=20" in next(p for p in made if "/subscribe" in p)
    assert full_status_reads(made, "gate", "gate-follow") == []


def test_a_pause_and_resume_show_from_the_subscription(browser: Browser, dev: DevApi) -> None:
    # GIVEN a waiting gate's page
    dev.create("gate", "gate-moves")
    dev.wait_status("gate", "gate-moves", "waiting")
    browser.open("#/workflows/gate/instances/gate-moves")
    browser.wait_text(".facts .status", "waiting")
    browser.script("performance.clearResourceTimings()")

    # WHEN someone else pauses it, then resumes it (the runner takes it back to waiting)
    def change(action: str) -> Any:
        path = "/workflows/gate/instances/gate-moves/status"
        assert dev.call("PATCH", path, {"status": action})[0] == 200

    change("pause")
    browser.wait_text(".facts .status", "paused")
    change("resume")
    dev.wait_status("gate", "gate-moves", "waiting")

    # THEN the page follows both moves without reading the whole status
    browser.wait_text(".facts .status", "waiting")
    assert full_status_reads(requests_made(browser), "gate", "gate-moves") == []
