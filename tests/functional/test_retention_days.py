"""The template's RetentionDays is the retention of every outcome a workflow leaves out."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, ClassVar

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.runtime import build_runtime
from lambda_workflows.engine.model import InstanceRef

DAY = 86_400.0


class KeptAfterSuccess(WorkflowEntrypoint):
    retention: ClassVar[dict[str, Any]] = {"success": "1 day"}

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        if event.payload["fail"]:
            raise RuntimeError("declined")
        return await step.do("done", lambda: "ok")


def test_retention_days_reaches_the_runner_and_the_api(aws_env: Any) -> None:
    # GIVEN the stack's runtime built with RETENTION_DAYS=3, on moto
    env = aws_env({"k": KeptAfterSuccess})
    settings = dataclasses.replace(env.aws.settings, retention_days=3.0)
    runtime = build_runtime(
        settings, env.workflows, session=env.aws.session, clock=env.clock, sqs_max_delay=0.0
    )
    # WHEN one instance completes, one errors (RunnerFunction) and one is terminated (API)
    for id, fail in (("ok", False), ("failed", True), ("stopped", False)):
        runtime.service.create("k", id=id, params={"fail": fail})
    runtime.service.terminate(InstanceRef("k", "stopped"))
    for id in ("ok", "failed"):
        asyncio.run(runtime.runner.advance(InstanceRef("k", id)))

    # THEN success keeps its declared day; the outcome left out keeps RetentionDays
    def kept(id: str) -> tuple[str, float]:
        record = runtime.store.get(InstanceRef("k", id))
        assert record.expires_at is not None and record.finished_at is not None
        return str(record.status), round((record.expires_at - record.finished_at) / DAY, 6)

    assert kept("ok") == ("complete", 1.0)
    assert kept("failed") == ("errored", 3.0)
    assert kept("stopped") == ("terminated", 3.0)
