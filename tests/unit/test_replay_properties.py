"""Property: whatever crashes happen, an instance ends with the output of a fault-free run,
with exactly one recorded result per step and each step's success committed once.

Random workflows mix steps that fail a few times before succeeding, sleeps, gathers and event
waits; random crash points kill the invocation inside a callback (before its result is written)
or in run() right after a step returned (after its write).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.model import EntryKind
from lambda_workflows.testing import Crash, WorkflowTestEnv

Op = tuple[str, int]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("do"), st.integers(0, 2)),  # fails this many times, then succeeds
        st.tuples(st.just("sleep"), st.integers(1, 7200)),
        st.tuples(st.just("gather"), st.integers(2, 3)),
        st.tuples(st.just("event"), st.integers(0, 1)),
    ),
    min_size=1,
    max_size=7,
)


@dataclass
class Faults:
    """Where the invocation dies: the n-th callback call, the n-th step return in run()."""

    in_callback: set[int]
    after_step: set[int]
    callback_calls: int = 0
    step_returns: int = 0
    successes: Counter[str] = field(default_factory=Counter)


def build(program: list[Op], faults: Faults) -> type[WorkflowEntrypoint]:
    def callback(name: str, fail_times: int) -> Any:
        def call(ctx: Any) -> str:
            faults.callback_calls += 1
            if faults.callback_calls in faults.in_callback:
                faults.in_callback.discard(faults.callback_calls)
                raise Crash(f"died inside {name}")
            if ctx.attempt <= fail_times:
                raise ConnectionError(f"{name} attempt {ctx.attempt} failed")
            faults.successes[name] += 1
            return f"{name} ok"

        return call

    def returned(value: Any) -> Any:
        faults.step_returns += 1
        if faults.step_returns in faults.after_step:
            faults.after_step.discard(faults.step_returns)
            raise Crash("died after a step returned")
        return value

    config = {"retries": {"limit": 3, "delay": "1 second", "backoff": "constant"}}

    class Generated(WorkflowEntrypoint):
        async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            out: list[Any] = []
            for i, (kind, arg) in enumerate(program):
                if kind == "do":
                    out.append(returned(await step.do(f"do {i}", config, callback(f"do {i}", arg))))
                elif kind == "sleep":
                    await step.sleep(f"sleep {i}", arg)
                    out.append(returned(f"slept {i}"))
                elif kind == "gather":
                    names = [f"gather {i}.{j}" for j in range(arg)]
                    values = await asyncio.gather(
                        *(step.do(n, config, callback(n, j % 2)) for j, n in enumerate(names))
                    )
                    out.append(returned(list(values)))
                else:
                    got = await step.wait_for_event(f"event {i}", type=f"e{arg}", timeout="1 day")
                    out.append(returned(got.payload))
            return out

    return Generated


def run(program: list[Op], faults: Faults) -> tuple[WorkflowTestEnv, Any]:
    env = WorkflowTestEnv({"gen": build(program, faults)})
    inst = env.create("gen", id="prop")
    for i, (kind, arg) in enumerate(program):  # events are sent up front: buffered, FIFO
        if kind == "event":
            inst.send_event(type=f"e{arg}", payload={"event": i})
    env.run_until_idle(max_invocations=500)
    return env, inst


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    program=ops,
    in_callback=st.sets(st.integers(1, 25), max_size=3),
    after_step=st.sets(st.integers(1, 15), max_size=3),
)
def test_crashes_never_change_the_output_nor_record_a_step_twice(
    program: list[Op], in_callback: set[int], after_step: set[int]
) -> None:
    _, reference = run(program, Faults(set(), set()))
    expected = reference.status()
    assert expected.status == "complete", expected.error

    faults = Faults(set(in_callback), set(after_step))
    env, inst = run(program, faults)
    status = inst.status()
    assert status.status == "complete", status.error
    assert status.output == expected.output
    steps = [e for e in inst.journal() if e.kind is EntryKind.STEP]
    assert len(steps) == len({e.key for e in steps})  # one recorded result per step
    assert {e.name for e in steps} == {s.name for s in expected.steps if s.type == "do"}
    # a crash never lands between a callback's success and its write here, so every step's
    # success happened exactly once: no double charge
    assert all(count == 1 for count in faults.successes.values()), faults.successes
    fired = len(in_callback - faults.in_callback) + len(after_step - faults.after_step)
    # every crash point reached killed its invocation (concurrent steps may die together)
    assert (fired > 0) <= (env.crashes > 0) and env.crashes <= fired
