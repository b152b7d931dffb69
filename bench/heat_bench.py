"""Partition heat: writes per partition key per virtual second at 10,000 transitions/s.

A synthetic load goes through the real ``DynamoStore`` on moto: one workflow, each instance
created (queued), leased (running), its lease renewed, a step recorded, put to sleep
(waiting), leased again, renewed, a second step recorded, finished (complete): five status
transitions and nine writes, the calls and order a runner makes. Every virtual second starts a
new cohort of instances while the two before it take their first and second invocation, so from
the third second on each second holds every kind of write at the steady rate of
:data:`TARGET` transitions.

The writes are counted from the requests the store actually sends (botocore's
``provide-client-params`` event; a write counts once DynamoDB accepted it, ``after-call``):
one write to the table's partition ``pk`` per item written, and for each index the writes
DynamoDB makes to it, from the index key the item had before and has after the write (a shadow
of each item's index attributes, kept from the same requests): an item entering or leaving an
index is one write, an item whose index key changes is two (out of the old key, into the new),
and an item written with its key unchanged is one when an attribute the index projects changed
(as template.yaml declares each index: both project their keys only) and none otherwise.

moto serves a few hundred calls per second, so a run drives ``scale`` of the load (the default,
0.1, is 200 instances per virtual second; ``HEAT_SCALE`` sets it) and multiplies each index
key's count by ``1 / scale`` (an index key is shared by every instance of its shard; a table
key is one instance's partition, whose writes do not grow with the load): the shape of the
spread is the real one, the noise of a smaller sample only makes the hottest key look hotter.
``python -m bench.heat_bench`` prints, before (K = 1: one key per workflow, as the
unsharded key was; the due index over its former 8 shards) and after (the store's K, the due
index's 32 shards), the hottest key of the table and of each index in writes per second, then
the hottest key's share of each listing index's writes for several K. It exits 1 if a key of
the after run takes more than :data:`LIMIT`.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.cost_meter import template_indexes
from lambda_workflows.aws.dynamodb import DynamoStore
from lambda_workflows.aws.shards import INDEX_SHARDS
from lambda_workflows.engine.instances import recovery
from lambda_workflows.engine.instances.recovery import DUE_SHARDS, QUEUE_GRACE
from lambda_workflows.engine.instances.transitions import Finish, Wait
from lambda_workflows.engine.model import (
    EntryKind,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    JournalEntry,
)
from lambda_workflows.testing import VirtualClock

TARGET = 10_000  # instance transitions per virtual second, in one workflow
LIMIT = 1_000  # writes per second one partition takes
TRANSITIONS = 5  # per instance: queued, running, waiting, running, complete
WORKFLOW = "orders"
TABLE = "table"
# index -> (partition key, sort key, projection: True for ALL, else the non-key attributes it
# includes), as template.yaml declares them (its legacy listing indexes hold no item written now)
INDEXES: dict[str, tuple[str, str, bool | tuple[str, ...]]] = {
    index: (*keys, projected) for index, keys, projected in template_indexes()
}
_SHADOWED = frozenset(
    a
    for hash_key, range_key, projected in INDEXES.values()
    for a in (hash_key, range_key, *(projected if isinstance(projected, tuple) else ()))
)
_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}
_CLAUSE = re.compile(r"\b(SET|REMOVE|ADD|DELETE)\b", re.IGNORECASE)
_CHANGED = object()  # an attribute set from an expression (a counter): changed, value unknown


# --- counting writes ----------------------------------------------------------------------


@dataclass
class WriteLog:
    """Writes per (table or index, partition key, virtual second), from the requests sent."""

    clock: VirtualClock
    writes: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    shadow: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def attach(self, client: Any) -> None:
        """Count the writes ``client`` makes from now on."""
        client.meta.events.register("provide-client-params.dynamodb.*", self._sent)
        client.meta.events.register("after-call.dynamodb.*", self._answered)

    def _sent(self, params: Any, model: Any, context: Any, **_: Any) -> None:
        if model.name in _WRITES:
            context["heat"] = (model.name, params)

    def _answered(self, http_response: Any, context: Any, **_: Any) -> None:
        sent = context.get("heat")
        if sent is not None and http_response.status_code < 300:
            for key, change in _item_writes(*sent):
                self._count(key, change)

    def _count(self, key: tuple[str, str], change: Any) -> None:
        second = int(self.clock.time())
        old = self.shadow.get(key)
        new = _applied(old, change)
        if new is None:
            self.shadow.pop(key, None)
        else:
            self.shadow[key] = new
        self.writes[TABLE, key[0], second] += 1
        for index, (hash_key, range_key, projected) in INDEXES.items():
            before = _index_key(old, hash_key, range_key)
            after = _index_key(new, hash_key, range_key)
            if before is not None and before != after:
                self.writes[index, str(before[0]), second] += 1
            if after is not None and (before != after or _rewritten(old, new, projected)):
                self.writes[index, str(after[0]), second] += 1


def _item_writes(operation: str, params: Any) -> Iterator[tuple[tuple[str, str], Any]]:
    """(item key, change) for each item a write request writes: a change is ("put", item),
    ("update", params) or ("delete", None)."""
    if operation == "PutItem":
        yield _key(params["Item"]), ("put", params["Item"])
    elif operation == "UpdateItem":
        yield _key(params["Key"]), ("update", params)
    elif operation == "DeleteItem":
        yield _key(params["Key"]), ("delete", None)
    elif operation == "TransactWriteItems":
        for action in params["TransactItems"]:
            if "Put" in action:
                yield _key(action["Put"]["Item"]), ("put", action["Put"]["Item"])
            elif "Update" in action:
                yield _key(action["Update"]["Key"]), ("update", action["Update"])
            elif "Delete" in action:
                yield _key(action["Delete"]["Key"]), ("delete", None)
    else:  # BatchWriteItem (moto processes every item)
        for requests in params["RequestItems"].values():
            for request in requests:
                if "PutRequest" in request:
                    item = request["PutRequest"]["Item"]
                    yield _key(item), ("put", item)
                else:
                    yield _key(request["DeleteRequest"]["Key"]), ("delete", None)


def _key(item: Any) -> tuple[str, str]:
    return str(item["pk"]["S"]), str(item["sk"]["S"])


def _applied(old: dict[str, Any] | None, change: Any) -> dict[str, Any] | None:
    """The item's index attributes after ``change``."""
    kind, body = change
    if kind == "delete":
        return None
    if kind == "put":
        return {a: _value(v) for a, v in body.items() if a in _SHADOWED}
    new = dict(old or {})
    names = body.get("ExpressionAttributeNames", {})
    values = body.get("ExpressionAttributeValues", {})
    parts = _CLAUSE.split(body["UpdateExpression"])
    for clause, text in zip(parts[1::2], parts[2::2], strict=True):
        for action in _top_level(text):
            if clause.upper() == "SET":
                target, _, source = action.partition("=")
                name = names.get(target.strip(), target.strip())
                source = source.strip()
                new[name] = _value(values[source]) if source in values else _CHANGED
            elif clause.upper() == "REMOVE":
                new.pop(names.get(action.strip(), action.strip()), None)
            else:  # ADD / DELETE: a counter or a set, never an index key here
                name = action.split()[0]
                new[names.get(name, name)] = _CHANGED
    return {a: v for a, v in new.items() if a in _SHADOWED}


