"""``lambda-workflows instances describe`` shows what the instance used, after its timeline."""

from __future__ import annotations

from .test_cli import Cli, cli, dev, waiting_subscription

__all__ = ["cli", "dev"]  # the fixtures, shared with test_cli


def test_describe_prints_the_instances_usage_after_its_timeline(cli: Cli) -> None:
    # GIVEN a subscription that charged, slept 3 hours and now waits for its approval
    instance_id = waiting_subscription(cli)
    # WHEN it is described, as JSON and as text
    usage = cli("instances", "describe", "subscription", instance_id, "--json").json()["usage"]
    text = cli("instances", "describe", "subscription", instance_id).out
    # THEN two invocations (the start, the end of the sleep), a load each, two wake-ups set
    # (the sleep, the approval's timeout), and the text says the same on its last line
    assert (usage["invocations"], usage["reads"], usage["schedules"]) == (2, 2, 2)
    assert text.rstrip().splitlines()[-1] == (
        f"usage: {usage['writes']} writes, 2 reads, 2 invocations, 2 schedules"
    )
