"""Creating instances, one or a batch: every input validated before anything is written,
an instance of a workflow with a concurrency limit put in line first (see
:mod:`lambda_workflows.engine.instances.slots`), then its first wake-up posted.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from lambda_workflows.engine import codec
from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.errors import InvalidInput, WorkflowError
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.limits import MAX_ID, check_id
from lambda_workflows.engine.model import (
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    first_generation,
)
from lambda_workflows.engine.versions import check_workflow, newest_version

from .batch_forms import BatchBody, read_batch
from .commands import post_wake_up
from .ports import BatchCreateResult, InstanceStore, WorkQueue
from .recovery import QUEUE_GRACE
from .slots import SlotGate

__all__ = [
    "BATCH_ERROR_CODES",
    "BATCH_ITEM_KEYS",
    "BatchResult",
    "InstanceCreation",
    "NewInstance",
]

BATCH_ITEM_KEYS = frozenset({"id", "instance_id", "params"})
BATCH_ERROR_CODES = {
    "invalid_input": "the item's id, params or keys are not valid",
    "duplicate_id": "an earlier item of the same batch has this id",
    "instance_exists": "the id was already taken",
}
"""Why a batch item was not created, by its ``code`` in ``BatchResult.errors``."""


@immutable
class NewInstance:
    """One validated instance to create."""

    id: str
    params: str  # encoded JSON


@dataclass(slots=True)
class BatchResult:
    """What ``create_batch`` did: ids created, and one error per item not created.

    Each error is ``{"index", "id", "code", "message"}``: ``index`` is the item's position in
    the batch, ``id`` the id it asked for (None when it gave none, or not a string), and
    ``code`` one of :data:`BATCH_ERROR_CODES`.
    """

    created: list[str] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"created": list(self.created), "errors": list(self.errors)}

    def __getitem__(self, key: str) -> Any:
        """Also readable as a mapping: ``result["created"]``."""
        return self.to_dict()[key]

    def refuse(self, index: int, id: Any, code: str, message: str) -> None:
        """Report item ``index`` as not created (``id`` shown when it is a string of at most
        100 characters: a longer one is never echoed whole)."""
        shown = id if isinstance(id, str) and len(id) <= MAX_ID else None
        self.errors.append({"index": index, "id": shown, "code": code, "message": message})


@dataclass(eq=False)
class InstanceCreation:
    """Creates instances of the registered workflows.

    Args:
        workflows: the registry (or the registered names).
        store: where the instances are written.
        queue: where their first wake-ups are posted.
        clock: the time source.
        slots: the concurrency limits (None: no limit is enforced).
    """

    workflows: Collection[str]
    store: InstanceStore
    queue: WorkQueue
    clock: Clock
    slots: SlotGate | None = None  # None: no limit is enforced

    def validate_new(self, id: str | None = None, params: Any = None) -> NewInstance:
        """Check an id (or generate one) and encode params (≤ 1 MiB). Writes nothing.

        No params (None, or JSON null) are stored as ``{}``, so ``event.payload`` is ``{}``, as
        with Cloudflare's ``create()`` without params. Decided here, at creation, rather than
        when ``run()`` gets its event: an instance created earlier with null params keeps
        seeing the same payload on every replay.
        """
        instance_id = str(uuid.uuid4()) if id is None else check_id(id)
        try:
            encoded = codec.encode({} if params is None else params, what="params")
        except WorkflowError as exc:
            raise InvalidInput(str(exc)) from None
        return NewInstance(instance_id, encoded)

    def create(self, workflow: str, id: str | None = None, params: Any = None) -> InstanceRecord:
        """Create an instance and post its first wake-up. Duplicate id → InstanceAlreadyExists."""
        check_workflow(self.workflows, workflow)
        new = self.validate_new(id, params)
        record = self._new_record(workflow, new)
        if self.slots is not None and self.slots.limited(workflow):
            record = self.slots.create(record)  # in line for a slot (engine.slots)
        else:
            self.store.create(record)
        post_wake_up(lambda: self.queue.send(record.ref), record.ref)
        return record

    def create_batch(self, workflow: str, items: BatchBody) -> BatchResult:
        """Create up to 100 instances; every item that cannot be created is reported by its
        index in ``errors``, and the others are created.

        ``items`` is a list of ``{id?, params?}``, or one of Cloudflare's object forms:
        ``{"count": N, "params": ...}`` (N generated ids, the same params) or
        ``{"instances": [...]}`` (see :mod:`.batch_forms`).

        An item is not created when its id, params or keys are not valid (``invalid_input``),
        when an earlier item of the batch has the same id (``duplicate_id``), or when its id is
        already taken (``instance_exists``). So sending the same batch twice creates nothing
        the second time.

        Raises:
            InvalidInput: the batch itself is malformed (not a list, over 100 items, an item
                that is not an object, a count out of 1..100, unknown keys, params of the
                count form that are not valid); nothing is written.
        """
        check_workflow(self.workflows, workflow)
        request = read_batch(items)
        if request.shared_params:  # one params for all: refuse them once, not item by item
            self.validate_new(None, request.items[0].get("params"))
        items = request.items
        result = BatchResult()
        accepted: list[tuple[int, NewInstance]] = []
        first_with: dict[str, int] = {}
        for index, item in enumerate(items):
            try:
                one = self._batch_item(item)
            except InvalidInput as exc:
                result.refuse(index, _asked_id(item), "invalid_input", f"item {index}: {exc}")
                continue
            if one.id in first_with:
                message = (
                    f"item {index}: id {one.id!r} is also the id of item {first_with[one.id]}; "
                    "an id may appear once in a batch, so this item was not created"
                )
                result.refuse(index, one.id, "duplicate_id", message)
                continue
            first_with[one.id] = index
            accepted.append((index, one))
        records = [self._new_record(workflow, n) for _, n in accepted]
        if not records:
            written = BatchCreateResult()
        elif self.slots is not None and self.slots.limited(workflow):
            written = self.slots.create_many(records)  # in line for a slot (engine.slots)
        else:
            written = self.store.create_many(records)
        existing = set(written.existing)
        for index, one in accepted:
            if one.id in existing:
                message = f"instance {one.id!r} already exists; it was not created again"
                result.refuse(index, one.id, "instance_exists", message)
        result.errors.sort(key=lambda error: int(error["index"]))
        result.created = list(written.created)
        created = [InstanceRef(workflow, i) for i in written.created]
        if created:
            post_wake_up(lambda: self.queue.send_many(created), *created)
        return result

    def _batch_item(self, item: Mapping[str, Any]) -> NewInstance:
        """One batch item validated as ``create`` validates its arguments."""
        unknown = set(item) - BATCH_ITEM_KEYS
        if unknown:
            raise InvalidInput(
                f"unknown key(s) {sorted(map(str, unknown))}; an item takes id (or instance_id) "
                "and params"
            )
        if item.get("id") is not None and item.get("instance_id") is not None:
            raise InvalidInput("give either instance_id or id, not both")
        return self.validate_new(_asked_id(item), item.get("params"))

    def _new_record(self, workflow: str, new: NewInstance) -> InstanceRecord:
        now = self.clock.time()
        return InstanceRecord(
            workflow=workflow,
            id=new.id,
            status=InstanceStatus.QUEUED,
            params=new.params,
            created_at=now,
            updated_at=now,
            due_at=now + QUEUE_GRACE,
            generation=first_generation(now),
            workflow_version=newest_version(self.workflows, workflow),
        )


def _asked_id(item: Mapping[str, Any]) -> Any:
    """The id a batch item asks for, under either key (None: generate one)."""
    return item.get("id") if item.get("id") is not None else item.get("instance_id")
