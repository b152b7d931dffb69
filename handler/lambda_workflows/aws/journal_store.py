"""The journal: recording entries once, and a restart's claim and copies of a generation.

What makes results exactly-once: a journal entry is written with a conditional put
(``attribute_not_exists``) and is never updated. When the condition fails, DynamoDB hands back
the item already there (``ReturnValuesOnConditionCheckFailure=ALL_OLD``) and that recorded
value is the one everybody continues with: the first writer wins, always. A timeout after
sending leaves the outcome unknown; the retry resolves it (a put that did happen makes the
retry lose to itself and hand back the same entry), never a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lambda_workflows.engine.clock import Clock
from lambda_workflows.engine.errors import StorageError
from lambda_workflows.engine.model import EventRecord, InstanceRef, JournalEntry

from . import items as it
from .boundary import ConditionFailed, call, conditional, write_once

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["JournalStore"]

_BATCH_WRITE = 25  # BatchWriteItem's limit per call
_BATCH_TRIES = 8  # calls per batch before unprocessed items are given up on


@dataclass
class JournalStore:
    """Journal entries and generations of the instances of one table (see the module
    docstring).

    Attributes:
        client: a boto3 DynamoDB client.
        table: the table name.
        clock: the time source (TTL stamps).
    """

    client: DynamoDBClient
    table: str
    clock: Clock

    def record(self, ref: InstanceRef, generation: int, entry: JournalEntry) -> JournalEntry:
        pk = it.instance_pk(ref.workflow, ref.id)
        item, chunks = it.entry_item(pk, generation, entry, self.clock.time())
        put = {
            "TableName": self.table,
            "Item": item,
            # attribute_not_exists(pk): a journal entry is recorded once and never changed;
            # a second writer (duplicate message, concurrent runner) loses and gets ours back.
            "ConditionExpression": "attribute_not_exists(pk)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        try:
            if chunks:
                self._transact(
                    [{"Put": put}, *({"Put": write_once(self.table, c)} for c in chunks)]
                )
            else:
                conditional(lambda: self.client.put_item(**put))  # type: ignore[arg-type]
        except ConditionFailed as lost:
            return self._winner(ref, lost.item, item)
        return entry

    def _winner(
        self, ref: InstanceRef, old: dict[str, Any] | None, mine: dict[str, Any]
    ) -> JournalEntry:
        """The entry that won the race, read back from the failed condition (or the table)."""
        if old is None:  # some SDKs omit ALL_OLD in transactions: read it
            old = call(
                lambda: self.client.get_item(
                    TableName=self.table,
                    Key={"pk": mine["pk"], "sk": mine["sk"]},
                    ConsistentRead=True,
                )
            ).get("Item")
            if old is None:
                raise StorageError(f"journal entry {mine['sk']['S']!r} of {ref} vanished")
        chunks: dict[str, Any] = {}
        if it.has_chunks(old, "result"):
            chunks = self._chunks_of(old)
        return it.journal_entry(old, chunks)

    def _chunks_of(self, owner: dict[str, Any]) -> dict[str, Any]:
        page = call(
            lambda: self.client.query(
                TableName=self.table,
                # the chunk items of one owner: its sort key followed by the chunk mark
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues={
                    ":pk": owner["pk"],
                    ":prefix": it.s(owner["sk"]["S"] + it.CHUNK_MARK),
                },
                ConsistentRead=True,
            )
        )
        return {i["sk"]["S"]: i for i in page.get("Items", [])}

    def claim_generation(self, ref: InstanceRef, generation: int, token: str) -> bool:
        pk = it.instance_pk(ref.workflow, ref.id)
        put = {
            "TableName": self.table,
            "Item": it.claim_item(pk, generation, token, self.clock.time()),
            # attribute_not_exists(pk): one restart per generation; another restart that
            # claimed it first keeps it (and a retry of our own claim finds our token)
            "ConditionExpression": "attribute_not_exists(pk)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        try:
            conditional(lambda: self.client.put_item(**put))  # type: ignore[arg-type]
        except ConditionFailed as taken:
            holder = taken.item
            if holder is None:  # some SDKs omit ALL_OLD: read it
                holder = call(
                    lambda: self.client.get_item(
                        TableName=self.table,
                        Key=it.instance_key(ref, it.claim_sk(generation)),
                        ConsistentRead=True,
                    )
                ).get("Item")
            return holder is not None and it.get_s(holder, "token") == token
        return True

    def seed_generation(
        self,
        ref: InstanceRef,
        generation: int,
        entries: Sequence[JournalEntry],
        events: Sequence[EventRecord],
    ) -> None:
        # Unconditional puts: the generation is claimed by the restart writing it, nobody
        # reads it before the instance moves to it, and writing the same copies twice is
        # harmless.
        pk = it.instance_pk(ref.workflow, ref.id)
        now = self.clock.time()
        items: list[dict[str, Any]] = []
        for entry in entries:
            item, chunks = it.entry_item(pk, generation, entry, now)
            item[it.SEEDED] = {"BOOL": True}  # a copy: no step.completed for it (table_stream)
            items += [item, *chunks]
        for event in events:
            item, chunks = it.event_item(pk, event, now)
            items += [item, *chunks]
        self._batch_write([{"PutRequest": {"Item": item}} for item in items])

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        """BatchWriteItem in calls of 25, sending unprocessed items again (a few times); what
        is still unprocessed after that raises StorageError (a restart's copies: the restart
        fails, nothing moved to them)."""
        for start in range(0, len(requests), _BATCH_WRITE):
            pending = requests[start : start + _BATCH_WRITE]
            for _ in range(_BATCH_TRIES):
                if not pending:
                    break
                answer = call(
                    lambda p=pending: self.client.batch_write_item(  # type: ignore[misc]
                        RequestItems={self.table: p}
                    )
                )
                unprocessed: list[Any] = list(
                    answer.get("UnprocessedItems", {}).get(self.table, [])
                )
                pending = unprocessed
            if pending:
                raise StorageError(f"DynamoDB left {len(pending)} write(s) unprocessed; retry")

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        conditional(lambda: self.client.transact_write_items(TransactItems=actions))  # type: ignore[arg-type]
