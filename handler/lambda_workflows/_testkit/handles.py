"""Handles the test env gives out: one instance (:class:`TestInstance`), one workflow
(:class:`TestWorkflow`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from lambda_workflows.engine.instances.batch_forms import BatchBody, batch_body
from lambda_workflows.engine.instances.clients import WorkflowInstance
from lambda_workflows.engine.instances.deletion import DeleteBatchResult
from lambda_workflows.engine.instances.ports import InstancePage
from lambda_workflows.engine.instances.service import BatchResult, InstanceService
from lambda_workflows.engine.model import InstanceRef, JournalEntry


class KitEnv(Protocol):
    """What a handle needs of the test env that gave it out (a ``WorkflowTestEnv``)."""

    store: Any
    service: InstanceService

    def progress(self, *, skip_event_timeouts: bool = True) -> bool: ...

    def create(self, workflow: str, id: str | None = None, params: Any = None) -> TestInstance: ...

    def create_batch(self, workflow: str, items: BatchBody | None = None) -> BatchResult: ...

    def get(self, workflow: str, id: str) -> TestInstance: ...


class TestInstance(WorkflowInstance):
    """A handle on one instance: the client's handle (status, step outputs, events, pause,
    resume, terminate, restart, delete), plus its journal."""

    __test__ = False  # not a pytest test class

    def __init__(self, env: KitEnv, ref: InstanceRef) -> None:
        super().__init__(env.service, ref)
        self._env = env

    def journal(self) -> list[JournalEntry]:
        """The recorded journal entries (current generation), oldest first."""
        return sorted(self._env.store.load(self.ref).entries, key=lambda e: (e.at, e.key))

    # subscribe(): in a test env nothing runs unless the test runs it, so a subscriber that
    # found nothing new moves the env on (one message, a due wake-up, or the virtual clock to
    # the next wake-up: the time a real subscriber would wait), instead of waiting.
    _subscribe_wait = 0.0

    def _no_news(self) -> None:
        if not self._env.progress():
            status = self.status().status
            raise RuntimeError(
                f"subscribe(): instance {self.id!r} is {status} and nothing in the test env will "
                "move it on (no work, no wake-up): send the event it waits for or resume it "
                "from inside the loop, or stop iterating"
            )


class TestWorkflow:
    """``env.workflow(name)``: a client of one workflow inside the test env."""

    __test__ = False

    def __init__(self, env: KitEnv, name: str) -> None:
        self._env = env
        self.name = name

    def create(self, id: str | None = None, params: Any = None) -> TestInstance:
        return self._env.create(self.name, id=id, params=params)

    def create_batch(
        self, items: BatchBody | None = None, *, count: int | None = None, params: Any = None
    ) -> BatchResult:
        """As the client's: a list of items, or ``count=N`` (generated ids) with ``params``."""
        return self._env.create_batch(self.name, batch_body(items, count, params))

    def delete_batch(self, ids: Sequence[str]) -> DeleteBatchResult:
        """Delete up to 100 instances; ``result["deleted"]`` and ``result["errors"]`` (each
        id no instance has is an error of code ``not_found``)."""
        return self._env.service.delete_batch(self.name, ids)

    def get(self, id: str) -> TestInstance:
        return self._env.get(self.name, id)

    def list(
        self, status: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> InstancePage:
        """A page of this workflow's instances, newest first, as the client's ``list``: pass
        ``page.cursor`` back for the next page (None on the last one)."""
        return self._env.service.list(self.name, status, cursor, limit)
