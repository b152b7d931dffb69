"""The one boundary of the instance table's adapters (lambda_workflows.aws.boundary), on moto.

A failed condition is a lost race the adapter handles (ConditionFailed, with what the write
found); every other failure is the library's StorageError, to retry.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from lambda_workflows.aws import items as it
from lambda_workflows.aws.boundary import ConditionFailed, call, conditional, write_once
from lambda_workflows.aws.dynamodb import DynamoStore
from lambda_workflows.engine.errors import StorageError
from tests.aws_faults import AwsCall, attach, play

TAKEN = {"pk": it.s("I#orders#taken"), "sk": it.s("I"), "note": it.s("first")}
FREE = {"pk": it.s("I#orders#free"), "sk": it.s("I"), "note": it.s("second")}


def put_new(store: DynamoStore, item: dict[str, Any]) -> Any:
    """A put on the condition that the item's key is free, handing back what it found."""
    return store.client.put_item(
        TableName=store.table,
        Item=item,
        ConditionExpression="attribute_not_exists(pk)",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )


def read(store: DynamoStore, item: dict[str, Any]) -> Any:
    key = {"pk": item["pk"], "sk": item["sk"]}
    answer = store.client.get_item(TableName=store.table, Key=key, ConsistentRead=True)
    return answer.get("Item")


def test_a_write_whose_condition_fails_is_a_lost_race_with_the_item_it_found(
    store: DynamoStore,
) -> None:
    # GIVEN an item already there
    conditional(lambda: put_new(store, TAKEN))
    # WHEN a second conditional put of the same key is sent
    with pytest.raises(ConditionFailed) as lost:
        conditional(lambda: put_new(store, {**TAKEN, "note": it.s("late")}))
    # THEN it lost the race, and carries the winner's item (ALL_OLD)
    assert lost.value.item == TAKEN
    assert lost.value.indexes == [0]
    assert read(store, TAKEN) == TAKEN


def test_a_transaction_cancelled_by_a_condition_names_each_failed_action(
    store: DynamoStore,
) -> None:
    conditional(lambda: put_new(store, TAKEN))
    taken = write_once(store.table, TAKEN) | {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    actions: Any = [{"Put": write_once(store.table, FREE)}, {"Put": taken}]
    with pytest.raises(ConditionFailed) as lost:
        conditional(lambda: store.client.transact_write_items(TransactItems=actions))
    # only the second action failed; the first one was not written either
    assert lost.value.indexes == [1]
    assert lost.value.old_item(0) is None
    assert lost.value.old_item(1) == TAKEN == lost.value.item
    assert read(store, FREE) is None


@pytest.mark.parametrize("kind", ["throttle", "server_error", "unreachable", "timeout"])
def test_any_other_failure_is_a_storage_error_to_retry(store: DynamoStore, kind: str) -> None:
    # GIVEN every DynamoDB call failing as `kind` (a timeout: after the call happened)
    faults = iter(range(100))

    def before(made: AwsCall) -> Any:
        return None if kind == "timeout" else play(kind, made, next(faults))

    def after(made: AwsCall, status: int) -> None:
        if kind == "timeout":
            play(kind, made)

    attach(store.client, before, after)
    # THEN neither a read nor a conditional write reports a lost race: both say to retry
    with pytest.raises(StorageError, match="retry"):
        call(lambda: read(store, TAKEN))
    with pytest.raises(StorageError, match="retry"):
        conditional(lambda: put_new(store, TAKEN))


def test_a_transaction_cancelled_for_another_reason_is_a_storage_error(
    store: DynamoStore,
) -> None:
    # GIVEN a transaction DynamoDB cancels for throttling, not for a condition
    reasons = [{"Code": "None"}, {"Code": "ThrottlingError", "Message": "throughput exceeded"}]
    cancelled = {
        "Error": {"Code": "TransactionCanceledException", "Message": "cancelled (injected)"},
        "CancellationReasons": reasons,
        "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": {}},
    }

    def before(made: AwsCall) -> Any:
        raise ClientError(cancelled, made.operation)  # type: ignore[arg-type]

    attach(store.client, before, lambda made, status: None)
    actions: Any = [{"Put": write_once(store.table, FREE)}]
    # THEN it is the library's error, never a lost race the adapter would act on
    with pytest.raises(StorageError, match="TransactionCanceledException"):
        conditional(lambda: store.client.transact_write_items(TransactItems=actions))
