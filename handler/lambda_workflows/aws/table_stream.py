"""The table's stream records, read as lifecycle events
(:mod:`lambda_workflows.engine.instances.lifecycle`).

The stream (template.yaml's ``StreamSpecification``, ``NEW_AND_OLD_IMAGES``) has a record for
every write of every item. LifecycleEventsFunction's event source mapping lets through only
those of instance items (and, when step events are on, the insertions of step outcomes in the
journal); each is checked again here rather than trusted, and turned into at most one event:

- an instance item written: its record before (the old image) and after (the new image)
  name the transition; a tombstone (a deleted instance) is no instance and publishes nothing;
- a journal entry inserted (``J#<generation>#<key>``): a step's final outcome, unless it is a
  copy a restart from a step made of a kept step's entry (``seeded``: that step did not run).

Large values (params, output, a step's result) are never decoded: no event carries them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambda_workflows.engine.errors import ConfigurationError
from lambda_workflows.engine.instances.lifecycle import (
    LifecycleEvent,
    instance_changes,
    step_recorded,
)

from .items import (
    CHUNK_MARK,
    INSTANCE_SK,
    JOURNAL_PREFIX,
    SEEDED,
    Item,
    instance_pk,
    instance_record,
    instance_ref,
    journal_entry,
)

__all__ = ["VIEW_TYPE", "lifecycle_event", "lifecycle_events", "sequence_number"]

VIEW_TYPE = "NEW_AND_OLD_IMAGES"
"""The stream view the events need: the item after the write, and before it."""

# Attributes holding large values, left out before decoding (no event shows them).
_LARGE = ("params", "output", "result")


def lifecycle_event(record: Mapping[str, Any], *, steps: bool) -> LifecycleEvent | None:
    """The last event a stream record stands for (None: the write publishes nothing); see
    :func:`lifecycle_events`."""
    events = lifecycle_events(record, steps=steps)
    return events[-1] if events else None


def lifecycle_events(record: Mapping[str, Any], *, steps: bool) -> list[LifecycleEvent]:
    """The events a stream record stands for, in order (none: the write publishes nothing;
    two: a runner's pass without a lease, ``instance.started`` then where it left the
    instance).

    Args:
        record: one record of the table's stream, as Lambda delivers it.
        steps: publish the outcomes of steps (``step.completed``, ``step.failed``).

    Raises:
        ConfigurationError: the stream does not carry both images (its view type is not
            ``NEW_AND_OLD_IMAGES``): no transition can be told.
    """
    if record.get("eventName") not in ("INSERT", "MODIFY"):
        return []
    change = record.get("dynamodb") or {}
    view = change.get("StreamViewType", VIEW_TYPE)
    if view != VIEW_TYPE:
        raise ConfigurationError(
            f"the table's stream carries {view}, not {VIEW_TYPE}: lifecycle events need the "
            "item before and after each write; set StreamSpecification.StreamViewType to "
            f"{VIEW_TYPE} (template.yaml) and deploy"
        )
    keys = change.get("Keys") or {}
    pk, sk = _string(keys, "pk"), _string(keys, "sk")
    new = change.get("NewImage")
    if pk is None or sk is None or new is None:
        return []
    if sk == INSTANCE_SK:
        return _instance_events(pk, new, change.get("OldImage"))
    if steps and record.get("eventName") == "INSERT" and sk.startswith(JOURNAL_PREFIX):
        step = _step_event(pk, sk, new)
        return [step] if step is not None else []
    return []


def sequence_number(record: Mapping[str, Any]) -> str:
    """The record's place in its shard: what a batch item failure names."""
    return str(record["dynamodb"]["SequenceNumber"])


def _instance_events(pk: str, new: Item, old: Item | None) -> list[LifecycleEvent]:
    if not _is_instance(new):
        return []  # a tombstone: the instance was deleted
    after = instance_record(_small(new))
    if instance_pk(after.workflow, after.id) != pk:
        return []  # not an item this engine wrote
    before = instance_record(_small(old)) if old is not None and _is_instance(old) else None
    return instance_changes(before, after)


def _step_event(pk: str, sk: str, new: Item) -> LifecycleEvent | None:
    ref = instance_ref(pk)
    generation, _, key = sk[len(JOURNAL_PREFIX) :].partition("#")
    if ref is None or CHUNK_MARK in sk or not generation.isdigit() or SEEDED in new:
        return None  # a chunk of a large result, or a restart's copy of a kept step
    entry = journal_entry(_small(new), {})
    if entry.key != key:
        return None
    return step_recorded(ref, int(generation), entry)


def _is_instance(image: Item) -> bool:
    """An instance item (not a deleted instance's tombstone, which has no status)."""
    return "status" in image and "workflow" in image and "id" in image


def _small(image: Item) -> Item:
    """The image without its large values (inline, compressed or chunked)."""
    return {name: value for name, value in image.items() if not name.startswith(_LARGE)}


def _string(keys: Mapping[str, Any], name: str) -> str | None:
    value = (keys.get(name) or {}).get("S")
    return value if isinstance(value, str) else None
