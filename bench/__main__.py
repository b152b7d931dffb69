"""`make bench`: every benchmark, one after the other."""

from __future__ import annotations

import importlib

BENCHMARKS = ["bench.engine_bench", "bench.lint_bench", "bench.dynamodb_bench"]

for name in BENCHMARKS:
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            continue  # not written yet
        raise
    print(f"\n== {name} ==")
    module.main()
