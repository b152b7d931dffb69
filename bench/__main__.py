"""`make bench`: every benchmark, each in a fresh process so none skews another."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = [
    "bench.engine_bench",
    "bench.lint_bench",
    "bench.dynamodb_bench",
    "bench.heat_bench",
    "bench.listing_bench",
    "bench.latency_bench",
    "bench.import_bench",
    "bench.dashboard_bench",
    "bench.check_deploy_bench",
    "bench.cost_bench",
    "bench.lifecycle_bench",
]
ROOT = Path(__file__).resolve().parent.parent

failed = 0
for name in BENCHMARKS:
    print(f"\n== {name} ==", flush=True)
    failed |= subprocess.run([sys.executable, "-m", name], cwd=ROOT, check=False).returncode
sys.exit(1 if failed else 0)
