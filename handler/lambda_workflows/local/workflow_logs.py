"""``self.logger`` in ``lambda-workflows dev`` and ``lambda-workflows run``: one readable line per
record.

On Lambda a workflow's ``self.logger`` writes through Powertools' JSON handler, at the level
``POWERTOOLS_LOG_LEVEL`` sets. Locally that level is WARNING, so that the engine's own JSON lines
do not drown the runtime's status lines; but the lines a workflow's author writes are the ones
they came to see. So while a local runtime runs, the logger of each workflow it registers:

- has a level of its own (INFO unless its author set one), instead of inheriting WARNING;
- prints each record on the runtime's output: the dev clock's time, the level, the workflow
  and instance, the step and attempt when the line was logged inside a step callback, the
  message, and the file and line that logged it::

    [2025-01-01T00:00:00.000Z] INFO orders/o-1 step 'charge' attempt 2: charging (/src/orders.py:42)

- does not propagate to the ``lambda-workflows`` logger, whose JSON handler would print it again.

Loggers belong to the process: several runtimes in one process (tests) each print every line,
and the last one to close puts back the level and propagation it found.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lambda_workflows.engine.clock import iso
from lambda_workflows.engine.logs import logger_name

__all__ = ["WorkflowLogPrinter", "format_line"]

_FORMATTER = logging.Formatter()  # only its exception and stack formatting


def format_line(record: logging.LogRecord, now: float) -> str:
    """One record as a dev server line (see the module docstring), traceback included."""
    workflow = getattr(record, "workflow", None)
    instance_id = getattr(record, "instance_id", None)
    who = f"{workflow}/{instance_id}" if workflow and instance_id else record.name
    step = getattr(record, "step", None)
    if step is not None:
        who += f" step {step!r} attempt {getattr(record, 'attempt', '?')}"
    line = (
        f"[{iso(now)}] {record.levelname} {who}: {record.getMessage()} "
        f"({record.pathname}:{record.lineno})"
    )
    if record.exc_info:
        line += "\n" + _FORMATTER.formatException(record.exc_info)
    if record.stack_info:
        line += "\n" + _FORMATTER.formatStack(record.stack_info)
    return line


class _PrintHandler(logging.Handler):
    def __init__(self, out: Callable[[str], None], now: Callable[[], float]) -> None:
        super().__init__()
        self._out = out
        self._now = now

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._out(format_line(record, self._now()))
        except Exception:
            self.handleError(record)


@dataclass
class _Found:
    """What a logger was before the first runtime changed it, and how many runtimes did."""

    level: int
    propagate: bool
    runtimes: int = 0


_LOCK = threading.Lock()
_FOUND: dict[str, _Found] = {}


class WorkflowLogPrinter:
    """Prints the ``self.logger`` lines of some workflows on a local runtime's output.

    Args:
        workflows: the workflow classes whose loggers to print.
        out: where each line goes (the runtime's output).
        now: the runtime clock's time, shown on each line like on its status lines.
        level: the level a logger whose author set none gets (INFO).
    """

    def __init__(
        self,
        workflows: Iterable[type],
        out: Callable[[str], None],
        now: Callable[[], float],
        level: int = logging.INFO,
    ) -> None:
        self._names = sorted({logger_name(cls) for cls in workflows})
        self._handler = _PrintHandler(out, now)
        self._level = level
        self._attached = False

    def attach(self) -> None:
        """Start printing (idempotent)."""
        with _LOCK:
            if self._attached:
                return
            self._attached = True
            for name in self._names:
                logger = logging.getLogger(name)
                found = _FOUND.setdefault(name, _Found(logger.level, logger.propagate))
                found.runtimes += 1
                if found.level == logging.NOTSET:
                    logger.setLevel(self._level)
                logger.propagate = False
                logger.addHandler(self._handler)

    def detach(self) -> None:
        """Stop printing; the last printer of a logger restores its level and propagation."""
        with _LOCK:
            if not self._attached:
                return
            self._attached = False
            for name in self._names:
                logger = logging.getLogger(name)
                logger.removeHandler(self._handler)
                found = _FOUND[name]
                found.runtimes -= 1
                if found.runtimes == 0:
                    logger.setLevel(found.level)
                    logger.propagate = found.propagate
                    del _FOUND[name]
