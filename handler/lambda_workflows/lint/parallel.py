"""Spreading files over worker processes, where that is safe and worth it.

Linting is CPU-bound pure Python, so threads would not help; processes do. Workers are forked
(cheap: they inherit the imported linter) and only from a process without other threads,
since forking a multi-threaded process can deadlock. Anywhere else the caller lints serially.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

MIN_ITEMS_PER_WORKER = 50
MAX_WORKERS = 8


def default_jobs(items: int) -> int:
    """How many processes are worth starting for ``items`` files (1 means serially)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cpus or 1, MAX_WORKERS, items // MIN_ITEMS_PER_WORKER))


def map_in_processes(
    function: Callable[[list[Item]], list[Result]], items: Sequence[Item], jobs: int
) -> list[Result] | None:
    """``function`` over chunks of ``items`` in ``jobs`` forked processes, results joined.

    ``function`` must be a module-level function. Returns ``None`` (the caller then runs
    serially) when forking is unavailable or unsafe here, or the pool breaks.
    """
    if (
        jobs < 2
        or "fork" not in multiprocessing.get_all_start_methods()
        or threading.active_count() > 1
    ):
        return None
    chunk_count = jobs * 4
    chunks = [list(items[start::chunk_count]) for start in range(chunk_count)]
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            return [result for chunk in pool.map(function, chunks) for result in chunk]
    except (OSError, BrokenProcessPool):
        return None
