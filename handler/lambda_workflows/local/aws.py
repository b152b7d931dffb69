"""The former name of :mod:`lambda_workflows.local.embedded` (``LocalAws`` is ``EmbeddedAws``), kept
for the test harnesses that still import it; new code imports
``lambda_workflows.local.embedded``."""

from __future__ import annotations

from .embedded import TEST_RUNNER, EmbeddedAws, LambdaContext, PendingSchedule, sqs_event

LocalAws = EmbeddedAws

__all__ = [
    "TEST_RUNNER",
    "EmbeddedAws",
    "LambdaContext",
    "LocalAws",
    "PendingSchedule",
    "sqs_event",
]
