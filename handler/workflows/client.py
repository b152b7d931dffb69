"""The Python client: create and control instances from your code, or inside a step.

::

    from workflows import Workflow          # (also workflows.client.Workflow)

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

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .engine.model import InstanceRef, InstanceStatusView
from .engine.service import InstanceService

if TYPE_CHECKING:
    from .engine.ports import InstancePage


class WorkflowInstance:
    """One instance: read its status and control it."""

    def __init__(self, service: InstanceService, ref: InstanceRef) -> None:
        self._service = service
        self.ref = ref

    @property
    def id(self) -> str:
        """The instance id."""
        return self.ref.id

    def status(self) -> InstanceStatusView:
        """``status``, ``output``, ``error`` and the step timeline."""
        return self._service.status(self.ref)

    def pause(self) -> None:
        """Pause: at once when idle, else when the running step finishes."""
        self._service.pause(self.ref)

    def resume(self) -> None:
        """Resume a paused instance; its pending sleeps move by the time spent paused."""
        self._service.resume(self.ref)

    def terminate(self) -> None:
        """Stop for good. Raises InvalidTransition for a finished instance."""
        self._service.terminate(self.ref)

    def restart(self) -> None:
        """Run again from the top with the same id and params."""
        self._service.restart(self.ref)

    def send_event(self, *, type: str, payload: Any = None, key: str | None = None) -> None:
        """Deliver an event to the instance's next ``wait_for_event(type=...)``.

        ``key`` (optional) makes a retry safe: a second send with the same key stores nothing.
        """
        self._service.send_event(self.ref, type, payload, key=key)

    def __repr__(self) -> str:
        return f"WorkflowInstance({self.ref})"


class Workflow:
    """A client of one registered workflow."""

    def __init__(self, name: str, *, service: InstanceService | None = None) -> None:
        self.name = name
        self._service = service

    @property
    def service(self) -> InstanceService:
        if self._service is None:
            from .aws.runtime import get_runtime

            self._service = get_runtime().service
        return self._service

    def create(self, id: str | None = None, params: Any = None) -> WorkflowInstance:
        """Create an instance (durably, before returning). A taken id → InstanceAlreadyExists."""
        record = self.service.create(self.name, id, params)
        return WorkflowInstance(self.service, record.ref)

    def create_batch(self, items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Create up to 100 instances at once; ids that exist are skipped and reported.

        Returns ``{"created": [ids], "errors": [{index, id, code, message}]}``.
        """
        return self.service.create_batch(self.name, items).to_dict()

    def get(self, id: str) -> WorkflowInstance:
        """A handle on an existing instance. Raises InstanceNotFound."""
        self.service.check_workflow(self.name)
        ref = InstanceRef(self.name, id)
        self.service.store.get(ref)
        return WorkflowInstance(self.service, ref)

    def list(
        self, status: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> InstancePage:
        """A page of instances, newest first; pass ``page.cursor`` back for the next."""
        return self.service.list(self.name, status, cursor, limit)
