"""Clients bound to an instance API: a workflow's client and an instance's handle.

``self.env.workflow(name)`` hands out a :class:`WorkflowClient` on every runtime; the public client
(:class:`lambda_workflows.client.Workflow`) and the test kit's handle
(:class:`lambda_workflows.testing.TestInstance`) build on these, so an instance is read and
controlled the same way everywhere. What they call is :class:`InstanceApi`: the engine's
:class:`~lambda_workflows.engine.instances.service.InstanceService` in process (the direct mode), or
:class:`lambda_workflows.http_service.HttpInstanceService` over the HTTP API (the HTTP mode).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from lambda_workflows.engine.model import InstanceRef, InstanceStatusView

from .batch_forms import BatchBody, batch_body

if TYPE_CHECKING:
    from .deletion import DeleteBatchResult
    from .instance_events import InstanceEvent
    from .pages import StepPage
    from .ports import InstancePage
    from .recorded_steps import StepOutput
    from .service import BatchResult
    from .subscription import SubscriptionPage

SUBSCRIBE_WAIT = 20.0
"""Seconds a subscription's request waits for news before it asks again (a long poll)."""


class NamesInstance(Protocol):
    """What ``create`` and ``get`` answer: anything that names its instance (a record)."""

    @property
    def ref(self) -> InstanceRef: ...


