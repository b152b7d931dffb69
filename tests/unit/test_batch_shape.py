"""One shape check for every batch: a create's items and a delete's ids are refused the same
ways (not a list, too many, an item of the wrong type), before anything is written."""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows.engine.errors import InvalidInput
from lambda_workflows.engine.instances.batch_forms import (
    CREATE_BATCH,
    DELETE_BATCH,
    MAX_BATCH,
    check_batch,
    read_batch,
)
from lambda_workflows.engine.instances.deletion import MAX_DELETE_BATCH, check_delete_batch


@pytest.mark.parametrize("shape", [CREATE_BATCH, DELETE_BATCH])
def test_a_batch_that_is_not_a_list_is_refused_with_the_callers_words(shape: Any) -> None:
    for body in ("abc", b"abc", 7, None):
        with pytest.raises(InvalidInput, match=r"^takes a list$"):
            check_batch(body, shape, "takes a list")


def test_both_batches_hold_at_most_the_same_number_of_items() -> None:
    assert MAX_DELETE_BATCH == MAX_BATCH == CREATE_BATCH.limit == DELETE_BATCH.limit == 100


def test_a_create_and_a_delete_refuse_an_oversized_batch_alike() -> None:
    with pytest.raises(InvalidInput, match="a batch holds at most 100 instances, got 101"):
        read_batch([{}] * 101)
    with pytest.raises(InvalidInput, match="a batch deletes at most 100 instances, got 101"):
        check_delete_batch(["a"] * 101)


def test_a_create_and_a_delete_name_the_item_of_the_wrong_type() -> None:
    with pytest.raises(InvalidInput) as created:
        read_batch([{}, "x"])
    assert str(created.value) == (
        "batch item 1 must be an object {id?, params?}, not str; nothing was created"
    )
    with pytest.raises(InvalidInput) as deleted:
        check_delete_batch(["a", 3])
    assert str(deleted.value) == (
        "batch item 1 must be an instance id (a string), not int; nothing was deleted"
    )


def test_a_delete_batch_that_is_not_a_list_says_what_it_takes() -> None:
    with pytest.raises(InvalidInput, match=r"^delete_batch takes a list of instance ids$"):
        check_delete_batch("order-1")


def test_a_well_formed_batch_passes_as_given() -> None:
    assert check_delete_batch(("a", "b", "a")) == ["a", "b", "a"]
    assert check_batch([{"id": "x"}], CREATE_BATCH, "unused") == [{"id": "x"}]
