"""What a listing page costs: round trips, calls and read units, with and without a status.

One workflow of :data:`INSTANCES` instances on moto (the template's table), the production
store's :data:`~lambda_workflows.aws.shards.INDEX_SHARDS` shards, 1 in 10 of them running and
the rest queued. Measured: a first page of 25 of every status, and a first page of 25 running
ones (1 in 10 match), both with the legacy index still read (the default until a stack has
dropped it, docs/deploy.md) and after.

**Round trips** count the calls a page waits for one after the other: the calls the store sends
together (the first Query of every partition, the BatchGetItem calls of one read) count once,
each other call (a Query topping up a partition) once each. **Read units** are computed from
what each call reads, eventually consistent (half a unit per 4 KB, at least half a unit a
Query): a Query reads the index entries it evaluated (``ScannedCount`` entries, each the size
of an entry with the attributes template.yaml projects), a BatchGetItem each item it returns.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bench.cost_meter import INDEXES, item_size
from lambda_workflows.aws.dynamodb import DynamoStore
from lambda_workflows.aws.shards import INDEX_SHARDS
from lambda_workflows.engine.instances.recovery import QUEUE_GRACE
from lambda_workflows.engine.model import InstanceRecord, InstanceRef, InstanceStatus
from lambda_workflows.testing import WorkflowTestEnv

T = TypeVar("T")
INSTANCES = 1_000
PAGE = 25
WORKFLOW = "orders"
START = 1_767_225_600.0


@dataclass
class Tally:
    """The calls of one listing page, and what they read."""

    entry_size: int
    calls: Counter[str] = field(default_factory=Counter)
    round_trips: int = 0
    read_units: float = 0.0
    together: bool = False

    def sent(self, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1
        if not self.together:
            self.round_trips += 1

    def answered(self, model: Any, parsed: Any, **_: Any) -> None:
        if model.name == "Query":
            size = parsed.get("ScannedCount", 0) * self.entry_size
            self.read_units += max(0.5, math.ceil(size / 4096) * 0.5)
        elif model.name == "BatchGetItem":
            for items in parsed.get("Responses", {}).values():
                self.read_units += sum(math.ceil(item_size(i) / 4096) * 0.5 for i in items)

    def run_together(self, calls: list[Callable[[], T]]) -> list[T]:
        self.round_trips += 1 if calls else 0
        self.together = True
        try:
            return [call() for call in calls]
        finally:
            self.together = False


def populate(store: DynamoStore) -> dict[str, Any]:
    """The workflow's instances, 1 in 10 running; one instance item (to size index entries)."""
    for n in range(INSTANCES):
        at = START + n
        store.create(
            InstanceRecord(
                workflow=WORKFLOW,
                id=f"order-{n:06d}",
                status=InstanceStatus.QUEUED,
                params="{}",
                created_at=at,
                updated_at=at,
                due_at=at + QUEUE_GRACE,
            )
        )
        if n % 10 == 0:
            ref = InstanceRef(WORKFLOW, f"order-{n:06d}")
            assert store.acquire_lease(ref, "bench", at, at + 3600)
    key = {"pk": {"S": f"I#{WORKFLOW}#order-000001"}, "sk": {"S": "I"}}
    return dict(store.client.get_item(TableName=store.table, Key=key)["Item"])


def entry_size(item: dict[str, Any]) -> int:
    """Bytes of one by_created entry: the table's and index's keys, and what it projects."""
    for index, keys, projected in INDEXES:
        if index == "by_created":
            names = projected if isinstance(projected, tuple) else tuple(item)
            return item_size({k: item[k] for k in ("pk", "sk", *keys, *names) if k in item})
    raise LookupError("template.yaml has no by_created index")


def measure(store: DynamoStore, size: int, status: InstanceStatus | None) -> tuple[Tally, int]:
    """One first page of ``PAGE``: what it cost, and how many instances it returned."""
    tally = Tally(size)
    store.client.meta.events.register("before-call.dynamodb", tally.sent)
    store.client.meta.events.register("after-call.dynamodb", tally.answered)
    store._together = tally.run_together  # type: ignore[method-assign]
    try:
        page = store.list_instances(WORKFLOW, status, None, PAGE)
    finally:
        store.client.meta.events.unregister("before-call.dynamodb", tally.sent)
        store.client.meta.events.unregister("after-call.dynamodb", tally.answered)
    return tally, len(page.records)


def main() -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with WorkflowTestEnv({}, backend="aws") as env:
        assert env.aws is not None
        client = env.aws.session.client("dynamodb")
        table = env.aws.settings.table_name
        writer = DynamoStore(client, table, env.clock, index_shards=INDEX_SHARDS)
        size = entry_size(populate(writer))
        print(
            f"A first listing page of {PAGE}: {INSTANCES:,} instances over {INDEX_SHARDS} "
            f"shards, 1 in 10 running; a by_created entry is {size} bytes"
        )
        print(f"{'':34}{'returned':>9}{'round trips':>13}{'read units':>12}  calls")
        for legacy in (True, False):
            store = DynamoStore(
                client, table, env.clock, index_shards=INDEX_SHARDS, legacy_listing=legacy
            )
            store.parallel_writes = False
            store.cursors.sign({"warm": True})  # the signing key's one read, outside the page
            for status in (None, InstanceStatus.RUNNING):
                tally, returned = measure(store, size, status)
                what = "every status" if status is None else "?status=running"
                where = "with the legacy index" if legacy else "after the upgrade"
                calls = ", ".join(f"{op} {n}" for op, n in sorted(tally.calls.items()))
                print(
                    f"  {what:<16}{where:<22}{returned:>5}{tally.round_trips:>13}"
                    f"{tally.read_units:>12.1f}  {calls}"
                )


if __name__ == "__main__":
    main()
