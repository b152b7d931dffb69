"""The dashboard in a real browser (headless Chromium, see :mod:`.browser` for the driver):
each page against a running `lambda-workflows dev`, the controls end to end, 1,000 steps drawn, and
no console error anywhere (the ``browser`` fixture checks after every test). Screenshots of
every page land in test-artifacts/ (issue 16)."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.keys import Keys

from lambda_workflows.engine.instances import census

from .browser import PHONE, Browser
from .conftest import DevApi
from .workflows import MANY_STEPS

ROWS = ".tl-rows > details.step"


def row_cells(browser: Browser) -> list[tuple[str, str, str]]:
    """(name, type, status) of every timeline row, in order."""
    found = browser.script(
        "return [...document.querySelectorAll(arguments[0])].map(r => ["
        "r.querySelector('.name').textContent, r.dataset.type, r.dataset.status])",
        ROWS,
    )
    return [tuple(row) for row in found]


def test_workflows_page_lists_each_workflow_with_its_instances_by_status(
    browser: Browser, dev: DevApi
) -> None:
    # GIVEN a gate instance waiting for its event
    dev.create("gate", "listed-1")
    dev.wait_status("gate", "listed-1", "waiting")

    # WHEN the dashboard opens
    browser.open("#/")

    # THEN every registered workflow has a card, and the gate's counts its waiting instance
    browser.wait_text('[data-workflow="gate"] .counts', "1 waiting")
    names = {card.get_attribute("data-workflow") for card in browser.all("li.card")}
    assert {"gate", "many-steps", "subscription", "flaky-fetch"} <= names
    browser.wait_text('[data-workflow="subscription"] .about', "Charge a customer")
    browser.screenshot("workflows")

    # WHEN its count is followed
    browser.find('[data-workflow="gate"] .counts a.status-waiting').click()

    # THEN the instances page lists it, filtered on that status
    browser.find('tr[data-instance="listed-1"]')
    assert browser.find("#status-filter").get_attribute("value") == "waiting"


def test_workflows_page_marks_the_counts_that_are_lower_bounds(
    browser: Browser, dev: DevApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN three gate instances waiting, and an API that counts at most 2 a listing
    for number in range(3):
        dev.create("gate", f"bounded-{number}")
    dev.wait_status("gate", "bounded-2", "waiting")
    monkeypatch.setattr(census, "CENSUS_LIMIT", 2)

    # WHEN the dashboard opens
    browser.open("#/")

    # THEN the gate's card says there are at least 2 waiting
    browser.wait_text('[data-workflow="gate"] .counts', "2+ waiting")


def test_workflows_page_shows_each_deployed_version_with_its_instances_in_flight(
    browser: Browser, dev: DevApi
) -> None:
    # GIVEN two versions of renewal deployed, and an instance on the newest one
    dev.create("renewal", "renew-1")
    dev.wait_status("renewal", "renew-1", "waiting")

    # WHEN the dashboard opens
    browser.open("#/")

    # THEN renewal has one card (not one per version) saying what runs on each version
    browser.wait_text('[data-workflow="renewal"] .versions', "2: 1 in flight")
    assert "1: 0 in flight" in browser.text('[data-workflow="renewal"] .versions')
    names = [card.get_attribute("data-workflow") for card in browser.all("li.card")]
    assert names.count("renewal") == 1 and "renewal@1" not in names


def test_instances_page_filters_by_status_searches_by_id_and_pages(
    browser: Browser, dev: DevApi
) -> None:
    # GIVEN 30 instances of the gate, more than a page
    for number in range(30):
        dev.create("gate", f"paged-{number:02d}")
    dev.wait_status("gate", "paged-29", "waiting")

    # WHEN its instances are opened: newest first, 25 to a page
    browser.open("#/workflows/gate")
    browser.find('tr[data-instance="paged-29"]')
    first = browser.all("tbody tr[data-instance]")
    assert len(first) == 25
    assert first[0].get_attribute("data-instance") == "paged-29"
    browser.screenshot("instances")

    # THEN the next page holds the older ones, and Newer comes back
    browser.find(".pager button:last-child").click()
    browser.find('tr[data-instance="paged-00"]')
    assert "paged-29" not in {r.get_attribute("data-instance") for r in browser.all("tbody tr")}
    browser.find(".pager button:first-child").click()
    browser.find('tr[data-instance="paged-29"]')

    # WHEN filtered on complete: none of them is
    browser.find("#status-filter").send_keys("complete")
    browser.wait(lambda: not browser.all('tr[data-instance^="paged-"]'), why="the filter")

    # WHEN an id is searched: its page opens; an unknown id shows the API's 404 message
    search = browser.find("#id-search")
    search.send_keys("no-such-instance", Keys.ENTER)
    browser.expect_failure("/instances/no-such-instance")
    assert "no-such-instance" in browser.text(".problem .api-error")
    search.clear()
    search.send_keys("paged-07", Keys.ENTER)
    browser.wait_text("h1", "paged-07")


def test_a_waiting_instance_shows_its_steps_and_completes_on_the_event_sent_from_the_form(
    browser: Browser, dev: DevApi
) -> None:
    # GIVEN a subscription waiting for its "approved" event (its 3-hour sleep skipped)
    dev.create("subscription", "sub-approve", {"customer_id": "c-42"})
    dev.wait_status("subscription", "sub-approve", "waiting")
    waits = dev.wait_status("subscription", "sub-approve", "waiting")["steps"]
    assert [s["type"] for s in waits][-1:] == ["waitForEvent"] or len(waits) < 3

    # WHEN its page opens
    browser.open("#/workflows/subscription/instances/sub-approve")
    browser.wait(lambda: len(browser.all(ROWS)) == 3, why="three timeline rows")

    # THEN the timeline shows the charge, the sleep and the wait, with the awaited type
    assert row_cells(browser) == [
        ("charge c-42", "do", "complete"),
        ("cool down", "sleep", "complete"),
        ("approval", "waitForEvent", "waiting"),
    ]
    assert browser.text(ROWS + '[data-type="sleep"] .note').startswith("woke at ")
    assert browser.text(ROWS + '[data-type="waitForEvent"] .note') == 'awaits "approved"'
    assert 'waiting for an event of type "approved"' in browser.text(".facts .reason")
    assert len(browser.all(ROWS + " .c-track .bar")) == 3
    browser.find(ROWS + '[data-type="waitForEvent"] > summary').click()
    assert browser.text(ROWS + '[data-type="waitForEvent"] .event-type') == "approved"
    assert browser.find("#event-type").get_attribute("value") == "approved"  # filled in
    browser.screenshot("instance-waiting")

    # WHEN the event is sent from the form, and confirmed
    payload = browser.find("#event-payload")
    payload.clear()
    payload.send_keys('{"user": "ana"}')
    browser.find("#send-event").click()
    browser.confirm()

    # THEN the API accepts it, and the page (polling) shows the instance complete
    browser.wait_text(".result-slot .done", 'Event "approved" accepted')
    browser.wait_text(".facts .status", "complete")
    browser.wait_text(ROWS + '[data-type="waitForEvent"] .note', 'received "approved"')
    browser.wait_text(ROWS + '[data-type="waitForEvent"] .payload', '"user": "ana"')
    assert '"approved_by": "ana"' in browser.text(".data .output pre")
    assert dev.instance("subscription", "sub-approve")["output"]["approved_by"] == "ana"
    browser.screenshot("instance-complete")


def test_pause_and_resume_from_the_page_each_after_a_confirmation(
    browser: Browser, dev: DevApi
) -> None:
    # GIVEN a gate instance waiting for its event
    dev.create("gate", "gate-pause")
    dev.wait_status("gate", "gate-pause", "waiting")
    browser.open("#/workflows/gate/instances/gate-pause")
    browser.wait_text(".facts .status", "waiting")

    # WHEN Pause is clicked and the confirmation cancelled: nothing changes
    browser.find('button[data-action="pause"]').click()
    browser.find("dialog#confirm[open] #confirm-cancel").click()
    assert dev.instance("gate", "gate-pause")["status"] == "waiting"

    # WHEN Pause is clicked and confirmed: the instance is paused, and the page says so
    browser.find('button[data-action="pause"]').click()
    browser.confirm()
    browser.wait_text(".facts .status", "paused")
    assert dev.instance("gate", "gate-pause")["status"] == "paused"
    assert browser.find('button[data-action="pause"]').get_attribute("disabled") is not None
    browser.screenshot("instance-paused")

    # WHEN Resume is clicked and confirmed: it waits for its event again
    browser.find('button[data-action="resume"]').click()
    browser.confirm()
    browser.wait_text(".facts .status", "waiting")
    # the resumed instance replays and parks again: under load the API may still say queued
    # or running for a moment after the page's first "waiting"
    dev.wait_status("gate", "gate-pause", "waiting")


def test_a_refused_action_shows_the_apis_message_verbatim(browser: Browser, dev: DevApi) -> None:
    # GIVEN a waiting gate, and what the API says to an event type no type may have
    dev.create("gate", "gate-refused")
    dev.wait_status("gate", "gate-refused", "waiting")
    status, answer = dev.call("POST", "/workflows/gate/instances/gate-refused/events/no.dots", {})
    assert status == 400, answer
    browser.open("#/workflows/gate/instances/gate-refused")
    browser.wait_text(".facts .status", "waiting")

    # WHEN that type is sent from the form
    kind = browser.find("#event-type")
    kind.clear()
    kind.send_keys("no.dots")
    browser.find("#send-event").click()
    browser.expect_failure("/events/no.dots")
    browser.confirm()

    # THEN the page shows the API's message, word for word, and the instance still waits
    assert browser.text(".result-slot .api-error") == answer["error"]["message"]
    assert browser.text(".result-slot .problem-code") == f"400 {answer['error']['code']}"

    # WHEN the payload is not JSON: the page says so and sends nothing
    payload = browser.find("#event-payload")
    payload.clear()
    payload.send_keys("{not json")
    browser.find("#send-event").click()
    assert "not JSON" in browser.text(".result-slot .api-error")
    assert not browser.all("dialog#confirm[open]")
    assert dev.instance("gate", "gate-refused")["status"] == "waiting"


def test_failed_attempts_show_their_errors_and_tracebacks(browser: Browser, dev: DevApi) -> None:
    # GIVEN a fetch that failed twice before it succeeded
    dev.create("flaky-fetch", "flaky-shown")
    dev.wait_status("flaky-fetch", "flaky-shown", "complete")
    browser.open("#/workflows/flaky-fetch/instances/flaky-shown")
    row = ROWS + '[data-type="do"]'
    browser.wait_text(row + " .c-attempts", "3 (2 failed)")

    # THEN its bar has one segment per attempt, two of them failed, with the retry delays
    assert len(browser.all(row + " .bar.fail")) == 2
    assert len(browser.all(row + " .bar.ok")) == 1
    assert len(browser.all(row + " .gap")) == 2

    # WHEN the row is opened from the keyboard
    browser.find(row + " > summary")
    browser.script("document.querySelector(arguments[0]).focus()", row + " > summary")
    browser.driver.switch_to.active_element.send_keys(Keys.ENTER)

    # THEN each failed attempt shows its error, and its traceback in a disclosure
    failures = browser.wait(lambda: browser.all(row + " .attempt.fail"), why="failed attempts")
    assert "ConnectionError: upstream unavailable (attempt 1)" in failures[0].text
    assert len(browser.all(row + " .retry-delay")) == 2
    browser.find(row + " .attempt.fail details.traceback > summary").click()
    traceback = browser.text(row + " .attempt.fail details.traceback pre")
    assert "Traceback (most recent call last)" in traceback
    assert "ConnectionError: upstream unavailable (attempt 1)" in traceback
    browser.screenshot("instance-retries")


def test_a_thousand_step_instance_draws_every_row(browser: Browser, dev: DevApi) -> None:
    # GIVEN an instance of 1,000 steps (the embedded AWS records them one by one: slow)
    dev.create("many-steps", "many-drawn")
    dev.wait_status("many-steps", "many-drawn", "complete", timeout=600)

    # WHEN its page opens
    browser.open("#/workflows/many-steps/instances/many-drawn")
    browser.find(f'.timeline[data-rows="{MANY_STEPS}"]', timeout=60)

    # THEN every step has its row and its bar, in run order, and the axis has its ticks
    assert len(browser.all(ROWS)) == MANY_STEPS
    assert len(browser.all(ROWS + " .c-track .bar")) == MANY_STEPS
    names = browser.script(
        "return [...document.querySelectorAll(arguments[0] + ' .name')].map(n => n.textContent)",
        ROWS,
    )
    assert names == [f"step {n:04d}" for n in range(MANY_STEPS)]
    assert browser.all(".axis .tick")
    browser.screenshot("instance-1000-steps")

    # WHEN the last row is reached from the keyboard (End on a row)
    browser.script("document.querySelector(arguments[0]).focus()", ROWS + " > summary")
    browser.driver.switch_to.active_element.send_keys(Keys.END)
    focused = browser.script("return document.activeElement.parentElement.dataset.index")
    assert focused == str(MANY_STEPS - 1)


def test_a_long_instance_shows_its_first_page_and_the_count_then_loads_the_rest(
    browser: Browser, dev: DevApi
) -> None:
    # GIVEN an instance whose 70 rows do not fit one answer of the API (each failed attempt
    # says 8,000 characters: its answer carries a first page, the count and a cursor)
    dev.create("loud-steps", "loud-paged", {"steps": 70})
    answer = dev.wait_status("loud-steps", "loud-paged", "complete", timeout=300)
    first = len(answer["steps"])
    assert answer["steps_total"] == 70 and 1 < first < 70

    # WHEN its page opens
    browser.open("#/workflows/loud-steps/instances/loud-paged")
    browser.find(f'.timeline[data-rows="{first}"]', timeout=60)

    # THEN it draws the first page and says how many rows there are in all
    assert browser.text("#steps-title") == f"Steps ({first} of 70)"
    more = browser.find(".steps-more .load-more")
    assert more.text == "Load more steps"

    # WHEN "Load more steps" is clicked until every row is there
    while browser.all(".steps-more .load-more:not([hidden])"):
        shown = len(browser.all(ROWS))
        browser.find(".steps-more .load-more").click()
        browser.wait(lambda n=shown: len(browser.all(ROWS)) > n, why="the next page's rows")

    # THEN every row is drawn once, in run order, and the count is whole
    names = browser.script(
        "return [...document.querySelectorAll(arguments[0] + ' .name')].map(n => n.textContent)",
        ROWS,
    )
    assert names == [f"loud {n}" for n in range(70)]
    assert browser.text("#steps-title") == "Steps (70)"
    assert browser.script("return document.querySelector('.steps-more .load-more').hidden")
    browser.screenshot("instance-paged-steps")


def test_readable_at_phone_width_and_in_dark_mode(browser: Browser, dev: DevApi) -> None:
    # GIVEN a waiting instance
    dev.create("subscription", "sub-phone", {"customer_id": "c-7"})
    dev.wait_status("subscription", "sub-phone", "waiting")

    # WHEN it is opened on a phone-sized window
    browser.resize(PHONE)
    browser.open("#/workflows/subscription/instances/sub-phone")
    browser.wait(lambda: len(browser.all(ROWS)) == 3, why="three timeline rows")

    # THEN nothing overflows sideways, and each row still shows its name, status and bar
    overflow = browser.script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0
    assert browser.find(ROWS + " .c-track").size["width"] > 200
    browser.screenshot("instance-phone")

    # WHEN the system asks for dark colours: the page follows
    browser.color_scheme("dark")
    background = browser.script("return getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(c) for c in background[background.index("(") + 1 : -1].split(",")[:3])
    assert red + green + blue < 3 * 64, background
    browser.screenshot("instance-phone-dark")


def test_the_instance_page_does_not_shift_when_its_data_arrives(
    browser: Browser, dev: DevApi
) -> None:
    # GIVEN a waiting instance
    dev.create("gate", "gate-still")
    dev.wait_status("gate", "gate-still", "waiting")

    # WHEN its page loads and draws
    browser.open("#/workflows/gate/instances/gate-still")
    browser.wait(lambda: len(browser.all(ROWS)) == 2, why="two timeline rows")

    # THEN the layout shifts Chromium measured while it loaded add up to (almost) nothing
    score = browser.driver.execute_async_script(
        "const done = arguments[0]; let total = 0;"
        "new PerformanceObserver(list => { for (const e of list.getEntries()) total += e.value; })"
        ".observe({type: 'layout-shift', buffered: true});"
        "setTimeout(() => done(total), 300);"
    )
    assert score < 0.05, score


# The page's poller (poll.js) with the browser's timers recorded instead of run, and
# document.hidden under the test's control: the delays it asks for are its backoff.
_POLLING = """
const [failing, done] = arguments;  // the callback comes last
(async () => {
  const { poller } = await import('/dashboard/poll.js');
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
  let hidden = false;
  Object.defineProperty(document, 'hidden', { configurable: true, get: () => hidden });
  const delays = [];
  let next = null;
  const realSetTimeout = window.setTimeout;
  window.setTimeout = (fn, ms) => {
    if (!ms) return realSetTimeout(fn, 0);
    delays.push(ms);
    next = fn;
    return 1;
  };
  window.clearTimeout = () => { next = null; };
  let loads = 0;
  const polling = poller(async () => {
    loads += 1;
    if (failing) throw new Error('down');
    return true;
  });
  polling.now();
  await settle();
  hidden = !failing;
  for (let i = 0; i < 6; i++) { const fire = next; next = null; fire(); await settle(); }
  const before = loads;
  hidden = false;
  document.dispatchEvent(new Event('visibilitychange'));
  await settle();
  polling.stop();
  window.setTimeout = realSetTimeout;
  delete document.hidden;
  done({ delays, loads, loadedOnShow: loads - before });
})();
"""


def test_polling_backs_off_while_the_tab_is_hidden_and_reloads_when_it_shows(
    browser: Browser,
) -> None:
    # GIVEN the dashboard's poller, on a live page
    browser.open("#/")
    browser.find("li.card")

    # WHEN the tab is hidden for six polls, then shown again
    result = browser.driver.execute_async_script(_POLLING, False)

    # THEN it polls every 2 s while visible, doubles the wait while hidden up to a minute,
    # and loads at once when the tab shows, back to every 2 s
    assert result["delays"] == [2000, 4000, 8000, 16000, 32000, 60000, 60000, 2000]
    assert result["loadedOnShow"] == 1


def test_polling_backs_off_while_the_api_fails(browser: Browser) -> None:
    # GIVEN the dashboard's poller, whose loads fail (the server is down)
    browser.open("#/")
    browser.find("li.card")

    # WHEN it keeps polling, the tab visible
    result = browser.driver.execute_async_script(_POLLING, True)

    # THEN each failure doubles the wait, up to 30 s
    assert result["delays"][:7] == [4000, 8000, 16000, 30000, 30000, 30000, 30000]


def test_a_rolled_back_instance_shows_its_rollback_row_and_how_it_went(
    browser: Browser, dev: DevApi
) -> None:
    # GIVEN an instance whose credit failed for good after its debit, refunded by a rollback
    dev.create("refunded", "refund-1")
    answer = dev.wait_status("refunded", "refund-1", "errored")
    assert answer["rollback"]["status"] == "complete", answer

    # WHEN its page opens
    browser.open("#/workflows/refunded/instances/refund-1")
    browser.wait(lambda: len(browser.all(ROWS)) == 3, why="three timeline rows")

    # THEN the rollback is a row of its own, and the instance says how the rollbacks went
    assert ("debit", "rollback", "complete") in row_cells(browser)
    assert browser.text(ROWS + '[data-type="rollback"] .note') == 'rolled back "debit"'
    assert browser.find(ROWS + '[data-type="rollback"] .bar')
    assert "NonRetryableError: the receiving account is closed" in browser.text(".facts .reason")
    rollback = browser.text(".data .rollback")
    assert "complete; the instance ends errored" in rollback
    browser.screenshot("instance-rolled-back")


def test_a_workflows_diagram_is_drawn_from_its_source(browser: Browser) -> None:
    # WHEN the diagram of the fulfilment workflow is opened from its card
    browser.open("#/")
    browser.find('[data-workflow="fulfilment"] a.card-link').click()
    browser.find("svg.diagram")

    # THEN every step of its run() is a box, in source order, with what it waits for
    steps = browser.script(
        "return [...document.querySelectorAll('svg.diagram g.d-step')].map(g => "
        "[g.dataset.method, g.dataset.step])"
    )
    assert steps == [
        ["do", "load order"],
        ["do", "book courier"],
        ["sleep", "wait for the van"],
        ["do", "reserve {item}"],
        ["do", "email customer"],
        ["do", "print label"],
        ["do", "charge card"],
        ["do", "cancel order"],
        ["wait_for_event", "delivered"],
    ]
    box = 'svg.diagram g.d-step[data-step="{}"] .d-detail'
    assert browser.text(box.format("delivered")).startswith('wait for event · type "delivered"')
    assert browser.text(box.format("wait for the van")) == "sleep · 1 hour"
    assert "↩ self.release" in browser.text(box.format("reserve {item}"))
    # AND the branch, the loop, the gather and the try hold the steps they hold
    shapes = browser.script(
        "return [...document.querySelectorAll('svg.diagram [data-kind]')].map(g => [g.dataset.kind,"
        " [...g.querySelectorAll('g.d-step')].map(s => s.dataset.step)])"
    )
    assert shapes == [
        ["branch", ["book courier", "wait for the van"]],
        ["loop", ["reserve {item}"]],
        ["parallel", ["email customer", "print label"]],
        ["try", ["charge card", "cancel order"]],
    ]
    paths = browser.script(
        "return [...document.querySelectorAll('svg.diagram g.d-path')].map(p => p.dataset.path)"
    )
    assert paths == ["if order['express']", "else", "", "", "try", "except StepFailedError"]
    assert "FulfilmentWorkflow in tests.browser.workflows" in browser.text(".diagram-about")
    # AND it fits its frame: nothing drawn outside the picture
    inside = browser.script(
        "const svg = document.querySelector('svg.diagram'); const box = svg.getBBox();"
        "return box.x >= 0 && box.y >= 0 && box.x + box.width <= svg.width.baseVal.value"
        " && box.y + box.height <= svg.height.baseVal.value"
    )
    assert inside
    browser.screenshot("diagram")

    # WHEN its outline is opened: the same steps, as a list for reading
    browser.find(".diagram-outline summary").click()
    assert "load order do · retries 3 × 1 second, timeout 30 seconds" in browser.text(
        ".diagram-outline"
    )
