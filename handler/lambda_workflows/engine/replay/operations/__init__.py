"""The step operations, one module per ``step`` method run() can call.

:mod:`.do` (``step.do``: recorded outcome, attempts and retries), :mod:`.sleep` (``step.sleep`` /
``sleep_until``), :mod:`.wait_for_event` (delivery, buffering, timeout) and :mod:`.run_workflow` (a
child workflow, awaited like an event) each decide what one call does on this pass; :mod:`.rollback`
runs the rollbacks of the steps of an instance that failed. They share :mod:`.base` and reach the
pass only through :class:`~.base.Pass`; :class:`lambda_workflows.engine.replay.core.Replay` is the
driver.
"""

from . import (
    do,
    rollback,
    run_workflow,
    sleep,
    wait_for_event,
)

__all__ = ["do", "rollback", "run_workflow", "sleep", "wait_for_event"]
