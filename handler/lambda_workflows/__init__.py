"""Durable workflows for Python on AWS, in the programming model of Cloudflare Workflows.

Write a workflow::

    from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep

    class Greet(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> str:
            name = await step.do("look up name", lambda: event.payload["name"])
            await step.sleep("wait a bit", "1 hour")
            return f"hello {name}"

Test it with :mod:`lambda_workflows.testing`; run it on AWS with the SAM template. Start and control
instances with :class:`Workflow` (see :mod:`lambda_workflows.client`)::

    from lambda_workflows import Workflow

    Workflow("greet", url="http://127.0.0.1:8787").create(params={"name": "ana"})
"""

from typing import TYPE_CHECKING, Any

from .engine.clock import Clock, SystemClock
from .engine.config import RetryConfig, StepConfig
from .engine.entrypoint import Env, WorkflowEntrypoint, WorkflowEvent
from .engine.errors import (
    EventMutationError,
    InstanceAlreadyExists,
    InstanceFailedError,
    InstanceNotFound,
    InvalidInput,
    InvalidStepError,
    InvalidTransition,
    NonDeterminismError,
    NonRetryableError,
    ResultTooLarge,
    StepFailedError,
    StepLimitExceeded,
    StepNotFound,
    SuspensionCaughtError,
    UnawaitedStepError,
    UnknownWorkflow,
    WorkflowError,
    WorkflowTimeoutError,
)
from .engine.model import ErrorInfo, InstanceStatus, InstanceStatusView, ReceivedEvent, StepInfo
from .engine.step import StepContext, WorkflowStep

if TYPE_CHECKING:
    from .client import Workflow

__all__ = [
    "Clock",
    "Env",
    "ErrorInfo",
    "EventMutationError",
    "InstanceAlreadyExists",
    "InstanceFailedError",
    "InstanceNotFound",
    "InstanceStatus",
    "InstanceStatusView",
    "InvalidInput",
    "InvalidStepError",
    "InvalidTransition",
    "NonDeterminismError",
    "NonRetryableError",
    "ReceivedEvent",
    "ResultTooLarge",
    "RetryConfig",
    "StepConfig",
    "StepContext",
    "StepFailedError",
    "StepInfo",
    "StepLimitExceeded",
    "StepNotFound",
    "SuspensionCaughtError",
    "SystemClock",
    "UnawaitedStepError",
    "UnknownWorkflow",
    "Workflow",
    "WorkflowEntrypoint",
    "WorkflowError",
    "WorkflowEvent",
    "WorkflowStep",
    "WorkflowTimeoutError",
]


def __getattr__(name: str) -> Any:
    # The client (and the HTTP mode and pydantic behind it) is imported on first use: a
    # Lambda handler imports this package for the engine and never pays for it.
    if name == "Workflow":
        from .client import Workflow

        return Workflow
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
