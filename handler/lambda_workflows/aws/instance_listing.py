"""Reading a listing page from the indexes, and moving items off the legacy listing indexes.

A listing (:class:`lambda_workflows.aws.shards.Listing`) reads the ``by_created`` partitions of
its workflow (keys only) and, while a stack upgrades, the legacy ``by_workflow`` partitions
(whole items). The entries' own items are read whole with BatchGetItem (up to 100 keys a call;
a page of 25 is one call), so an unfiltered page costs one round trip of Queries (sent
together) and one BatchGetItem.

**A status filter** cannot be a FilterExpression: ``by_created`` projects no status (so that a
status change never writes it). A filtered page reads entries newest first in rounds, reads
their items, and keeps those of the status: the first round reads ``limit`` entries (as if all
matched), each later one as many as the matches seen so far say it needs, and a page reads at
most :data:`FILTERED_READ` entries (or ``limit``, if larger). A page that reached that bound
before it filled up is shorter than ``limit`` (even empty) and carries a cursor: the listing
goes on below the last entry it read, so no instance is skipped or repeated. Every caller
(the API, the CLI, the dashboard, the describe counts) follows cursors until there is none.

:meth:`ListingIndexes.upgrade_legacy` is the recovery sweep's part of the upgrade
(docs/deploy.md): each sweep moves up to a budget of items from the legacy indexes to
``by_created``.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lambda_workflows.engine.errors import StorageError

from . import items as it
from .boundary import ConditionFailed, call, conditional
from .errors import error_code, translate
from .listing import Merge, Position, Together
from .shards import Listing, Partition, created_partition, index_shard

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["FILTERED_READ", "ListingIndexes"]

Item = dict[str, Any]

FILTERED_READ = 500
"""Entries one page of a status-filtered listing reads at most (or its ``limit``, if larger):
five BatchGetItem calls, sent together, about 250 read units for items under 4 KB."""

LEGACY_INDEX = "by_workflow"  # the legacy listing index a listing still reads

_BATCH_GET = 100  # BatchGetItem's limit per call
_BATCH_TRIES = 8  # calls before unprocessed keys are given up on (an error, never a short page)
_MARGIN = 1.25  # a filtered round reads this much more than the matches seen so far predict


class ListingIndexes:
    """The listing indexes of one table: reads a listing's pages, moves items off the legacy
    indexes (see the module docstring)."""

    def __init__(self, client: DynamoDBClient, table: str, shards: int) -> None:
        self.client = client
        self.table = table
        self.shards = shards
        self.legacy_gone = False  # the legacy index was found dropped (after the upgrade)

    def page(
        self, listing: Listing, position: Position, limit: int, together: Together[Any]
    ) -> tuple[list[Item], Position | None]:
        """The next ``limit`` instance items of ``listing``, newest first, whole, and where the
        page after starts (None: there is none). A status-filtered page may be shorter (see
        the module docstring)."""
        if listing.status is None:
            merge = self._merge(listing, position, together)
            entries = merge.take(limit)
            return self._whole(entries, together), merge.position()
        return self._filtered(listing, listing.status, position, limit, together)

    def _merge(self, listing: Listing, position: Position, together: Together[Any]) -> Merge:
        """The merge of ``listing``'s partitions (newest first) from ``position``."""
        partitions = listing.partitions(self.shards)

        def query(number: int, start: Item | None, asked: int) -> tuple[list[Item], Item | None]:
            found = self._query(partitions[number], position.after, start, asked)
            return found.get("Items", []), found.get("LastEvaluatedKey")

        if listing.status is None:
            return Merge(query, len(partitions), position, "lsk", together)
        # a filtered page reads its entries in rounds: each asks the shards (where the
        # entries are; the legacy partitions hold few) for about their share of the round
        return Merge(query, len(partitions), position, "lsk", together, spread=self.shards)

    def _filtered(
        self,
        listing: Listing,
        status: str,
        position: Position,
        limit: int,
        together: Together[Any],
    ) -> tuple[list[Item], Position | None]:
        """Up to ``limit`` items of ``status``, reading at most ``max(limit, FILTERED_READ)``
        entries, and where the listing goes on (None: nothing is left to read)."""
        budget = max(limit, FILTERED_READ)
        merge = self._merge(listing, position, together)
        kept: list[Item] = []
        read = 0
        while len(kept) < limit and read < budget:
            wanted = limit - len(kept)
            count = min(budget - read, _round(wanted, read, len(kept)))
            done = merge.done()  # partitions with nothing below any entry this round reads
            # an index entry is ~70 bytes, so a Query returning under 4 KB of them costs what
            # one returning a single entry does: ask each shard for twice its share
            entries = merge.take(count, share=2 * math.ceil(count / self.shards) + 1)
            if not entries:
                break
            read += len(entries)
            whole = self._whole(entries, together)
            matching = [i for i in whole if it.get_s(i, "status") == status]
            if len(matching) > wanted:
                # more than the page holds: it ends at its last match, and the next page
                # starts below it
                kept += matching[:wanted]
                return kept, Position(str(kept[-1]["lsk"]["S"]), done)
            kept += matching
        return kept, merge.position()

    def _query(
        self,
        partition: Partition,
        below: str | None,
        start: Item | None,
        limit: int,
    ) -> Any:
        """One newest-first Query of one partition, of what sorts below ``below``."""
        condition = f"{partition.key} = :v"
        values: Item = {":v": it.s(partition.value)}
        if below is not None:
            # below the last instance the previous page returned: the order is total
            condition += f" AND {partition.sort_key} < :below"
            values[":below"] = it.s(below)
        query: Item = {
            "TableName": self.table,
            "IndexName": partition.index,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if start is not None:
            query["ExclusiveStartKey"] = start
        if partition.index == LEGACY_INDEX and self.legacy_gone:
            return {}
        try:
            found = self.client.query(**query)
        except ClientError as exc:
            if partition.index == LEGACY_INDEX and _no_index(exc):
                self.legacy_gone = True  # dropped after the upgrade: it holds nothing
                return {}
            raise translate(exc, "DynamoDB") from exc
        except BotoCoreError as exc:
            raise translate(exc, "DynamoDB") from exc
        if partition.sort_key != "lsk":  # a legacy entry sorts by gsi2sk: the same value
            for item in found.get("Items", []):
                item["lsk"] = item[partition.sort_key]
        return found

    def _whole(self, entries: list[Item], together: Together[Any]) -> list[Item]:
        """The items of ``entries``, in their order: ``by_created`` entries are read with
        BatchGetItem, up to 100 keys a call, the calls sent together (legacy entries are
        already whole). An item deleted since its entry was read is left out."""
        wanted = [e for e in entries if "version" not in e]
        batches = [
            [{"pk": e["pk"], "sk": e["sk"]} for e in wanted[i : i + _BATCH_GET]]
            for i in range(0, len(wanted), _BATCH_GET)
        ]
        read: dict[tuple[str, str], Item] = {}
        for found in together([functools.partial(self._batch_get, keys) for keys in batches]):
            for item in found:
                read[item["pk"]["S"], item["sk"]["S"]] = item
        whole = []
        for entry in entries:
            item = entry if "version" in entry else read.get((entry["pk"]["S"], entry["sk"]["S"]))
            if item is not None and not it.is_deleted(item):
                item.setdefault("lsk", entry["lsk"])
                whole.append(item)
        return whole

    def _batch_get(self, keys: list[Item]) -> list[Item]:
        found: list[Item] = []
        asked: Item = {self.table: {"Keys": keys}}
        for _ in range(_BATCH_TRIES):
            answer = call(lambda a=asked: self.client.batch_get_item(RequestItems=a))  # type: ignore[misc]
            found.extend(answer.get("Responses", {}).get(self.table, []))
            asked = answer.get("UnprocessedKeys") or {}
            if not asked:
                return found
        raise StorageError(
            f"DynamoDB left {len(asked.get(self.table, {}).get('Keys', []))} listed item(s) "
            f"unread after {_BATCH_TRIES} BatchGetItem calls (throttled); list again shortly"
        )

    def upgrade_legacy(self, limit: int) -> int:
        """Move up to ``limit`` instance items off the legacy listing indexes to ``by_created``;
        return how many moved. Reads a page of the legacy ``by_workflow`` index (a Scan of a sparse
        index reads only its entries; a moved item leaves it, so each sweep starts again from the
        top) and writes each item once."""
        if self.legacy_gone:
            return 0
        try:
            page = self.client.scan(TableName=self.table, IndexName=LEGACY_INDEX, Limit=limit)
        except ClientError as exc:
            if _no_index(exc):
                self.legacy_gone = True
                return 0  # the legacy index is gone (dropped after the upgrade): nothing to move
            raise translate(exc, "DynamoDB") from exc
        except BotoCoreError as exc:
            raise translate(exc, "DynamoDB") from exc
        moved = 0
        for entry in page.get("Items", []):
            moved += self._move(entry)
        return moved

    def _move(self, entry: Item) -> int:
        """Move one item to ``by_created``: 1, or 0 when it had left the legacy index already."""
        shard = index_shard(entry["id"]["S"], self.shards)
        try:
            conditional(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key={"pk": entry["pk"], "sk": entry["sk"]},
                    # the listing keys only: no other writer reads or writes them, so this needs no
                    # version; the sort key is the legacy one's value (the same format)
                    UpdateExpression=(
                        "SET lpk = :lpk, lsk = gsi2sk REMOVE gsi1pk, gsi1sk, gsi2pk, gsi2sk"
                    ),
                    # still on the legacy index: a copy of this entry read twice (an index is read
                    # eventually consistent) or an item deleted since (a tombstone has no listing
                    # keys) is left alone
                    ConditionExpression="attribute_exists(gsi2pk) AND attribute_exists(gsi2sk)",
                    ExpressionAttributeValues={
                        ":lpk": it.s(created_partition(entry["workflow"]["S"], shard))
                    },
                )
            )
        except ConditionFailed:
            return 0
        return 1


def _round(wanted: int, read: int, kept: int) -> int:
    """Entries the next round of a filtered page reads to find ``wanted`` more matches, from
    what the rounds before found (``kept`` matches in ``read`` entries: the share of matches
    estimated as (kept + 1) / (read + 1), so that a first round with none still bounds it)."""
    if read == 0:
        return wanted  # the first round: as if every entry matched (no read wasted if so)
    return math.ceil(wanted * (read + 1) / (kept + 1) * _MARGIN)


def _no_index(exc: ClientError) -> bool:
    """True when DynamoDB refused a read of an index the table does not have (a
    ValidationException; moto says ResourceNotFoundException)."""
    codes = ("ValidationException", "ResourceNotFoundException")
    return error_code(exc) in codes and "index" in str(exc).lower()
