"""Benchmark of the dashboard: the instance page of a 1,000-step instance, in headless Chromium.

Run with ``python -m bench.dashboard_bench``. It starts ``lambda-workflows dev`` in-process, runs
one instance of 1,000 steps (the slow part: the embedded AWS records each step in turn), then
loads its page 5 times and reads the browser's own clock (Performance API): when the page's
modules had loaded, when the API's answer arrived, and when the full timeline had been drawn
and painted (the page marks ``workflows:timeline-painted`` one frame after drawing it). The
target, under 1 s, is for the page's own work: from the API's answer to the painted timeline.
The driver and the workflow are the browser tests' (tests/browser).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for `python bench/...`

from tests.browser.browser import MISSING, Browser, chromium_paths
from tests.browser.workflows import MANY_STEPS, ManyStepsWorkflow

from lambda_workflows.dev_server import make_server
from lambda_workflows.local.runtime import LocalRuntime

LOADS = 5
TARGET_SECONDS = 1.0
_TIMES = """
const painted = performance.getEntriesByName('workflows:timeline-painted')[0];
if (!painted) return null;
const api = performance.getEntriesByType('resource').find(e => e.name.includes(arguments[0]));
const page = performance.getEntriesByType('navigation')[0];
return {page: page.domContentLoadedEventEnd, api: api.responseEnd, painted: painted.startTime,
        rows: document.querySelectorAll('.tl-rows > details.step').length};
"""


def _run_instance(url: str, instance_id: str) -> float:
    started = time.perf_counter()
    request = urllib.request.Request(
        f"{url}/workflows/many-steps/instances",
        data=f'{{"instance_id": "{instance_id}"}}'.encode(),
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(request).close()
    status = f"{url}/workflows/many-steps/instances/{instance_id}"
    while json.loads(urllib.request.urlopen(status).read())["status"] != "complete":
        time.sleep(0.5)
    return time.perf_counter() - started


def _load(browser: Browser, instance_id: str) -> dict[str, Any]:
    browser.open(f"#/workflows/many-steps/instances/{instance_id}")
    times: dict[str, Any] = browser.wait(
        lambda: browser.script(_TIMES, f"/instances/{instance_id}"), timeout=120
    )
    assert times["rows"] == MANY_STEPS, times
    return times


def main() -> None:
    """Print the median times of the page, the API's answer, and the drawing."""
    paths = chromium_paths()
    if paths is None:
        print(f"dashboard: skipped — {MISSING}")
        return
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows")
    runtime = LocalRuntime({"many-steps": ManyStepsWorkflow}, out=lambda line: None)
    server = make_server(runtime, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    runtime.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    browser = None
    try:
        setup = _run_instance(url, "bench-1000")
        browser = Browser.start(url, paths)
        runs = [_load(browser, "bench-1000") for _ in range(LOADS)]
    finally:
        if browser is not None:
            browser.quit()
        server.shutdown()
        server.server_close()
        runtime.close()
    page = statistics.median(r["page"] for r in runs) / 1000
    api = statistics.median(r["api"] for r in runs) / 1000
    drawn = statistics.median(r["painted"] for r in runs) / 1000
    draw = statistics.median(r["painted"] - r["api"] for r in runs) / 1000
    verdict = "OK" if draw < TARGET_SECONDS else "SLOW"
    print(
        f"dashboard: instance page of {MANY_STEPS:,} steps drawn {draw:.2f} s after the API's "
        f"answer — target < {TARGET_SECONDS:.0f} s: {verdict} (median of {LOADS} loads: page "
        f"ready {page:.2f} s, API answered {api:.2f} s, fully drawn {drawn:.2f} s after "
        f"navigation; running the instance took {setup:.0f} s)"
    )


if __name__ == "__main__":
    main()
