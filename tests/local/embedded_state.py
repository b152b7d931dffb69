"""What a request could have written to the embedded AWS of `lambda-workflows dev`, read inside moto
cheaply enough to compare before and after every request.

A :class:`Written` state holds:

- the key of every table item (a new or deleted item anywhere: an instance, a buffered event,
  an idempotency marker, a journal entry, a chunk);
- every instance's status, version, generation and update time (every write to an instance
  item bumps its version: a listing of every workflow's instances, with what changed them);
- every item of the instances the request names, in full (their status, events, timeline);
- how many messages the work queue holds (visible, in flight or delayed: every one sent);
- every schedule, with its time and input.

moto's own readers are too slow for this: a boto3 scan costs ~3 ms an item, and
``Table.all_items()`` sorts by DynamoDB value comparisons.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.scheduler.models import scheduler_backends
from moto.sqs.models import sqs_backends

from lambda_workflows.local.runtime import LocalRuntime

_INSTANCE_FIELDS = ("status", "version", "generation", "updated_at")


@dataclass(frozen=True)
class Written:
    """One reading of everything a request could write (equal readings: nothing written)."""

    keys: frozenset[tuple[str, str]]
    instances: frozenset[tuple[str, tuple[Any, ...]]]
    named: tuple[tuple[str, str, str], ...]
    messages: int
    schedules: frozenset[tuple[str, str, str]]

    def changes(self, later: Written) -> str:
        """What differs in ``later``, briefly."""
        parts = []
        if added := sorted(later.keys - self.keys)[:3]:
            parts.append(f"items added {added}")
        if removed := sorted(self.keys - later.keys)[:3]:
            parts.append(f"items removed {removed}")
        moved = sorted(later.instances - self.instances)[:3]
        if moved:
            parts.append(f"instances now {moved}")
        if self.named != later.named:
            parts.append(f"named instances {[n[:2] for n in set(later.named) ^ set(self.named)]}")
        if self.messages != later.messages:
            parts.append(f"work messages {self.messages} -> {later.messages}")
        if self.schedules != later.schedules:
            parts.append(f"schedules {sorted(self.schedules ^ later.schedules)[:3]}")
        return "; ".join(parts)


def read(runtime: LocalRuntime, named: Iterable[tuple[str, str]] = ()) -> Written:
    """Read ``runtime``'s embedded AWS; ``named``: (workflow, id) of the instances to read in
    full."""
    aws = runtime.aws
    region = aws.session.region_name
    table = dynamodb_backends[DEFAULT_ACCOUNT_ID][region].get_table(aws.settings.table_name)
    wanted = {f"I#{workflow}#{instance_id}" for workflow, instance_id in named}
    keys: set[tuple[str, str]] = set()
    instances: set[tuple[str, tuple[Any, ...]]] = set()
    full: list[tuple[str, str, str]] = []
    for hash_key, partition in table.items.items():
        pk = str(hash_key.value)
        for range_key, item in partition.items():
            sk = str(range_key.value)
            keys.add((pk, sk))
            if sk == "I":  # scalars (S, N): their text is enough, and quick to read
                attrs = item.attrs
                fields = tuple(attrs[f].value if f in attrs else None for f in _INSTANCE_FIELDS)
                instances.add((pk, fields))
            if pk in wanted:
                encoded = repr(sorted((k, _plain(v)) for k, v in item.attrs.items()))
                full.append((pk, sk, encoded))
    queue_name = aws.settings.work_queue_url.rsplit("/", 1)[-1]
    queue = sqs_backends[DEFAULT_ACCOUNT_ID][region].queues[queue_name]
    scheduler = scheduler_backends[DEFAULT_ACCOUNT_ID][region]
    group = scheduler.schedule_groups[aws.settings.schedule_group]
    schedules = frozenset(
        (name, str(s.schedule_expression), repr(s.target)) for name, s in group.schedules.items()
    )
    return Written(
        frozenset(keys), frozenset(instances), tuple(sorted(full)), len(queue._messages), schedules
    )


def _plain(value: Any) -> Any:
    """A DynamoDB value (a moto ``DynamoType``, or a set's member) as comparable data."""
    kind, inner = getattr(value, "type", None), getattr(value, "value", value)
    if isinstance(inner, dict):
        return kind, tuple(sorted((k, _plain(v)) for k, v in inner.items()))
    if isinstance(inner, list):
        return kind, tuple(_plain(v) for v in inner)
    return kind, inner
