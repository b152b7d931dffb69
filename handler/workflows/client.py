"""The Python client: create and control instances from your code, or inside a step.

::

    from workflows.client import Workflow

    orders = Workflow("orders")
    instance = orders.create(id="order-1234", params={"sku": "cat-poster"})
    instance.status().status               # "queued", "running", ..., "complete"
    instance.send_event(type="approved", payload={"user": "ana"})

Without an explicit ``service``, the client uses the AWS runtime configured by the
environment (the same variables the Lambdas read). Inside a workflow, use
``self.env.workflow("orders")`` — and call ``create`` inside a ``step.do`` so a replay does not
create the instance twice (rules of Workflows: avoid doing side effects outside of a step).
"""

from __future__ import annotations

from .engine.clients import WorkflowClient, WorkflowInstance
from .engine.service import InstanceService

__all__ = ["Workflow", "WorkflowInstance"]


class Workflow(WorkflowClient):
    """A client of one registered workflow.

    Args:
        name: the workflow's registered name.
        service: the instance service to work through (default: the one of the AWS runtime
            this process builds from its environment, on first use).
    """

    def __init__(self, name: str, *, service: InstanceService | None = None) -> None:
        super().__init__(name, service)

    def _default_service(self) -> InstanceService:
        from .aws.runtime import get_runtime  # boto3 is loaded only when it is needed

        return get_runtime().service
