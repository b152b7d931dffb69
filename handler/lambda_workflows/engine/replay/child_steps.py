"""What a ``step.run_workflow`` step knows of its child on replay: the child's id, the event type
its answer comes as, the outcome it carries, and what starting it gave the pass.

The writes that create a child and deliver its end are the instance layer's
(:mod:`lambda_workflows.engine.instances.children`); these are the pure parts the replay pass and
the operations use.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.limits import MAX_ID
from lambda_workflows.engine.model import (
    CHILD_EVENT_PREFIX,
    EntryKind,
    ErrorInfo,
    InstanceRef,
    JournalEntry,
)

from .journal import delivery_key

__all__ = [
    "ChildOutcome",
    "ChildStart",
    "WaitFor",
    "child_event_type",
    "child_id",
    "child_of",
    "child_outcome",
    "pending_children",
]

_NOT_ID = re.compile(r"[^a-zA-Z0-9_-]+")
_DIGEST = 12


def child_id(parent: InstanceRef, generation: int, step_key: str, name: str) -> str:
    """The id of the child a step starts when it gives none: ``<parent id>-<step>-<hash>``.

    Deterministic (the same on every replay of the same generation), a valid instance id of
    at most 100 characters, and distinct per parent, generation and step occurrence (the hash
    covers them all): a restarted parent starts new children.
    """
    seed = "\x1f".join((parent.workflow, parent.id, str(generation), step_key))
    digest = hashlib.sha256(seed.encode()).hexdigest()[:_DIGEST]
    slug = _NOT_ID.sub("-", name).strip("-") or "step"
    head = f"{parent.id}-{slug}"[: MAX_ID - _DIGEST - 1].rstrip("-")
    return f"{head}-{digest}"


def child_event_type(child: InstanceRef) -> str:
    """The event type the parent's step waits on for ``child``."""
    return f"{CHILD_EVENT_PREFIX}{child.workflow}/{child.id}"


def child_of(entry: JournalEntry) -> InstanceRef | None:
    """The child a ``run_workflow`` entry (its wait or its answer) is about, else None."""
    event_type = entry.event_type or ""
    if not event_type.startswith(CHILD_EVENT_PREFIX):
        return None
    workflow, _, id = event_type[len(CHILD_EVENT_PREFIX) :].partition("/")
    return InstanceRef(workflow, id) if id else None  # no id: a test's mock stood in for it


def pending_children(entries: Iterable[JournalEntry]) -> list[InstanceRef]:
    """The children of a journal whose answer is not recorded yet (terminate stops them)."""
    found = list(entries)
    answered = {e.key for e in found if e.kind is EntryKind.DELIVERY}
    return [
        child
        for e in found
        if e.kind is EntryKind.WAIT
        and (child := child_of(e)) is not None
        and delivery_key(e.key) not in answered
    ]


@immutable
class ChildOutcome:
    """How a child ended, as its parent's step receives it."""

    status: str
    output: str | None  # encoded JSON, when complete
    error: ErrorInfo | None


def child_outcome(payload: str) -> ChildOutcome:
    """The outcome an answer's event payload carries (see :meth:`Children.deliver`)."""
    shown: Mapping[str, Any] = json.loads(payload)
    return ChildOutcome(
        str(shown["status"]), shown.get("output"), ErrorInfo.from_dict(shown.get("error"))
    )


@immutable
class ChildStart:
    """The child a step started (or found) with the wait that names it, or why it could not
    start one (``error``). Neither: the parent moved on (terminated, restarted, deleted,
    rolling back) before its child existed, and nothing was written."""

    ref: InstanceRef
    error: ErrorInfo | None = None
    wait: JournalEntry | None = None  # the recorded wait (another runner's, if it was first)
    ours: bool = False  # this start recorded the wait (and created the child, if it did)


WaitFor = Callable[[InstanceRef], JournalEntry]
"""Builds the parent's wait entry for the child (its event type names the child)."""
