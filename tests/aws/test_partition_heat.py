"""The partition-heat model (bench/heat_bench.py): at 10,000 instance transitions per virtual
second in one workflow, driven through the real DynamoStore on moto, no partition key of the
table or of any index takes more than ~1,000 writes per second with the store's K, and the
hottest key's share of an index's writes falls as K grows. Counts, not timings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bench.heat_bench import INDEXES, LIMIT, TABLE, TARGET, TRANSITIONS, Heat, HeatModel

from lambda_workflows.aws.shards import INDEX_SHARDS


@pytest.fixture(scope="module")
def model() -> Iterator[HeatModel]:
    with HeatModel() as made:
        yield made


@pytest.fixture(scope="module")
def sharded(model: HeatModel) -> Heat:
    return model.run(INDEX_SHARDS, scale=0.05)


def test_the_model_drives_the_target_rate_of_transitions(sharded: Heat) -> None:
    # each steady second: a cohort created, one invoked a first time, one a second time; the
    # instance items of all three are written (1 + 4 + 4 writes per instance of a cohort)
    cohort = TARGET / TRANSITIONS * sharded.scale
    table_writes = sum(sharded.per_second(TABLE).values())
    assert table_writes == cohort * 9
    assert cohort * TRANSITIONS / sharded.scale == 10_000


def test_with_the_store_k_no_key_takes_more_than_a_partition_does(sharded: Heat) -> None:
    rates = {target: sharded.hottest(target)[1] for target in (TABLE, *INDEXES)}

    assert all(rate <= LIMIT for rate in rates.values()), rates
    assert rates[TABLE] <= 5  # one instance's partition: its own few writes


def test_unsharded_keys_take_more_than_a_partition_does(model: HeatModel) -> None:
    before = model.run(1, scale=0.01)

    # by_created (keys only) is written by creations alone: one key per workflow takes every
    # creation, twice what a partition takes at the target rate (five times, when it still
    # projected the status and every transition rewrote it)
    assert before.hottest("by_created")[1] == TARGET / TRANSITIONS > LIMIT


def test_the_hottest_keys_share_falls_as_k_grows(model: HeatModel, sharded: Heat) -> None:
    runs = [model.run(k, scale=0.01) for k in (1, 4)] + [sharded]

    for index in ("by_created",):
        shares = [heat.share(index) for heat in runs]
        assert shares == sorted(shares, reverse=True), (index, shares)
        assert shares[0] > 4 * shares[-1], (index, shares)
    assert runs[0].share("by_created") == 1.0
