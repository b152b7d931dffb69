"""The embedded AWS behaves like AWS where the engine depends on it."""

from __future__ import annotations

import threading
from typing import Any

from lambda_workflows.engine.instances.transitions import Change
from lambda_workflows.engine.model import InstanceRef

from .workflows_under_test import ThreeSteps


def test_conditional_updates_racing_from_threads_have_exactly_one_winner(aws_env: Any) -> None:
    # GIVEN one instance and many threads that all update it on the same version
    env = aws_env({"three": ThreeSteps})
    env.create("three", id="race")
    ref = InstanceRef("three", "race")
    version = env.store.get(ref).version
    winners: list[int] = []
    start = threading.Barrier(8)

    def contender(n: int) -> None:
        start.wait()
        if env.store.update(ref, version, Change(paused_at=float(n))) is not None:
            winners.append(n)

    threads = [threading.Thread(target=contender, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # THEN exactly one conditional update succeeded, as on DynamoDB
    assert len(winners) == 1
    record = env.store.get(ref)
    assert record.version == version + 1
    assert record.paused_at == float(winners[0])
