"""The HTTP API's wire models: what each route takes and answers (docs/semantics.md).

They exist for two readers: the resolver, which validates requests and responses against them,
and the OpenAPI document (``GET /openapi.json``, Swagger UI at ``/docs``), which is generated
from them. The request bodies are declared in :mod:`._api_requests`, the answers in
:mod:`._api_answers`; this module is where both are named. Which route takes and answers which
is declared once, in :mod:`._api_routes`.
"""

from __future__ import annotations

from lambda_workflows.engine.instances.batch_forms import MAX_BATCH
from lambda_workflows.engine.model import InstanceStatus as InstanceStatus  # its fields' type

from ._api_answers import (
    AttemptError,
    AttemptView,
    BatchError,
    BatchResultBody,
    ChildLink,
    DeleteBatchResultBody,
    Deleted,
    DeletedItem,
    DeleteError,
    ErrorBody,
    ErrorDetail,
    EventAccepted,
    FailedStep,
    HistoryBody,
    InstanceDetails,
    InstanceEventBody,
    InstanceHandle,
    InstanceList,
    InstanceSummary,
    ParentLink,
    RollbackView,
    StepError,
    StepOutputBody,
    StepPageBody,
    StepView,
    SubscriptionBody,
    UsageView,
    WorkflowDetails,
    WorkflowList,
    WorkflowSchedule,
    WorkflowVersion,
)
from ._api_requests import (
    BATCH_LIST,
    DeleteBatchBody,
    FromStep,
    JsonValue,
    NewInstanceBody,
    StatusChange,
    WireModel,
    batch_body_schema,
)

__all__ = [
    "BATCH_LIST",
    "MAX_BATCH",
    "AttemptError",
    "AttemptView",
    "BatchError",
    "BatchResultBody",
    "ChildLink",
    "DeleteBatchBody",
    "DeleteBatchResultBody",
    "DeleteError",
    "Deleted",
    "DeletedItem",
    "ErrorBody",
    "ErrorDetail",
    "EventAccepted",
    "FailedStep",
    "FromStep",
    "HistoryBody",
    "InstanceDetails",
    "InstanceEventBody",
    "InstanceHandle",
    "InstanceList",
    "InstanceSummary",
    "JsonValue",
    "NewInstanceBody",
    "ParentLink",
    "RollbackView",
    "StatusChange",
    "StepError",
    "StepOutputBody",
    "StepPageBody",
    "StepView",
    "SubscriptionBody",
    "UsageView",
    "WireModel",
    "WorkflowDetails",
    "WorkflowList",
    "WorkflowSchedule",
    "WorkflowVersion",
    "batch_body_schema",
]
