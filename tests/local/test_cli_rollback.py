"""``lambda-workflows terminate NAME ID --rollback`` against a running ``lambda-workflows dev``: it
asks the API for a terminate with rollback, and only terminate takes the option."""

from __future__ import annotations

from .test_cli import Cli, cli, dev, waiting_subscription

__all__ = ["cli", "dev"]  # the fixtures, shared with test_cli


def test_terminate_rollback_runs_the_rollbacks_then_terminates(cli: Cli) -> None:
    # GIVEN a waiting subscription
    instance_id = waiting_subscription(cli)
    # WHEN it is terminated with --rollback
    ran = cli("terminate", "subscription", instance_id, "--rollback")
    # THEN the API was asked for a terminate with rollback: the instance runs (to roll back)
    assert ran.code == 0, ran.err
    assert ran.out.strip() == f"subscription/{instance_id}: running"
    assert "once its rollbacks have run" in ran.err
    # AND then it is terminated, its rollback (none registered here) complete
    body = cli.wait_for("subscription", instance_id, "terminated")
    assert body["rollback"]["status"] == "complete"
    assert body["rollback"]["cause"]["name"] == "Terminated"


def test_terminate_without_rollback_runs_none(cli: Cli) -> None:
    instance_id = waiting_subscription(cli)
    ran = cli("terminate", "subscription", instance_id, "--json")
    assert ran.code == 0, ran.err
    assert ran.json()["status"] == "terminated"
    assert cli.instance("subscription", instance_id)["rollback"] is None


def test_only_terminate_takes_rollback(cli: Cli) -> None:
    for action in ("pause", "resume", "restart"):
        ran = cli(action, "subscription", "sub-1", "--rollback")
        assert ran.code == 2, action
        assert "--rollback" in ran.err


def test_terminate_help_shows_the_rollback_example(cli: Cli) -> None:
    ran = cli.bare("terminate", "--help")
    assert ran.code == 0
    assert "lambda-workflows terminate orders order-42 --rollback" in ran.out
    assert "--rollback" in ran.out
