"""Where a suspended step waits: parked until the pass ends, never returning to ``run()``.

A step that must stop the pass (a sleep not yet due, an event not yet sent, a retry delay, a
pause, a failing store) does not hand ``run()`` an exception it could catch or a value it
could keep: ``asyncio.gather(..., return_exceptions=True)`` would return it, ``asyncio.wait``
would report it done, ``except BaseException`` would swallow it. It parks instead, as an
``await`` that is never resolved, exactly like a sleep that has not ended yet. Steps already
running beside it (a gather's other children) go on and are recorded.

When every step of the pass has parked or finished, nothing ``run()`` awaits can complete in
this pass any more: the driver cancels ``run()``'s task, and the pass is suspended. The
cancellation must come back out of ``run()``: a ``finally`` (or an ``except`` that re-raises)
may await a cleanup step on the way, which parks in turn, and the driver cancels again; a
``run()`` that catches it and goes on (returns, raises something else, calls another step
outside the handler) errors the instance (see :mod:`.caught`).
"""

from __future__ import annotations

import asyncio
from typing import Any, NoReturn

# Loop iterations the driver lets pass, once every step is parked or done, before it cancels
# run(): steps a gather has just scheduled start within them (and are counted as running).
_START_TICKS = 3


class Parking:
    """Counts the steps of one pass that are running, and holds the parked ones."""

    def __init__(self) -> None:
        self.running = 0
        self.parked: set[asyncio.Task[Any]] = set()
        self._changed = asyncio.Event()

    def started(self) -> None:
        """A step body began."""
        self.running += 1

    def finished(self) -> None:
        """A step body returned or raised."""
        self.running -= 1
        self._changed.set()

    async def park(self) -> NoReturn:
        """Wait until the pass is over (the task is cancelled then)."""
        self.running -= 1
        task = asyncio.current_task()
        if task is not None:
            self.parked.add(task)
        self._changed.set()
        await asyncio.get_running_loop().create_future()
        raise AssertionError("a parked step is only ever cancelled")  # pragma: no cover

    async def stalled(self, root: asyncio.Task[Any]) -> bool:
        """Wait until ``root`` is done (False), or until a step is parked and none is running
        (True): ``root`` then waits for something that cannot happen in this pass.
        """
        while not root.done():
            if self.running == 0 and self._holding():
                for _ in range(_START_TICKS):
                    await asyncio.sleep(0)
                if self.running == 0 and self._holding() and not root.done():
                    return True
                continue
            self._changed.clear()
            changed = asyncio.ensure_future(self._changed.wait())
            await asyncio.wait({root, changed}, return_when=asyncio.FIRST_COMPLETED)
            changed.cancel()
        return False

    def _holding(self) -> bool:
        return any(not task.done() for task in self.parked)

    def release(self) -> None:
        """End the pass for every parked step."""
        for task in self.parked:
            if not task.done():
                task.cancel()
