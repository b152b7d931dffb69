"""Clients bound to an :class:`~workflows.engine.service.InstanceService`: a workflow's client
and an instance's handle.

``self.env.workflow(name)`` hands out a :class:`WorkflowClient` on every runtime; the public
client (:class:`workflows.client.Workflow`) and the test kit's handle
(:class:`workflows.testing.TestInstance`) build on these, so an instance is read and
controlled the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .model import InstanceRef, InstanceStatusView

if TYPE_CHECKING:
    from .ports import InstancePage
    from .service import InstanceService


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
        return f"{type(self).__name__}({self.ref})"


class WorkflowClient:
    """A client of one registered workflow, on the given service."""

    def __init__(self, name: str, service: InstanceService | None = None) -> None:
        self.name = name
        self._service = service

    @property
    def service(self) -> InstanceService:
        """The service this client creates and reads instances through."""
        if self._service is None:
            self._service = self._default_service()
        return self._service

    def _default_service(self) -> InstanceService:
        """The service of a client built without one (a subclass may supply it)."""
        raise TypeError(f"{self!r} was built without a service to work through")

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
        record = self.service.get(InstanceRef(self.name, id))
        return WorkflowInstance(self.service, record.ref)

    def list(
        self, status: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> InstancePage:
        """A page of instances, newest first; pass ``page.cursor`` back for the next."""
        return self.service.list(self.name, status, cursor, limit)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
