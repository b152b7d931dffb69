"""Cold start: each Lambda handler's import time against a bare ``import boto3``.

A cold Lambda pays its handler module's imports before the first request. Each handler is
imported in a fresh interpreter right after ``import boto3``, timing both: their sum over
boto3's is the ratio a fresh ``import <handler>`` has to a fresh ``import boto3``, measured in
one process so that a busy machine slows both alike. Median of ``RUNS``. Target: at most 1.5.

The clock is the process's CPU time (``time.process_time``): on a loaded machine the wall
clock also counts the time the process waits for a core, which lands on whichever import was
running and swamps the ratio (a Lambda's cold start has its core to itself, where the two
agree). ``--wall`` times with the wall clock instead (``python -X importtime`` does too).

The handlers are imported from a copy of ``handler/`` (first on ``PYTHONPATH``), so that what
this checkout holds in its ``__pycache__`` does not count. Two columns, boto3 always with the
bytecode pip compiled when it installed it:

- *source*: the copy holds no ``.pyc`` and none is written (``PYTHONDONTWRITEBYTECODE=1``), so
  each import compiles the project's modules from source: what a function whose artifact ships
  no bytecode pays on every cold start (a Lambda's file system is read-only);
- *bytecode*: the copy is compiled first, as ``make build`` compiles an artifact and ``make
  install`` this checkout (pip compiles what it installs, but not an editable install): what a
  function deployed with ``make build`` pays, and a fresh ``python`` here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HANDLERS = (
    "lambda_workflows.entrypoints.runner",
    "lambda_workflows.entrypoints.api",
    "lambda_workflows.entrypoints.trigger",
    "lambda_workflows.entrypoints.sweep",
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
    print(f"{'':>38} {'boto3':>8} {'+ handler':>10} {'source':>6}  {'with bytecode':>13}")
    with tempfile.TemporaryDirectory() as source, tempfile.TemporaryDirectory() as compiled:
        plain, built = env_importing(Path(source)), env_importing(Path(compiled))
        subprocess.run([sys.executable, "-m", "compileall", "-q", compiled], check=True)
        for module in HANDLERS:
            base, extra, from_source = ratio(module, plain, clock)
            with_bytecode = ratio(module, built, clock)[2]
            verdict = ", ".join(
                f"{'ok' if r <= TARGET else 'over'} {how}"
                for r, how in ((from_source, "from source"), (with_bytecode, "with bytecode"))
            )
            print(
                f"{module:>38} {base * 1000:>5.0f} ms {extra * 1000:>7.0f} ms {from_source:>5.2f}×"
                f"  {with_bytecode:>12.2f}×  {verdict}"
            )


def env_importing(copy: Path) -> dict[str, str]:
    """An environment whose ``import lambda_workflows`` loads a copy of ``handler/`` made in
    ``copy`` (without its ``__pycache__``), and that writes no bytecode."""
    handler = Path(__file__).resolve().parents[1] / "handler"
    shutil.copytree(handler, copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPYCACHEPREFIX", None)
    probe = "import lambda_workflows; print(lambda_workflows.__file__)"
    found = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert found.stdout.startswith(str(copy)), (
        f"lambda_workflows not imported from the copy: {found}"
    )
    return env


if __name__ == "__main__":
    main()
