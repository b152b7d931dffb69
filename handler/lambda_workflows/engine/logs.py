"""``self.logger`` in a workflow: replay-aware and tagged.

``run()`` is replayed from the top on every resume, so a plain ``print`` or log call in
``run()`` repeats on each replay (Cloudflare: "this log may happen many times"). This logger
drops ``run()``-level lines while replay is still catching up with the journal (the code is
re-walking calls already recorded), and tags every line with the workflow, the instance id
and, inside a step callback, the step name and attempt. Lines inside step callbacks are never
dropped: callbacks only run for new work.

Each record's location (``pathname``, ``lineno``, ``funcName``) is the line that called
``self.logger``, not this adapter. On Lambda the ``lambda_workflows.*`` loggers share the Powertools
JSON formatter (see ``lambda_workflows.observability``), so the tags become JSON keys; in
``lambda-workflows dev`` each line is printed with them (see
``lambda_workflows.local.workflow_logs``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping
from typing import Any


def logger_name(workflow_class: type) -> str:
    """The name of the logger behind a workflow's ``self.logger``:
    ``lambda_workflows.<ClassName>``."""
    return f"lambda_workflows.{workflow_class.__name__}"


class WorkflowLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger adapter that knows whether ``run()`` is replaying.

    Args:
        logger: the underlying logger.
        workflow: the workflow name.
        instance_id: the instance id.
        replaying: True while run() re-walks recorded calls.
        current_step: the (name, attempt) of the step whose callback is running, or None.
    """

    def __init__(
        self,
        logger: logging.Logger,
        workflow: str,
        instance_id: str,
        replaying: Callable[[], bool],
        current_step: Callable[[], tuple[str, int] | None],
    ) -> None:
        super().__init__(logger, {"workflow": workflow, "instance_id": instance_id})
        self._replaying = replaying
        self._current_step = current_step
        self.suppressed = 0

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        step = self._current_step()
        if step is None and self._replaying():
            self.suppressed += 1
            return
        # logging skips its own frames when it looks for the caller, not this method's: one
        # more level up is the user's line (``stacklevel`` the user passed counts from there)
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
        super().log(level, msg, *args, **kwargs)

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        extra = dict(self.extra or {})
        step = self._current_step()
        if step is not None:
            extra["step"], extra["attempt"] = step
        extra.update(kwargs.get("extra") or {})
        kwargs["extra"] = extra
        return msg, kwargs
