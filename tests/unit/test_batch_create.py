"""``create_batch`` answers for each item: an item that cannot be created is reported in
``errors`` by its index and a code, the others are created; only a batch that is malformed as a
whole (not a list, over 100 items, an item that is not an object) is refused, writing nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from lambda_workflows import InvalidInput, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.testing import WorkflowTestEnv

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")

TOO_BIG = {"blob": "x" * (1024 * 1024)}  # over the 1 MiB limit on params, once encoded


class Greets(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("greet", lambda: f"hello {event.payload.get('who', 'nobody')}")


def instance_ids(env: WorkflowTestEnv) -> list[str]:
    return sorted(r.id for r in env.store.list_instances("g", limit=1000).records)


def codes(result: Any) -> list[tuple[int, Any, str]]:
    return [(e["index"], e["id"], e["code"]) for e in result.errors]


@pytest.mark.parametrize(
    ("item", "shown_id", "says"),
    [
        ({"id": "bad id"}, "bad id", "may only contain letters"),
        ({"id": "-dash"}, "-dash", "must not start with '-'"),
        ({"id": "x" * 101}, None, "1 to 100 characters"),
        ({"id": 7}, None, "must be a string"),
        ({"id": "big", "params": TOO_BIG}, "big", "1 MiB"),
        ({"id": "typo", "param": {"who": "ana"}}, "typo", "unknown key(s) ['param']"),
        ({"id": "both", "instance_id": "both-2"}, "both", "either instance_id or id"),
    ],
    ids=["space", "leading dash", "too long", "not a string", "params over 1 MiB", "typo", "both"],
)
def test_an_invalid_item_is_reported_by_index_and_the_others_are_created(
    make_env: EnvFactory, item: dict[str, Any], shown_id: str | None, says: str
) -> None:
    # GIVEN a batch with one invalid item between two valid ones
    env = make_env({"g": Greets})
    batch = [{"id": "first", "params": {"who": "ana"}}, item, {"id": "last"}]

    # WHEN it is created
    result = env.create_batch("g", batch)

    # THEN the valid items are created, and the invalid one is reported by its index
    assert result.created == ["first", "last"]
    assert codes(result) == [(1, shown_id, "invalid_input")]
    assert says in result.errors[0]["message"]
    assert result.errors[0]["message"].startswith("item 1: ")
    assert instance_ids(env) == ["first", "last"]
    # and the created ones run
    env.run_until_idle()
    assert env.get("g", "first").status().output == "hello ana"
    assert env.get("g", "last").status().output == "hello nobody"


def test_a_repeated_id_creates_the_first_item_and_reports_the_later_ones(
    make_env: EnvFactory,
) -> None:
    env = make_env({"g": Greets})

    result = env.create_batch(
        "g",
        [
            {"id": "twice", "params": {"who": "first"}},
            {"id": "other"},
            {"instance_id": "twice", "params": {"who": "second"}},
            {"id": "twice"},
        ],
    )

    # THEN the first occurrence wins; each later one is a duplicate_id naming the first
    assert result.created == ["twice", "other"]
    assert codes(result) == [(2, "twice", "duplicate_id"), (3, "twice", "duplicate_id")]
    assert "item 0" in result.errors[0]["message"]
    env.run_until_idle()
    assert env.get("g", "twice").status().output == "hello first"


def test_errors_of_every_kind_come_in_item_order(make_env: EnvFactory) -> None:
    # GIVEN an instance that exists
    env = make_env({"g": Greets})
    env.create("g", id="taken")

    # WHEN a batch repeats it, repeats a new id and holds an invalid one
    result = env.create_batch(
        "g", [{"id": "taken"}, {"id": "new"}, {"id": "new"}, {"id": "no good"}, {"id": "taken"}]
    )

    # THEN the new id is created once, and every other item is reported, in order
    assert result.created == ["new"]
    assert codes(result) == [
        (0, "taken", "instance_exists"),
        (2, "new", "duplicate_id"),
        (3, "no good", "invalid_input"),
        (4, "taken", "duplicate_id"),
    ]


def test_a_batch_of_only_invalid_items_writes_nothing(make_env: EnvFactory) -> None:
    env = make_env({"g": Greets})

    result = env.create_batch("g", [{"id": "a b"}, {"id": "c", "params": TOO_BIG}])

    assert result.created == []
    assert [e["code"] for e in result.errors] == ["invalid_input", "invalid_input"]
    assert instance_ids(env) == []
    env.run_until_idle()  # no work message was posted either
    assert env.invocations == 0


def test_sending_a_batch_again_creates_nothing_and_reports_every_item(
    make_env: EnvFactory,
) -> None:
    env = make_env({"g": Greets})
    batch = [{"id": "a"}, {"id": "bad.id"}, {"id": "b"}, {"id": "a"}]
    env.create_batch("g", batch)

    again = env.create_batch("g", batch)

    assert again.created == []
    assert codes(again) == [
        (0, "a", "instance_exists"),
        (1, "bad.id", "invalid_input"),
        (2, "b", "instance_exists"),
        (3, "a", "duplicate_id"),
    ]


@pytest.mark.parametrize(
    ("batch", "says"),
    [
        (
            {"id": "a"},
            "unknown key\\(s\\) \\['id'\\] in the batch object; create_batch takes a list",
        ),
        ("a,b", "takes a list"),
        ([{"id": f"n-{i}"} for i in range(101)], "at most 100"),
        ([{"id": "ok"}, "not-an-object"], "batch item 1 must be an object"),
        ([{"id": "ok"}, None], "batch item 1 must be an object"),
    ],
    ids=["an object", "a string", "101 items", "a string item", "a null item"],
)
def test_a_malformed_batch_is_refused_whole_and_writes_nothing(
    make_env: EnvFactory, batch: Any, says: str
) -> None:
    env = make_env({"g": Greets})

    with pytest.raises(InvalidInput, match=says):
        env.create_batch("g", batch)

    assert instance_ids(env) == []
    env.run_until_idle()  # no work message was posted either
    assert env.invocations == 0


def test_count_creates_that_many_instances_with_generated_ids_and_the_same_params(
    make_env: EnvFactory,
) -> None:
    env = make_env({"g": Greets})

    # WHEN the workflow's client asks for 4 instances (Cloudflare's {count, params})
    result = env.workflow("g").create_batch(count=4, params={"who": "ana"})

    # THEN 4 distinct generated ids are created, and each runs with those params
    assert result.errors == [] and len(set(result.created)) == 4
    assert instance_ids(env) == sorted(result.created)
    env.run_until_idle()
    assert {env.get("g", i).status().output for i in result.created} == {"hello ana"}


def test_count_without_params_gives_each_instance_an_empty_payload(make_env: EnvFactory) -> None:
    env = make_env({"g": Greets})

    result = env.create_batch("g", {"count": 2})

    env.run_until_idle()
    assert [env.get("g", i).status().output for i in result.created] == ["hello nobody"] * 2


def test_instances_form_is_the_list_form(make_env: EnvFactory) -> None:
    env = make_env({"g": Greets})
    env.create("g", id="taken")
    items = [{"id": "taken"}, {"id": "new", "params": {"who": "bo"}}, {"id": "new"}]

    from_object = env.create_batch("g", {"instances": items})

    assert from_object.created == ["new"]
    assert codes(from_object) == [(0, "taken", "instance_exists"), (2, "new", "duplicate_id")]


@pytest.mark.parametrize(
    ("batch", "says"),
    [
        ({"count": 0}, "count must be from 1 to 100, got 0"),
        ({"count": 101}, "count must be from 1 to 100, got 101"),
        ({"count": True}, "whole number from 1 to 100, not bool"),
        ({"count": 2.0}, "whole number from 1 to 100, not float"),
        ({"count": 2, "params": TOO_BIG}, "1 MiB"),
        ({"count": 2, "instances": [{}]}, "both count and instances"),
        ({"count": 2, "parms": {}}, "unknown key\\(s\\) \\['parms'\\]"),
        ({"params": {}}, "needs count or instances"),
        ({}, "needs count or instances"),
        ({"instances": [{}], "params": {}}, "params goes with count"),
        ({"instances": [{"id": f"n-{i}"} for i in range(101)]}, "at most 100"),
        ({"instances": "a,b"}, "instances takes a list"),
        ({"instances": [{}, 3]}, "batch item 1 must be an object"),
    ],
    ids=[
        "count 0",
        "count 101",
        "count true",
        "count float",
        "params over 1 MiB",
        "count and instances",
        "unknown key",
        "params alone",
        "empty object",
        "instances with params",
        "101 instances",
        "instances not a list",
        "an instance not an object",
    ],
)
def test_a_malformed_object_form_is_refused_whole_and_writes_nothing(
    make_env: EnvFactory, batch: Any, says: str
) -> None:
    env = make_env({"g": Greets})

    with pytest.raises(InvalidInput, match=says):
        env.create_batch("g", batch)

    assert instance_ids(env) == []
    env.run_until_idle()
    assert env.invocations == 0


def test_the_kit_refuses_a_list_and_a_count_together(make_env: EnvFactory) -> None:
    env = make_env({"g": Greets})

    with pytest.raises(TypeError, match="not both"):
        env.workflow("g").create_batch([{"id": "a"}], count=2)
    with pytest.raises(TypeError, match="params= goes with count="):
        env.create_batch("g", [{"id": "a"}], params={"who": "x"})
    assert instance_ids(env) == []
