"""``lambda-workflows restart --from-step``, ``lambda-workflows instances step`` and
``lambda-workflows delete`` against a running ``lambda-workflows dev``."""

from __future__ import annotations

from lambda_workflows.examples.showcase import SHOWCASE_WORKFLOWS
from lambda_workflows.testing import Replayer

from .test_cli import Cli, cli, dev, new_id, waiting_subscription, waits_for_event

__all__ = ["cli", "dev"]  # the fixtures, shared with test_cli


def test_restart_from_a_step_keeps_the_steps_before_it(cli: Cli) -> None:
    # GIVEN a subscription waiting for its approval (charged, cooled down)
    instance_id = waiting_subscription(cli)
    before = cli.instance("subscription", instance_id)["steps"]

    # WHEN it restarts from its wait
    ran = cli("restart", "subscription", instance_id, "--from-step", "approval", "--count", "1")

    # THEN the charge and the sleep are kept as recorded, and it waits again
    assert ran.code == 0, ran.err
    assert ran.out.strip().startswith(f"subscription/{instance_id}: ")
    waits_for_event(cli, instance_id)
    after = cli.instance("subscription", instance_id)["steps"]
    assert [(s["name"], s["start"]) for s in after[:2]] == [
        (s["name"], s["start"]) for s in before[:2]
    ]


def test_restart_from_an_unknown_step_exits_1_naming_the_recorded_steps(cli: Cli) -> None:
    instance_id = waiting_subscription(cli)
    ran = cli("restart", "subscription", instance_id, "--from-step", "nope", "--type", "do")
    assert ran.code == 1
    assert "invalid_input" in ran.err and "'nope'" in ran.err
    assert "recorded steps: 'charge 1' (do), 'cool down' (sleep)" in ran.err
    assert cli.instance("subscription", instance_id)["status"] == "waiting"


def test_count_without_from_step_is_a_usage_error(cli: Cli) -> None:
    ran = cli("restart", "subscription", "sub-1", "--count", "2")
    assert ran.code == 2 and "--from-step" in ran.err
    assert cli("restart", "subscription", "sub-1", "--from-step", "x", "--count", "0").code == 2
    assert cli("pause", "subscription", "sub-1", "--from-step", "x").code == 2


def test_instances_step_prints_one_steps_output_as_json(cli: Cli) -> None:
    instance_id = waiting_subscription(cli)

    ran = cli("instances", "step", "subscription", instance_id, "charge 1", "--count", "1")

    assert ran.code == 0, ran.err
    assert ran.json() == {
        "name": "charge 1",
        "count": 1,
        "type": "do",
        "status": "complete",
        "output": cli.instance("subscription", instance_id)["steps"][0]["output"],
    }
    missing = cli("instances", "step", "subscription", instance_id, "charge 1", "--count", "2")
    assert missing.code == 1
    assert "step_not_found" in missing.err and "occurrence 2" in missing.err


def test_delete_deletes_each_instance_and_exits_1_for_one_it_could_not(cli: Cli) -> None:
    first, second = waiting_subscription(cli), waiting_subscription(cli)
    missing = new_id("never")

    ran = cli("delete", "subscription", first, missing, second)

    assert ran.code == 1
    assert ran.out.splitlines() == [
        f"subscription/{first}: deleted",
        f"subscription/{second}: deleted",
    ]
    assert f"subscription/{missing}: not_found" in ran.err
    again = cli("delete", "subscription", first, "--json")
    assert again.code == 1
    assert again.json()["deleted"] == []
    assert [e["code"] for e in again.json()["errors"]] == ["not_found"]
    status = cli("status", "subscription", second)
    assert status.code == 1 and "instance_not_found" in status.err


def test_the_help_shows_the_new_options_and_examples(cli: Cli) -> None:
    restart = cli.bare("restart", "--help")
    assert "--from-step" in restart.out and "--count" in restart.out
    assert "lambda-workflows delete orders order-42" in cli.bare("delete", "--help").out
    assert "--count" in cli.bare("instances", "step", "--help").out


def test_instances_export_prints_the_history_the_replayer_reads(cli: Cli) -> None:
    instance_id = waiting_subscription(cli)

    ran = cli("instances", "export", "subscription", instance_id)

    assert ran.code == 0, ran.err
    history = ran.json()
    assert (history["format"], history["workflow"], history["id"]) == (
        "workflows-history",
        "subscription",
        instance_id,
    )
    kinds = [(e["name"], e["kind"]) for e in history["entries"]]
    assert kinds == [("charge 1", "step"), ("cool down", "sleep"), ("approval", "wait")]
    assert Replayer(SHOWCASE_WORKFLOWS).replay(history).compatible
    missing = cli("instances", "export", "subscription", "nope")
    assert missing.code == 1 and "instance_not_found" in missing.err
    helped = cli.bare("instances", "export", "--help")
    assert "lambda-workflows instances export orders order-42 > tests/histories/" in helped.out
