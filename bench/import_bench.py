"""Cold start: each Lambda handler's import time against a bare ``import boto3``.

A cold Lambda pays its handler module's imports before the first request. Each handler is
imported in a fresh interpreter with ``python -X importtime -c "import boto3; import <handler>"``:
the cumulative time of the ``boto3`` line is bare boto3, the handler's line what it adds on
top; their sum over boto3's is the ratio a fresh ``import <handler>`` has to a fresh
``import boto3``, measured in one process so that a busy machine slows both alike. Median of
``RUNS``. Target: at most 1.5.

Two columns: as this interpreter runs (with ``PYTHONDONTWRITEBYTECODE=1`` no ``.pyc`` is ever
written for the project's own modules, so each import compiles their source, as a Lambda
package shipped without bytecode does; boto3 comes with its bytecode), and with bytecode for
everything (a throwaway ``PYTHONPYCACHEPREFIX``, filled by a first import): what a function
deployed with ``make build`` pays, as its artifact ships the bytecode of every module.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile

HANDLERS = (
    "workflows.entrypoints.runner",
    "workflows.entrypoints.api",
    "workflows.entrypoints.trigger",
    "workflows.entrypoints.sweep",
)
BASELINE = "boto3"
TARGET = 1.5
RUNS = 7


def cumulative(module: str, env: dict[str, str]) -> tuple[float, float]:
    """(seconds of ``import boto3``, seconds ``import module`` adds) in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {BASELINE}; import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    found: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, total, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        if name in (BASELINE, module):
            found[name] = int(total) / 1e6
    return found[BASELINE], found[module]


def ratio(module: str, env: dict[str, str], runs: int = RUNS) -> tuple[float, float, float]:
    """(median boto3 seconds, median seconds the handler adds, median ratio)."""
    samples = [cumulative(module, env) for _ in range(runs)]
    base = statistics.median(b for b, _ in samples)
    extra = statistics.median(e for _, e in samples)
    return base, extra, statistics.median((b + e) / b for b, e in samples)


def main() -> None:
    print(f"import time in a fresh interpreter, median of {RUNS} (target ≤ {TARGET}× boto3)")
    print(f"{'':>31} {'boto3':>8} {'+ handler':>10} {'ratio':>6}  {'with bytecode':>13}")
    with tempfile.TemporaryDirectory() as cache:
        compiled = {**os.environ, "PYTHONPYCACHEPREFIX": cache}
        compiled.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([sys.executable, "-c", f"import {BASELINE}, {', '.join(HANDLERS)}"],
                       env=compiled, check=True)  # fmt: skip
        for module in HANDLERS:
            base, extra, as_run = ratio(module, dict(os.environ))
            with_bytecode = ratio(module, compiled)[2]
            verdict = ", ".join(
                f"{'ok' if r <= TARGET else 'over'} {how}"
                for r, how in ((as_run, "as run"), (with_bytecode, "with bytecode"))
            )
            print(
                f"{module:>31} {base * 1000:>5.0f} ms {extra * 1000:>7.0f} ms {as_run:>5.2f}×"
                f"  {with_bytecode:>12.2f}×  {verdict}"
            )


if __name__ == "__main__":
    main()
