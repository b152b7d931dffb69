"""The cost bench's meter: every AWS call of a runtime counted, and what DynamoDB bills for it.

Botocore hooks on the runtime's clients count each call and read its parameters and answer.
DynamoDB write units come from the size of each item written (1 KB a unit; 2 in a
transaction; an update costs the larger of the item before and after), plus the index writes
it causes (by_created and by_due project the instance item's keys only: an
index entry is written when its key or a projected attribute changes, and one whose key
changes is a delete and a put); read units from the size of what each
read returns (4 KB a unit, strongly consistent). Each call is preceded by LATENCY slept, and
the time moto spends answering in-process is kept apart, so that a runner's billed duration
can be read off :meth:`Meter.spent`.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

LATENCY = 0.005  # seconds slept before every AWS call: about one DynamoDB request from Lambda
LEGACY_INDEXES = ("by_status", "by_workflow")  # hold no item this version writes


def template_indexes() -> tuple[tuple[str, tuple[str, str], bool | tuple[str, ...]], ...]:
    """(index, its key attributes, projection: True for ALL, else the non-key attributes it
    includes) of the table's indexes, read from template.yaml (the packaged copy, the same
    bytes), so that a projection changed there is billed here. The legacy listing indexes
    are left out: no item this version writes carries their keys."""
    from lambda_workflows.infra.template import load_template

    table = load_template()["Resources"]["Table"]["Properties"]
    found = []
    for index in table["GlobalSecondaryIndexes"]:
        if index["IndexName"] in LEGACY_INDEXES:
            continue
        hash_key, range_key = (k["AttributeName"] for k in index["KeySchema"])
        projection = index["Projection"]
        projected: bool | tuple[str, ...] = projection["ProjectionType"] == "ALL" or tuple(
            projection.get("NonKeyAttributes", ())
        )
        found.append((index["IndexName"], (hash_key, range_key), projected))
    return tuple(found)


INDEXES = template_indexes()


def attribute_size(value: dict[str, Any]) -> int:
    """Bytes DynamoDB counts for one attribute value (its published item-size rules)."""
    kind, inner = next(iter(value.items()))
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        digits = inner.lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + attribute_size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(attribute_size(v) + 1 for v in inner)
    return sum(attribute_size({kind[0]: v}) for v in inner)  # SS, NS, BS


def item_size(item: dict[str, Any]) -> int:
    """Bytes of an item: its attribute names and values."""
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


def write_units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


@dataclass
class Meter:
    """Counts the calls of a runtime's clients and what DynamoDB bills for them."""

    peek: Any  # an unhooked DynamoDB client: reads the item an update left, for the indexes
    table: str
    calls: Counter[str] = field(default_factory=Counter)
    write_units: float = 0.0
    index_write_units: float = 0.0
    read_units: float = 0.0
    moto_seconds: float = 0.0  # spent answering in-process: a real deployment pays none
    slept_over: float = 0.0  # injected sleeps beyond LATENCY (a busy machine oversleeps)
    sleeping_bytes: int = 0  # stored when the instance went to sleep
    counting: bool = True  # False: the bench's own reads (its final status check)
    reaping: bool = False  # True: the reaper's calls, once the instance item expired
    reap_calls: Counter[str] = field(default_factory=Counter)
    reap_write_units: float = 0.0
    reap_read_units: float = 0.0
    images: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, runtime: Any) -> None:
        clients = {
            "dynamodb": runtime.store.client,
            "sqs": runtime.queue.client,
            "scheduler": runtime.wakeups.client,
        }
        if runtime.queue.direct is not None:  # work due now: a direct invoke of the runner
            clients["lambda"] = runtime.queue.direct.client
        for service, client in clients.items():
            events = client.meta.events
            events.register(f"before-parameter-build.{service}", self._asked)
            events.register(f"before-call.{service}", self._before)
            events.register(f"after-call.{service}", self._after(service))

    def _asked(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["cost_params"] = params

    def _before(self, context: dict[str, Any], **_: Any) -> None:
        if not self.counting:
            return
        started = time.perf_counter()
        time.sleep(LATENCY)
        context["cost_started"] = now = time.perf_counter()
        with self.lock:
            self.slept_over += now - started - LATENCY

    def _after(self, service: str) -> Callable[..., None]:
        def after(model: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
            if not self.counting:
                return
            elapsed = time.perf_counter() - context.get("cost_started", time.perf_counter())
            with self.lock:
                self.moto_seconds += elapsed
                if self.reaping:
                    self.reap_calls[f"{service}.{model.name}"] += 1
                    self._bill_reaping(model.name, context.get("cost_params", {}), parsed)
                    return
                self.calls[f"{service}.{model.name}"] += 1
                if service == "dynamodb":
                    self._bill(model.name, context.get("cost_params", {}), parsed)

        return after

    # --- what DynamoDB bills ----------------------------------------------------------

    def _bill(self, operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        if operation in ("Query", "GetItem"):
            found = parsed.get("Items") or ([parsed["Item"]] if "Item" in parsed else [])
            self.read_units += max(1, math.ceil(sum(map(item_size, found)) / 4096))
        elif operation == "PutItem":
            self._written(params["Item"], 1)
        elif operation == "UpdateItem":
            self._updated(params["Key"], 1)
        elif operation == "TransactWriteItems":
            for action in params["TransactItems"]:
                if "Put" in action:
                    self._written(action["Put"]["Item"], 2)
                elif "Update" in action:
                    self._updated(action["Update"]["Key"], 2)
        elif operation == "BatchWriteItem":
            for request in next(iter(params["RequestItems"].values())):
                self._written(request.get("PutRequest", {}).get("Item", {}), 1)

    def _bill_reaping(self, operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        """The reaper's reads, and its deletes: a write unit per KB of the item deleted."""
        if operation == "Query":
            found = parsed.get("Items") or []
            # the read units of the items whole: a projection does not make a read cheaper
            pk = params["ExpressionAttributeValues"][":pk"]["S"]
            whole = [self.images.get((pk, i["sk"]["S"]), i) for i in found]
            self.reap_read_units += max(1, math.ceil(sum(map(item_size, whole)) / 4096))
        elif operation == "DeleteItem":
            key = (params["Key"]["pk"]["S"], params["Key"]["sk"]["S"])
            self.reap_write_units += write_units(item_size(self.images.get(key) or params["Key"]))

    def _written(self, item: dict[str, Any], factor: int) -> None:
        if not item:
            self.write_units += factor
            return
        key = (item["pk"]["S"], item["sk"]["S"])
        self.write_units += factor * write_units(item_size(item))
        self._index(self.images.get(key), item)
        self.images[key] = item

    def _updated(self, key: dict[str, Any], factor: int) -> None:
        ident = (key["pk"]["S"], key["sk"]["S"])
        old = self.images.get(ident, {})
        new = self.peek.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
        new = new or {}
        self.write_units += factor * write_units(max(item_size(old), item_size(new)))
        self._index(old or None, new)
        self.images[ident] = new
        if new.get("status") == {"S": "waiting"}:
            self.sleeping_bytes = self.stored_bytes()

    def _index(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """Index writes of one item changing from ``old`` to ``new``."""
        for _, keys, whole in INDEXES:
            before = _entry(old, keys, whole)
            after = _entry(new, keys, whole)
            if before == after:
                continue
            moved = before and after and any(before[k] != after[k] for k in keys)
            if before and (moved or not after):
                self.index_write_units += write_units(item_size(before))
            if after:
                self.index_write_units += write_units(item_size(after))

    def spent(self) -> float:
        """A clock of what a deployment would be billed for: wall time, less moto's answers
        and less what the injected sleeps overslept (each call waits LATENCY exactly)."""
        return time.perf_counter() - self.moto_seconds - self.slept_over

    def stored_bytes(self, prefix: str = "") -> int:
        """Bytes stored now for the items written (whose sort key starts with ``prefix``):
        table and index copies, 100 bytes of overhead each (what storage is billed on)."""
        total = 0
        for (_, sk), item in self.images.items():
            if not item or not sk.startswith(prefix):
                continue
            total += item_size(item) + 100
            for _, keys, whole in INDEXES:
                entry = _entry(item, keys, whole)
                total += item_size(entry) + 100 if entry else 0
        return total


def _entry(
    item: dict[str, Any] | None, keys: tuple[str, ...], projected: bool | tuple[str, ...]
) -> dict[str, Any]:
    """The index entry an item has (empty when it lacks the index's keys)."""
    if not item or any(k not in item for k in keys):
        return {}
    if projected is True:
        return item
    names = projected if isinstance(projected, tuple) else ()
    return {k: item[k] for k in ("pk", "sk", *keys, *names) if k in item}
