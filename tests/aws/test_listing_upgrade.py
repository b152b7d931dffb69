"""A stack deployed with the two whole-item listing indexes (``by_status``, ``by_workflow``),
with instances in flight, upgrades to ``by_created`` without losing or stranding an instance
(docs/deploy.md, "Upgrading the listing indexes").

The steps a deployment takes, on moto: the table starts with the indexes the earlier template
declared and items in the shape the earlier code wrote (listing keys ``gsi1pk``/``gsi2pk``,
no ``lpk``), one queued with its work message pending, one asleep with its wake-up scheduled,
two finished (one from before sharding). Deploy 1 creates ``by_created`` (one index creation,
as CloudFormation allows) and runs the new code; deploys 2 and 3 drop the legacy indexes, one
per deploy.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.aws.dynamodb import DynamoStore
from lambda_workflows.aws.shards import index_shard
from lambda_workflows.infra.template import load_template
from lambda_workflows.testing import WorkflowTestEnv

WORKFLOW = "orders"
LISTING_KEYS = ("gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk")


class Napping(WorkflowEntrypoint):
    """A step, an hour's sleep, a step."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("reserve", lambda: "r")
        await step.sleep("nap", "1 hour")
        return await step.do("ship", lambda: "shipped")


@pytest.fixture
def env() -> Iterator[WorkflowTestEnv]:
    with WorkflowTestEnv({WORKFLOW: Napping}, backend="aws") as made:
        yield made


def client(env: WorkflowTestEnv) -> Any:
    assert env.aws is not None
    return env.aws.session.client("dynamodb")


def table(env: WorkflowTestEnv) -> str:
    assert env.aws is not None
    return str(env.aws.settings.table_name)


def store(env: WorkflowTestEnv) -> DynamoStore:
    found = env.store  # the runtime's own store: the one the runner and API use
    assert isinstance(found, DynamoStore)
    return found


def index_names(env: WorkflowTestEnv) -> set[str]:
    described = client(env).describe_table(TableName=table(env))["Table"]
    return {i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])}


def drop_index(env: WorkflowTestEnv, name: str) -> None:
    client(env).update_table(
        TableName=table(env), GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": name}}]
    )


def create_by_created(env: WorkflowTestEnv) -> None:
    """Deploy 1's one table change: the template's by_created index."""
    properties = load_template()["Resources"]["Table"]["Properties"]
    index = next(i for i in properties["GlobalSecondaryIndexes"] if i["IndexName"] == "by_created")
    keys = {k["AttributeName"] for k in index["KeySchema"]}
    client(env).update_table(
        TableName=table(env),
        AttributeDefinitions=[
            a for a in properties["AttributeDefinitions"] if a["AttributeName"] in keys
        ],
        GlobalSecondaryIndexUpdates=[{"Create": index}],
    )


def as_written_before(env: WorkflowTestEnv, instance_id: str, *, sharded: bool = True) -> None:
    """Give an instance item the listing keys the earlier code wrote, and none of today's."""
    item = client(env).get_item(
        TableName=table(env), Key={"pk": {"S": f"I#{WORKFLOW}#{instance_id}"}, "sk": {"S": "I"}}
    )["Item"]
    shard = index_shard(instance_id, store(env).index_shards)
    suffix = f"#{shard}" if sharded else ""
    status = item["status"]["S"]
    client(env).update_item(
        TableName=table(env),
        Key={"pk": item["pk"], "sk": item["sk"]},
        UpdateExpression="SET gsi1pk = :s, gsi1sk = :k, gsi2pk = :w, gsi2sk = :k REMOVE lpk, lsk",
        ExpressionAttributeValues={
            ":s": {"S": f"{WORKFLOW}#{status}{suffix}"},
            ":w": {"S": f"{WORKFLOW}{suffix}"},
            ":k": item["lsk"],
        },
    )


def listed(env: WorkflowTestEnv, status: str | None = None) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = env.workflow(WORKFLOW).list(status, cursor, limit=2)
        ids += [r.id for r in page.records]
        if page.cursor is None:
            return ids
        cursor = page.cursor


