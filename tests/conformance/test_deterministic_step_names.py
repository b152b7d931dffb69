"""Rules of Workflows: "Name steps deterministically".

A step's name must be the same on every replay.

✅ ``DeterministicStepNamesWorkflow``: fixed names, and one step per entry of a list returned
by a step; each is recorded once and replays without running again.
🔴 ``BadDeterministicStepNamesWorkflow``: the name holds the time. In Cloudflare the step is
silently re-run whenever the instance resumes; this engine sees a step the journal did not
record at that position and fails the instance with ``NonDeterminismError`` instead.
The time source is a controllable fake (``TickingTime``) patched into the example's module.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import pytest

import lambda_workflows.examples.deterministic_step_names as module
from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.examples._fakes import DEFAULT_KV, example_env
from lambda_workflows.examples.deterministic_step_names import (
    BadDeterministicStepNamesWorkflow,
    DeterministicStepNamesWorkflow,
)
from lambda_workflows.testing import Crash, WorkflowTestEnv

from ._support import TickingTime, crash_after, inject, run_one, step_rows


def _run(workflow: type[WorkflowEntrypoint], fakes: dict[str, Any]) -> tuple[WorkflowTestEnv, Any]:
    # bounded: an engine that kept re-running renamed steps would otherwise retry forever
    return run_one(workflow, fakes, "names", "n-1", {"user": "bob"}, max_invocations=50)


def test_a_step_per_list_entry_is_recorded_once_each_and_replays_without_rerunning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a clock that moves on every read (the good workflow only logs the time)
    clock = TickingTime()
    monkeypatch.setattr(module, "time", clock)
    # AND invocations that die inside the second cat's step and after the last cat's step
    fakes = example_env()
    cat_list = DEFAULT_KV["cat-list"]
    crash = inject(fakes["KV"], "get", Crash, commit=True, only=lambda key: key == cat_list[1])
    workflow = crash_after(DeterministicStepNamesWorkflow, f"get cat: {cat_list[-1]}")
    # WHEN it runs to the end
    env, inst = _run(workflow, fakes)
    # THEN every step is recorded once, in list order, each with one recorded attempt
    assert crash.fired == 1 and env.crashes == 2
    status = inst.status()
    assert status.status == "complete"
    assert step_rows(inst) == [
        ("fetch user data from KV", 1, "do", "complete", 1),
        ("get cat list from KV", 1, "do", "complete", 1),
        *[(f"get cat: {cat}", 1, "do", "complete", 1) for cat in cat_list],
    ]
    assert status.output == {"user": DEFAULT_KV["bob"], "cats": [DEFAULT_KV[c] for c in cat_list]}
    # AND the replays never ran a recorded step again: only the crashed read was repeated
    reads = fakes["KV"].reads
    assert reads["bob"] == 1 and reads["cat-list"] == 1
    assert [reads[cat] for cat in cat_list] == [1, 2, 1]
    assert clock.reads == 1  # "fetched at <time>" logged once, by the one run of that step


def test_bad_example_as_written_is_stopped_at_its_event_mutation_without_a_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the bad example as it is: its time-named step also mutates the event
    clock = TickingTime()
    monkeypatch.setattr(module, "time", clock)
    fakes = example_env()
    # WHEN it runs
    _, inst = _run(BadDeterministicStepNamesWorkflow, fakes)
    # THEN the mutation is caught in that step, at once: a programming error is not retried,
    # so no retry ever runs under a new, later time-based name (the time-named step on its
    # own is caught by the test below, with a test-local variant that does not mutate)
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None and status.error.name == "EventMutationError"
    assert "don't mutate your incoming events" in status.error.message
    assert fakes["KV"].reads["bob"] == 1
    [(name, count, kind, _, attempts)] = step_rows(inst)
    assert name.startswith("step #1 running at: ")
    assert (count, kind, attempts) == (1, "do", 1)


class TimeNamedThenCrashes(WorkflowEntrypoint):
    """Test-local: Cloudflare's time-named step without the event mutation (so it succeeds),
    followed by a step; the invocation dies in that step ("if subsequent steps fail")."""

    clock: ClassVar[Any] = time  # the wall clock, replaced by a TickingTime in the test

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        user = await step.do(
            f"step #1 running at: {self.clock.time()}",
            lambda: self.env.KV.get(event.payload["user"]),
        )
        image = await step.do("next", lambda: self.env.HTTP_CAT.fetch(200))
        return {"user": user, "image": image}


def test_bad_time_named_step_is_not_silently_rerun_when_a_later_step_crashes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a successful time-named step, and a later step during which the invocation dies
    monkeypatch.setattr(TimeNamedThenCrashes, "clock", TickingTime())
    fakes = example_env()
    inject(fakes["HTTP_CAT"], "fetch", Crash, commit=False)
    # WHEN the work is redelivered and replayed
    env, inst = _run(TimeNamedThenCrashes, fakes)
    # THEN the replay did not run the renamed step again (as Cloudflare would): it failed
    assert env.crashes == 1
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None and status.error.name == "NonDeterminismError"
    assert fakes["KV"].reads["bob"] == 1
    assert len(step_rows(inst)) == 1


def test_bad_example_with_the_real_wall_clock_is_stopped_the_same_way() -> None:
    # GIVEN the bad example with its real time source (no fake)
    assert vars(module)["time"] is time
    fakes = example_env()
    # WHEN it runs
    _, inst = _run(BadDeterministicStepNamesWorkflow, fakes)
    # THEN it errors at its first violation, in one attempt
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None and status.error.name == "EventMutationError"
    assert fakes["KV"].reads["bob"] == 1
