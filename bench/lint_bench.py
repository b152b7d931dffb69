"""Benchmark of ``lambda-workflows lint``: 1,000 generated workflow files, ~60 lines each.

Run with ``python -m bench.lint_bench`` (or ``python bench/lint_bench.py``). The files mix
good and bad patterns (steps, gathers, races, KV and HTTP calls, loops) so that every check
has work to do; the figure printed is the wall time of one ``lint_paths`` over all of them.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "handler"))

from lambda_workflows.lint import lint_paths
from lambda_workflows.lint.parallel import default_jobs

FILES = 1_000
TARGET_SECONDS = 2.0

HEADER = '''"""Generated workflow {n}."""

import asyncio
import random
import time

import boto3
import requests

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep

TABLE = boto3.resource("dynamodb").Table("orders-{n}")


def pick(items):
    return items[random.randrange(len(items))]


class Workflow{n}(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep):
        order = event.payload["order_id"]
        results = []
'''

BLOCKS = [
    """
        config = await step.do("load config {i}", lambda: self.env.KV.get("config-{i}"))
        if config.get("enabled"):
            results.append(await step.do("enabled {i}", lambda: "yes"))
""",
    """
        async def fetch_{i}():
            response = requests.get("https://api.example.com/orders/{i}")
            return response.json()

        data_{i} = await step.do("fetch order {i}", fetch_{i})
""",
    """
        a_{i}, b_{i} = await asyncio.gather(
            step.do("first {i}", lambda: self.env.KV.get("a")),
            step.do("second {i}", lambda: self.env.KV.get("b")),
        )
""",
    """
        stamp_{i} = time.time()
        await step.do(f"stamp {{stamp_{i}}}", lambda: stamp_{i})
""",
    """
        for item in await step.do("list items {i}", lambda: self.env.KV.get("items")):
            await step.do(f"handle {{item}} {i}", lambda: len(results))
""",
    """
        def store_{i}():
            value = self.env.KV.get("key-{i}")
            results.append(value)
            TABLE.put_item(Item={{"id": order, "value": value}})

        await step.do("store {i}", store_{i})
""",
    """
        await step.sleep("nap {i}", "1 hour")
        pending_{i} = step.do("forgotten {i}", lambda: pick([1, 2, 3]))
""",
    """
        if random.random() > 0.5:
            await step.do("coin {i}", lambda: "heads")
""",
]

FOOTER = """
        return {"order": order, "results": results}
"""


def generate(directory: Path, count: int = FILES, seed: int = 7) -> list[Path]:
    """Write ``count`` workflow files of about 60 lines into ``directory``."""
    chooser = random.Random(seed)
    paths = []
    for n in range(count):
        body = [HEADER.format(n=n)]
        lines = body[0].count("\n")
        i = 0
        while lines < 58:
            block = chooser.choice(BLOCKS).format(i=i)
            body.append(block)
            lines += block.count("\n")
            i += 1
        body.append(FOOTER)
        path = directory / f"workflow_{n:04d}.py"
        path.write_text("".join(body))
        paths.append(path)
    return paths


def _timed(directory: Path, jobs: int | None) -> tuple[float, int]:
    started = time.perf_counter()
    findings = lint_paths([directory], jobs=jobs)
    return time.perf_counter() - started, len(findings)


def main() -> float:
    """Generate the files, lint them, print and return the elapsed seconds.

    The figure is one ``lint_paths`` call with its default worker processes (one per CPU);
    the serial time (``jobs=1``) is printed too, for comparison.
    """
    with tempfile.TemporaryDirectory(prefix="lint-bench-") as tmp:
        directory = Path(tmp)
        paths = generate(directory)
        lines = sum(p.read_text().count("\n") for p in paths)
        workers = default_jobs(len(paths))
        elapsed, found = _timed(directory, None)
        serial, _ = _timed(directory, 1)
    verdict = "OK" if elapsed < TARGET_SECONDS else "SLOW"
    print(
        f"lint_paths: {len(paths)} files, {lines:,} lines, {found:,} findings in "
        f"{elapsed:.2f} s with {workers} process(es) ({elapsed / len(paths) * 1000:.2f} ms/file; "
        f"serial {serial:.2f} s) — target < {TARGET_SECONDS:.0f} s: {verdict}"
    )
    return elapsed


if __name__ == "__main__":
    main()
