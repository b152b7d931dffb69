"""Journal writes in flight together: each one a conditional PutItem in a thread of its own.

Steps that finish together (an ``asyncio.gather``) await their journal writes together (see
:meth:`lambda_workflows.engine.replay.core.Replay.write`); :meth:`DynamoStore.record_async
<lambda_workflows.aws.dynamodb.DynamoStore.record_async>` runs each write in a bounded pool of
threads, so the event loop goes on while DynamoDB answers and a gather of 100 steps waits for a few
round trips instead of 100.

Why threads around boto3 rather than one batched call:

- ``BatchWriteItem`` takes no condition. A journal entry is recorded with
  ``attribute_not_exists`` and never overwritten: that condition is the exactly-once rule
  (the first writer wins and the loser continues with the winner's entry). A batch would
  overwrite what another runner recorded first.
- ``TransactWriteItems`` keeps conditions but is all-or-nothing: one key another runner
  recorded first cancels every other write of the batch, which then goes again; each item costs
  two write units instead of one; two runners' transactions on the same items fail each other
  (TransactionConflict); and the steps of a batch wait for the slowest of them to finish before
  any is recorded.
- A thread per write keeps every write exactly what it was (same request, same condition,
  same cost, the winner handed back on a lost race), and failures stay per entry: a throttled
  or ambiguous write stops the pass for that entry alone (an InfrastructureError, never a step
  failure), while the others land or fail on their own. boto3 clients are thread-safe; the
  client's connection pool is sized to the pool
  (:func:`lambda_workflows.aws.runtime.build_runtime`).

The pool is the process's (a Lambda process advances one instance at a time; the local
runtime's threads share it) and holds :data:`JOURNAL_WRITERS` threads, made as writes need
them: 100 writes go out in four rounds.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["JOURNAL_WRITERS", "off_loop"]

T = TypeVar("T")

JOURNAL_WRITERS = 32
"""Journal writes one process keeps in flight at most."""

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(JOURNAL_WRITERS, thread_name_prefix="journal-write")
        return _POOL


async def off_loop(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` in a thread of the pool, awaited: the event loop runs meanwhile.

    What ``call`` raises is raised here (an InfrastructureError, or a BaseException that kills
    the invocation, as a crash injected by a test does).
    """
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_pool(), functools.partial(call, *args))