class InstanceApi(Protocol):
    """The instance API as the clients use it: the part of
    :class:`~lambda_workflows.engine.instances.service.InstanceService` they call, with its
    arguments, return types and exceptions (UnknownWorkflow, InstanceNotFound,
    InstanceAlreadyExists, InvalidTransition, InvalidInput, ...). What the control methods and
    ``send_event`` return
    is not used."""

    def create(self, workflow: str, id: str | None = None, params: Any = None) -> NamesInstance:
        """Create an instance; a taken id raises InstanceAlreadyExists."""
        ...

    def create_batch(self, workflow: str, items: BatchBody) -> BatchResult:
        """Create up to 100 instances (a list of items, or ``{"count", "params"?}`` or
        ``{"instances"}``); each one not created is reported by its index."""
        ...

    def get(self, ref: InstanceRef) -> NamesInstance:
        """The instance, or InstanceNotFound."""
        ...

    def status(self, ref: InstanceRef) -> InstanceStatusView:
        """Status, output, error and step timeline."""
        ...

    def list(
        self,
        workflow: str,
        status: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> InstancePage:
        """A page of instances, newest first."""
        ...

    def pause(self, ref: InstanceRef) -> object:
        """Pause the instance."""
        ...

    def resume(self, ref: InstanceRef) -> object:
        """Resume a paused instance."""
        ...

    def terminate(self, ref: InstanceRef, rollback: bool = False) -> object:
        """Stop the instance for good (after its rollbacks with ``rollback=True``); a finished
        one raises InvalidTransition."""
        ...

    def restart(self, ref: InstanceRef, from_step: Mapping[str, Any] | None = None) -> object:
        """Run the instance again: from the top, or from a recorded step (``from_step``);
        a step that is not recorded raises InvalidInput."""
        ...

    def step_output(self, ref: InstanceRef, name: str, count: int = 1) -> StepOutput:
        """One step's whole recorded output; a step that is not recorded raises StepNotFound."""
        ...

    def steps(self, ref: InstanceRef, cursor: str | None = None, limit: int = 1000) -> StepPage:
        """A page of the step timeline: the first, or the one after ``cursor``."""
        ...

    def delete(self, ref: InstanceRef) -> object:
        """Delete the instance (terminated first if it runs); a missing one raises
        InstanceNotFound."""
        ...

    def delete_batch(self, workflow: str, ids: Sequence[str]) -> DeleteBatchResult:
        """Delete up to 100 instances; each one not deleted is reported by its index."""
        ...

    def send_event(
        self, ref: InstanceRef, type: str, payload: Any = None, *, key: str | None = None
    ) -> object:
        """Deliver an event; a finished instance raises InvalidTransition."""
        ...

    def subscribe(
        self,
        ref: InstanceRef,
        cursor: str | None = None,
        types: Iterable[str] | str | None = None,
        *,
        wait: float = 0.0,
    ) -> SubscriptionPage:
        """The instance's events after ``cursor``, waiting up to ``wait`` seconds for one."""
        ...


class WorkflowInstance:
    """One instance: read its status and control it."""

    def __init__(self, service: InstanceApi, ref: InstanceRef) -> None:
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

    def terminate(self, rollback: bool = False) -> None:
        """Stop for good. Raises InvalidTransition for a finished instance.

        With ``rollback=True`` the rollbacks of the steps it started run first, newest first
        (their ``error`` is named ``Terminated``); it is ``running`` until they are over, then
        ``terminated``. A plain ``terminate()`` runs none.
        """
        self._service.terminate(self.ref, rollback=rollback)

    def restart(self, from_step: Mapping[str, Any] | None = None) -> None:
        """Run again with the same id and params: from the top, or from a recorded step.

        ``from_step={"name": ..., "count": 1, "type": "do"}`` (``count`` and ``type``
        optional) keeps the results recorded before that step (their callbacks do not run
        again) and runs that step and everything after it again. A step that is not recorded
        raises InvalidInput naming the recorded ones, and changes nothing.
        """
        if from_step is None:
            self._service.restart(self.ref)
        else:
            self._service.restart(self.ref, from_step=from_step)

    def steps(self, cursor: str | None = None, limit: int = 1000) -> StepPage:
        """One page of the step timeline, in run order: at most ``limit`` rows (1 to 1,000)
        and 512 KiB (see :mod:`lambda_workflows.engine.instances.pages`), with the ``total`` and the
        ``cursor`` of the next page (None after the last). ``status()`` has every row; this reads a
        long timeline a page at a time.

        Raises:
            InvalidInput: a ``limit`` out of range, or a ``cursor`` that is not one of this
                instance's (``StaleCursor``: it was restarted since: start again)."""
        return self._service.steps(self.ref, cursor, limit)

    def step_output(self, name: str, count: int = 1) -> StepOutput:
        """The whole recorded output of step ``name`` (occurrence ``count``): ``name``,
        ``count``, ``type``, ``status`` and ``output`` (``"[REDACTED]"`` when sensitive).
        Raises StepNotFound, naming the recorded steps."""
        return self._service.step_output(self.ref, name, count)

    def delete(self) -> None:
        """Delete the instance, its journal, events and pending wake-ups; a running or
        waiting one is terminated first. Raises InstanceNotFound when it does not exist
        (already deleted): nothing else changes."""
        self._service.delete(self.ref)

    def send_event(self, *, type: str, payload: Any = None, key: str | None = None) -> None:
        """Deliver an event to the instance's next ``wait_for_event(type=...)``.

        ``key`` (optional) makes a retry safe: a second send with the same key stores nothing.
        """
        self._service.send_event(self.ref, type, payload, key=key)

    def subscribe(
        self, types: Iterable[str] | str | None = None, cursor: str | None = None
    ) -> Iterator[InstanceEvent]:
        """The instance's events: its whole history first, then each new one as it happens,
        until the instance finishes (complete, errored or terminated); the same order every
        time (see docs/events.md, "Subscribing to an instance").

        Args:
            types: only events of these types (``"step.completed"``, ...; a list, or one
                string with commas); all of them by default.
            cursor: an event's ``cursor``: start after that event (resume a subscription).

        Raises:
            InvalidInput: an unknown type, or a cursor that is not one of this instance's.
            InstanceNotFound: the instance does not exist (or was deleted meanwhile).
        """
        while True:
            page = self._service.subscribe(self.ref, cursor, types, wait=self._subscribe_wait)
            yield from page.events
            if page.finished:
                return
            cursor = page.cursor
            if not page.events:
                self._no_news()

    _subscribe_wait = SUBSCRIBE_WAIT

    def _no_news(self) -> None:
        """Called when a subscription's request found nothing new (its wait ran out)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.ref})"


class WorkflowClient:
    """A client of one registered workflow, on the given instance API."""

    def __init__(self, name: str, service: InstanceApi | None = None) -> None:
        self.name = name
        self._service = service

    @property
    def service(self) -> InstanceApi:
        """The service this client creates and reads instances through."""
        if self._service is None:
            self._service = self._default_service()
        return self._service

    def _default_service(self) -> InstanceApi:
        """The service of a client built without one (a subclass may supply it)."""
        raise TypeError(f"{self!r} was built without a service to work through")

    def create(self, id: str | None = None, params: Any = None) -> WorkflowInstance:
        """Create an instance (durably, before returning). A taken id → InstanceAlreadyExists."""
        record = self.service.create(self.name, id, params)
        return WorkflowInstance(self.service, record.ref)

    def create_batch(
        self, items: BatchBody | None = None, *, count: int | None = None, params: Any = None
    ) -> dict[str, Any]:
        """Create up to 100 instances at once, as Cloudflare's ``createBatch``.

        ``create_batch([{"id": ..., "params": ...}, ...])`` creates the items (an item
        without ``id`` gets a generated one); ``create_batch(count=10, params={...})`` creates
        10 instances with generated ids, all with ``params``. The object forms
        ``{"count": N, "params": ...}`` and ``{"instances": [...]}`` are taken as ``items`` too.

        Returns:
            ``{"created": [ids], "errors": [{index, id, code, message}]}``: an item that was
            not created (bad id or params, an id repeated in the batch, a taken id) is
            reported by its index, and the others are created.

        Raises:
            InvalidInput: the batch is malformed as a whole (over 100 items, count out of
                1..100, unknown keys, params over 1 MiB with count); nothing is created.
            TypeError: both ``items`` and ``count``, or neither.
        """
        body = batch_body(items, count, params)
        return self.service.create_batch(self.name, body).to_dict()

    def get(self, id: str) -> WorkflowInstance:
        """A handle on an existing instance. Raises InstanceNotFound."""
        record = self.service.get(InstanceRef(self.name, id))
        return WorkflowInstance(self.service, record.ref)

    def list(
        self, status: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> InstancePage:
        """A page of instances, newest first; pass ``page.cursor`` back for the next."""
        return self.service.list(self.name, status, cursor, limit)

    def delete_batch(self, ids: Sequence[str]) -> dict[str, Any]:
        """Delete up to 100 instances at once.

        Returns ``{"deleted": [{"id"}], "errors": [{index, id, code, message}]}``, one entry
        per position of ``ids`` (``code`` is ``not_found`` for an id no instance has).
        """
        return self.service.delete_batch(self.name, ids).to_dict()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