def statuses(env: WorkflowTestEnv) -> dict[str, str]:
    return {r.id: r.status.value for r in env.workflow(WORKFLOW).list(limit=100).records}


def legacy_items(env: WorkflowTestEnv) -> list[str]:
    found = client(env).scan(TableName=table(env))["Items"]
    return [i["id"]["S"] for i in found if i["sk"]["S"] == "I" and "gsi2pk" in i]


def old_stack_with_instances_in_flight(env: WorkflowTestEnv) -> None:
    """The table as the earlier template and code left it."""
    drop_index(env, "by_created")  # the earlier template did not have it
    for instance_id in ("done-unsharded", "done", "asleep", "queued"):
        env.create(WORKFLOW, id=instance_id)
        env.clock.advance(1)
        if instance_id.startswith("done"):
            env.run_until_idle()
            env.clock.advance(3600)
            env.run_until_idle()
        elif instance_id == "asleep":
            while env.get(WORKFLOW, "asleep").status()["status"] != "waiting":
                assert env._backend.deliver_one()  # one invocation at a time
    for instance_id in ("done", "asleep", "queued"):
        as_written_before(env, instance_id)
    as_written_before(env, "done-unsharded", sharded=False)
    assert index_names(env) == {"by_status", "by_workflow", "by_due"}


NEWEST_FIRST = ["queued", "asleep", "done", "done-unsharded"]


def test_instances_written_before_the_upgrade_list_finish_and_move_to_by_created(
    env: WorkflowTestEnv,
) -> None:
    # GIVEN a stack with the earlier indexes and items, two instances in flight
    old_stack_with_instances_in_flight(env)

    # WHEN deploy 1 adds by_created (one index creation) and runs this code
    create_by_created(env)

    # THEN every instance lists, once, newest first, under its status
    assert listed(env) == NEWEST_FIRST
    assert listed(env, "waiting") == ["asleep"]
    assert listed(env, "complete") == ["done", "done-unsharded"]
    assert env.workflow(WORKFLOW).list("queued").records[0].id == "queued"

    # WHEN the work in flight runs: the queued one's message, the sleeper's wake-up
    env.run_until_idle()
    env.clock.advance(3600)
    env.run_until_idle()

    # THEN both finish, and still list once each
    assert statuses(env) == dict.fromkeys(NEWEST_FIRST, "complete")
    assert listed(env) == NEWEST_FIRST

    # WHEN the recovery sweep runs: it moves every legacy item to by_created
    env.service.recover()

    # THEN none is left on the legacy indexes, and the listing is unchanged
    assert legacy_items(env) == []
    assert listed(env) == NEWEST_FIRST
    assert listed(env, "complete") == NEWEST_FIRST

    # WHEN deploys 2 and 3 drop the legacy indexes, one each
    drop_index(env, "by_status")
    drop_index(env, "by_workflow")

    # THEN the listing, the counts and the sweep go on without them
    assert listed(env) == NEWEST_FIRST
    assert env.service.describe(WORKFLOW).instances["complete"] == 4
    assert store(env).upgrade_listing() == 0
    env.service.recover()


def test_an_instance_created_after_the_upgrade_lists_beside_the_earlier_ones(
    env: WorkflowTestEnv,
) -> None:
    old_stack_with_instances_in_flight(env)
    create_by_created(env)

    env.clock.advance(1)
    env.create(WORKFLOW, id="new")

    assert listed(env) == ["new", *NEWEST_FIRST]
    assert listed(env, "queued") == ["new", "queued"]
    assert (
        "gsi2pk"
        not in client(env).get_item(
            TableName=table(env), Key={"pk": {"S": f"I#{WORKFLOW}#new"}, "sk": {"S": "I"}}
        )["Item"]
    )


def test_an_instance_deleted_before_the_sweep_moved_it_is_not_listed_nor_moved(
    env: WorkflowTestEnv,
) -> None:
    old_stack_with_instances_in_flight(env)
    create_by_created(env)

    env.get(WORKFLOW, "done").delete()

    assert "done" not in listed(env)
    assert store(env).upgrade_listing() == 3  # the other three
    assert "done" not in listed(env)