def _top_level(text: str) -> list[str]:
    """The comma-separated actions of a clause (commas inside function calls kept)."""
    actions, depth, current = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            actions.append(current)
            current = ""
        else:
            current += char
    return [a for a in [*actions, current] if a.strip()]


def _value(value: Any) -> Any:
    return value.get("S", value.get("N", repr(value))) if isinstance(value, dict) else value


def _rewritten(
    old: dict[str, Any] | None, new: dict[str, Any] | None, projected: bool | tuple[str, ...]
) -> bool:
    """Whether an index entry whose key stayed is written again: always for ALL (any
    change), else when an attribute it includes changed."""
    if projected is True:
        return True
    names = projected if isinstance(projected, tuple) else ()
    return any(
        (old or {}).get(a) != (new or {}).get(a) or (new or {}).get(a) is _CHANGED for a in names
    )


def _index_key(item: dict[str, Any] | None, hash_key: str, range_key: str) -> Any:
    if item is None or hash_key not in item or range_key not in item:
        return None
    return item[hash_key], item[range_key]


# --- the load -----------------------------------------------------------------------------


@dataclass
class Heat:
    """What one run counted, in writes per virtual second (scaled to the full load)."""

    shards: int
    scale: float
    writes: Counter[tuple[str, str, int]]
    steady: range  # the virtual seconds that hold every kind of write

    def per_second(self, target: str) -> Counter[tuple[str, int]]:
        """Writes per (key, second) of the table or one index, steady seconds only."""
        found: Counter[tuple[str, int]] = Counter()
        for (where, key, second), count in self.writes.items():
            if where == target and second in self.steady:
                found[key, second] += count
        return found

    def hottest(self, target: str) -> tuple[str, float]:
        """The hottest key of ``target`` and its writes per second (the busiest second)."""
        (key, _), count = self.per_second(target).most_common(1)[0]
        # An index key is shared by every instance of its shard: the full load multiplies its
        # writes. A table key is one instance's partition: its writes do not grow with the load.
        return key, count if target == TABLE else count / self.scale

    def share(self, target: str) -> float:
        """The hottest key's share of all of ``target``'s writes (steady seconds)."""
        by_key: Counter[str] = Counter()
        for (key, _), count in self.per_second(target).items():
            by_key[key] += count
        return max(by_key.values()) / sum(by_key.values())


