"""Cold start: each Lambda handler's import time against a bare ``import boto3``.

A cold Lambda pays its handler module's imports before the first request. Each handler is
imported in a fresh interpreter right after ``import boto3``, timing both: their sum over
boto3's is the ratio a fresh ``import <handler>`` has to a fresh ``import boto3``, measured in
one process so that a busy machine slows both alike. Median of ``RUNS``. Target: at most 1.5.

The clock is the process's CPU time (``time.process_time``): on a loaded machine the wall
clock also counts the time the process waits for a core, which lands on whichever import was
running and swamps the ratio (a Lambda's cold start has its core to itself, where the two
agree). ``--wall`` times with the wall clock instead (``python -X importtime`` does too).

Two columns: as this interpreter runs (with ``PYTHONDONTWRITEBYTECODE=1`` no ``.pyc`` is ever
written for the project's own modules, so each import compiles their source, as a Lambda
package shipped without bytecode does; boto3 comes with its bytecode), and with bytecode for
everything (a throwaway ``PYTHONPYCACHEPREFIX``, filled by a first import): what a function
deployed with ``make build`` pays, as its artifact ships the bytecode of every module.
"""

from __future__ import annotations

import argparse
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


# Imports boto3, then the handler, and prints the seconds each took on ``clock``.
PROBE = """
import time
start = time.{clock}()
import {baseline}
middle = time.{clock}()
import {module}
print(middle - start, time.{clock}() - middle)
"""


def cumulative(module: str, env: dict[str, str], clock: str) -> tuple[float, float]:
    """(seconds of ``import boto3``, seconds ``import module`` adds) in a fresh interpreter,
    on ``clock`` (``process_time`` or ``perf_counter``)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(clock=clock, baseline=BASELINE, module=module)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    base, extra = (float(part) for part in done.stdout.split())
    return base, extra


def ratio(
    module: str, env: dict[str, str], clock: str = "process_time", runs: int = RUNS
) -> tuple[float, float, float]:
    """(median boto3 seconds, median seconds the handler adds, median ratio)."""
    samples = [cumulative(module, env, clock) for _ in range(runs)]
    base = statistics.median(b for b, _ in samples)
    extra = statistics.median(e for _, e in samples)
    return base, extra, statistics.median((b + e) / b for b, e in samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wall", action="store_true", help="time with the wall clock")
    clock = "perf_counter" if parser.parse_args().wall else "process_time"
    what = "wall-clock" if clock == "perf_counter" else "CPU"
    print(f"{what} import time in a fresh interpreter, median of {RUNS} (target ≤ {TARGET}×)")
    print(f"{'':>31} {'boto3':>8} {'+ handler':>10} {'ratio':>6}  {'with bytecode':>13}")
    with tempfile.TemporaryDirectory() as cache:
        compiled = {**os.environ, "PYTHONPYCACHEPREFIX": cache}
        compiled.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([sys.executable, "-c", f"import {BASELINE}, {', '.join(HANDLERS)}"],
                       env=compiled, check=True)  # fmt: skip
        for module in HANDLERS:
            base, extra, as_run = ratio(module, dict(os.environ), clock)
            with_bytecode = ratio(module, compiled, clock)[2]
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
