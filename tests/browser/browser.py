"""Headless Chromium driven by Selenium, for the dashboard's tests and its benchmark.

Why Selenium with Debian's ``chromium-driver`` rather than Playwright: Debian builds
``chromium`` and ``chromium-driver`` from one source package, so the driver always speaks the
browser's protocol version — no download, no version drift, and ``apt-get`` is all CI needs.
Playwright supports only the browser builds it downloads itself (which this machine and CI cannot
fetch); pointed at another Chromium with ``executable_path`` it works on a best-effort basis
and breaks when the two drift apart. Selenium is pure Python and needs nothing else.

Console messages are read through the driver's browser log (``goog:loggingPrefs``): every
SEVERE entry — a JavaScript error, a failed request, a ``console.error`` — is a test failure
unless the test expected that very request to fail.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WIDE = (1280, 800)
PHONE = (390, 844)
T = TypeVar("T")


def chromium_paths() -> tuple[str, str] | None:
    """Debian's chromium and chromedriver, or None when either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


MISSING = (
    "the browser tests need Debian's chromium and chromium-driver: `make browser` installs them "
    "as root (apt-get install -y chromium chromium-driver)"
)


@dataclass
class Browser:
    """One headless Chromium window on the dashboard of a running ``lambda-workflows dev``."""

    driver: webdriver.Chrome
    base_url: str
    expected_failures: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, base_url: str, paths: tuple[str, str]) -> Browser:
        options = webdriver.ChromeOptions()
        options.binary_location = paths[0]
        for argument in (
            "--headless=new",
            "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--lang=en-US",
            f"--window-size={WIDE[0]},{WIDE[1]}",
        ):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(executable_path=paths[1]), options=options)
        driver.set_window_size(*WIDE)
        return cls(driver, base_url.rstrip("/"))

    def quit(self) -> None:
        self.driver.quit()

    # --- pages and elements ---------------------------------------------------------------

    def open(self, fragment: str = "#/") -> None:
        """Load the dashboard at ``fragment`` (a fresh page load, not a hash change)."""
        self.driver.get("about:blank")  # else a URL differing by its hash only is no load
        self.driver.get(f"{self.base_url}/{fragment}")

    def wait(self, what: Callable[[], T | None], timeout: float = 20.0, why: str = "") -> T:
        """Poll ``what`` until it returns something truthy; fail with ``why`` otherwise."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                value = what()
                if value:
                    return value
            except (StaleElementReferenceException, WebDriverException) as exc:
                last = exc
            time.sleep(0.1)
        raise AssertionError(f"waited {timeout:g} s for {why or what}; last error: {last}")

    def find(self, css: str, timeout: float = 20.0) -> WebElement:
        """The first element matching ``css``, once it exists and is shown."""

        def shown() -> WebElement | None:
            found = self.driver.find_elements(By.CSS_SELECTOR, css)
            return found[0] if found and found[0].is_displayed() else None

        return self.wait(shown, timeout, why=f"an element {css!r}")

    def all(self, css: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css: str) -> str:
        return self.find(css).text

    def wait_text(self, css: str, wanted: str, timeout: float = 20.0) -> None:
        """Wait until the element's text contains ``wanted``."""

        def has() -> bool:
            found = self.driver.find_elements(By.CSS_SELECTOR, css)
            return bool(found) and wanted in found[0].text

        self.wait(has, timeout, why=f"{css!r} to show {wanted!r}")

    def script(self, source: str, *args: Any) -> Any:
        return self.driver.execute_script(source, *args)

    def confirm(self) -> None:
        """Answer the confirmation dialog with its Confirm button."""
        self.find("dialog#confirm[open] #confirm-ok").click()
        self.wait(lambda: not self.all("dialog#confirm[open]"), why="the dialog to close")

    def screenshot(self, name: str) -> Path:
        """Save the window as test-artifacts/<name>.png (git-ignored)."""
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def resize(self, size: tuple[int, int]) -> None:
        self.driver.set_window_size(*size)

    def color_scheme(self, scheme: str) -> None:
        """Emulate ``prefers-color-scheme`` (``light`` or ``dark``)."""
        feature = {"name": "prefers-color-scheme", "value": scheme}
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [feature]})

    # --- the console ----------------------------------------------------------------------

    def expect_failure(self, url_part: str) -> None:
        """A request whose URL contains ``url_part`` is expected to fail (a 4xx the test
        provokes): its console line is not an error of the page."""
        self.expected_failures.append(url_part)

    def console_errors(self) -> list[str]:
        """Every SEVERE console line since the last call, less the expected failed requests."""
        entries: Iterable[dict[str, Any]] = self.driver.get_log("browser")
        errors = []
        for entry in entries:
            if entry.get("level") != "SEVERE":
                continue
            message = str(entry.get("message", ""))
            network = entry.get("source") == "network"
            if network and any(part in message for part in self.expected_failures):
                continue
            errors.append(json.dumps(entry))
        self.expected_failures.clear()
        return errors


def in_ci() -> bool:
    """CI must run the browser tests: a missing browser there is a failure, not a skip."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")