class HeatModel:
    """One embedded AWS (moto) on which to run the load several times, each run on a workflow
    of its own (so no run counts another's writes)."""

    def __init__(self) -> None:
        from tests.simulation import fastmoto

        from lambda_workflows.local.embedded import EmbeddedAws

        fastmoto.install()  # moto, several times cheaper per call, same answers
        self.clock = VirtualClock(1_767_225_600.0)  # a whole second: cohorts fill buckets
        self.aws = EmbeddedAws({}, self.clock)
        self.runs = 0

    def __enter__(self) -> HeatModel:
        return self

    def __exit__(self, *_: object) -> None:
        self.aws.close()

    def run(
        self, shards: int, scale: float, seconds: int = 1, due_shards: int | None = None
    ) -> Heat:
        """Drive ``seconds`` steady virtual seconds of the load (after the two that fill the
        pipeline) through a DynamoStore with ``shards`` index shards; count every write.
        ``due_shards`` replaces the due index's shard count for the run (the store's before
        this change: 8)."""
        saved = recovery.DUE_SHARDS
        recovery.DUE_SHARDS = due_shards or saved
        try:
            return self._run(shards, scale, seconds)
        finally:
            recovery.DUE_SHARDS = saved

    def _run(self, shards: int, scale: float, seconds: int) -> Heat:
        self.runs += 1
        workflow = f"{WORKFLOW}{self.runs}"
        client = self.aws.session.client("dynamodb")
        table = self.aws.settings.table_name
        store = DynamoStore(client, table, self.clock, parallel_writes=False, index_shards=shards)
        log = WriteLog(self.clock)
        log.attach(client)
        self.clock.set(int(self.clock.time()) + 1)
        start = self.clock.time()
        cohort = max(1, round(TARGET / TRANSITIONS * scale))
        for second in range(seconds + 2):
            for i in range(cohort):
                self.clock.set(start + second + i / cohort)  # spread over the second
                _create(store, InstanceRef(workflow, _id(second, i)), self.clock.time())
                for age, finish in ((1, False), (2, True)):
                    if second >= age:
                        ref = InstanceRef(workflow, _id(second - age, i))
                        _invoke(store, ref, self.clock.time(), finish=finish)
        first = int(start) + 2
        return Heat(shards, scale, log.writes, range(first, first + seconds))


