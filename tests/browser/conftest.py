"""The browser tests' fixtures: one `lambda-workflows dev` (in-process, port 0) with the bundled
examples and this folder's workflows, one headless Chromium, and a console check after each
test."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")

from lambda_workflows.examples import EXAMPLES
from lambda_workflows.examples._fakes import example_env
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.registry import load_workflows
from tests.local.devserver import call, serving

from .browser import MISSING, Browser, chromium_paths, in_ci
from .workflows import BROWSER_WORKFLOWS


@dataclass
class DevApi:
    """The running `lambda-workflows dev`: its URL, and its API called from the test."""

    url: str

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return call(self.url, method, path, body, timeout=60)

    def create(self, workflow: str, instance_id: str, params: Any = None) -> None:
        body = {"instance_id": instance_id, **({"params": params} if params is not None else {})}
        status, answer = self.call("POST", f"/workflows/{workflow}/instances", body)
        assert status == 201, answer

    def instance(self, workflow: str, instance_id: str) -> dict[str, Any]:
        status, answer = self.call("GET", f"/workflows/{workflow}/instances/{instance_id}")
        assert status == 200, answer
        assert isinstance(answer, dict)
        return answer

    def wait_status(
        self, workflow: str, instance_id: str, wanted: str, timeout: float = 60.0
    ) -> dict[str, Any]:
        """Poll the instance until its status is ``wanted``."""
        deadline = time.monotonic() + timeout
        while True:
            answer = self.instance(workflow, instance_id)
            if answer["status"] == wanted:
                return answer
            assert time.monotonic() < deadline, f"{instance_id} is {answer['status']}, not {wanted}"
            time.sleep(0.2)


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    paths = chromium_paths()
    if paths is None:
        if in_ci():
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    return paths


# Module-scoped, not session-scoped: a dev server left running holds moto's in-process mock open
# (every later test would share its AWS state) and the page's polling would keep calling the
# API resolver from other threads while later tests use it.
@pytest.fixture(scope="module")
def dev() -> Iterator[DevApi]:
    workflows = {**load_workflows(EXAMPLES), **BROWSER_WORKFLOWS}
    runtime = LocalRuntime(workflows, env_values=example_env(), out=lambda line: None)
    with serving(runtime) as running:
        yield DevApi(running.url)


@pytest.fixture(scope="module")
def session_browser(chromium: tuple[str, str], dev: DevApi) -> Iterator[Browser]:
    browser = Browser.start(dev.url, chromium)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture
def browser(session_browser: Browser) -> Iterator[Browser]:
    """The browser at 1280×800 in light mode; after the test, its console must hold no error."""
    session_browser.resize((1280, 800))
    session_browser.color_scheme("light")
    session_browser.console_errors()  # start clean
    yield session_browser
    errors = session_browser.console_errors()
    session_browser.driver.get("about:blank")  # no page polls the dev server between tests
    assert not errors, "console errors:\n" + "\n".join(errors)