def _id(cohort: int, i: int) -> str:
    return f"c{cohort:03d}-{i:05d}"


def _create(store: DynamoStore, ref: InstanceRef, now: float) -> None:
    store.create(
        InstanceRecord(
            workflow=ref.workflow,
            id=ref.id,
            status=InstanceStatus.QUEUED,
            params='{"order": 1}',
            created_at=now,
            updated_at=now,
            due_at=now + QUEUE_GRACE,
        )
    )


def _invoke(store: DynamoStore, ref: InstanceRef, now: float, *, finish: bool) -> None:
    """One runner invocation: lease, renew, record a step, then sleep or finish."""
    owner = f"runner-{ref.id}-{finish}"
    record = store.acquire_lease(ref, owner, now, now + 60)
    assert record is not None, f"{ref} could not be leased"
    renewed = store.renew_lease(ref, owner, now + 120)
    assert renewed is not None
    step = "b" if finish else "a"
    entry = JournalEntry(key=f"{step}\x1f1", kind=EntryKind.STEP, name=step, count=1, at=now)
    store.record(ref, renewed.generation, entry)
    change = (
        Finish(InstanceStatus.COMPLETE, 86_400.0, output="1").change(renewed, now)
        if finish
        else Wait(now + 1).change(renewed, now)
    )
    assert change is not None
    assert store.update(ref, renewed.version, change) is not None, f"{ref} moved meanwhile"


# --- the report ---------------------------------------------------------------------------

TARGETS = (TABLE, *INDEXES)
LISTINGS = ("by_created",)  # the index K spreads


BEFORE_DUE_SHARDS = 8  # the due index's shards before this change
SWEEP = (2, 4, 8, 16, 64)  # more K for the share table (its own, smaller scale)


def main() -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    scale = float(os.environ.get("HEAT_SCALE", "0.1"))
    print(
        f"Partition heat: {TARGET:,} instance transitions per virtual second in one workflow "
        f"(DynamoStore on moto, driven at scale {scale}, index counts scaled back); one "
        f"partition takes ~{LIMIT:,} writes/s"
    )
    began = time.perf_counter()
    with HeatModel() as model:
        before = model.run(1, scale, due_shards=BEFORE_DUE_SHARDS)
        after = model.run(INDEX_SHARDS, scale)
        sweep = [before, after, *(model.run(k, scale / 5) for k in SWEEP)]
    print("\nBefore: one listing key per workflow, the due index over 8 shards.")
    print(f"After: K={INDEX_SHARDS} shards per index key, the due index over {DUE_SHARDS}.")
    print(f"\n{'':<12} {'before: hottest key':<28}{'writes/s':>9}   ", end="")
    print(f"{'after: hottest key':<28}{'writes/s':>9}")
    worst = 0.0
    for target in TARGETS:
        (old_key, old_rate), (key, rate) = before.hottest(target), after.hottest(target)
        worst = max(worst, rate)
        print(f"{target:<12} {old_key:<28}{old_rate:>9,.0f}   {key:<28}{rate:>9,.0f}")
    print("\nThe hottest key's share of each listing index's writes, by K:")
    print(f"{'K':>4} {'scale':>6}" + "".join(f"{t:>13}" for t in LISTINGS))
    for heat in sorted(sweep, key=lambda h: h.shards):
        shares = "".join(f"{heat.share(t):>13.1%}" for t in LISTINGS)
        print(f"{heat.shards:>4} {heat.scale:>6.2f}{shares}")
    verdict = "under" if worst <= LIMIT else "OVER"
    print(
        f"\nK={INDEX_SHARDS}: the hottest key takes {worst:,.0f} writes/s, {verdict} the "
        f"{LIMIT:,}/s a partition takes ({time.perf_counter() - began:.0f} s)"
    )
    sys.exit(0 if worst <= LIMIT else 1)


if __name__ == "__main__":
    main()
