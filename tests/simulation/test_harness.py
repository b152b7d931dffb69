"""The harness's own parts, without AWS: programs, the model, fault scripts, shrinking."""

from __future__ import annotations

import pytest

from lambda_workflows.engine.journal import attempt_key, delivery_key, step_key

from .chaos import minimize, random_script
from .faults import KINDS, Fault, format_script, parse_script
from .model import event_payload, expect
from .program import Do, EventPlan, Program, Sleep, Wait, generate, result_value


def test_a_case_always_generates_the_same_program_and_it_survives_the_params() -> None:
    for number in range(50):
        program = generate(number)
        assert generate(number) == program
        assert Program.from_json(program.to_json()) == program


def test_the_model_records_failed_attempts_then_the_result() -> None:
    # GIVEN a step failing twice (retried after 10 s, then 20 s), a sleep and an event wait
    program = Program(
        7,
        (
            Do("charge", fail=2, limit=3, delay=10.0, backoff="linear"),
            Sleep("cool", 60.0),
            Wait("approve", "a"),
        ),
        (EventPlan("a", "late"),),
    )
    expected = expect(program)
    charge = step_key("charge", 1, None)
    approve = step_key("approve", 1, None)
    # THEN the model's journal and ending say exactly that
    assert expected.journal == {
        attempt_key(charge, 1): ["attempt", 1, "StepBoom", "charge failed on attempt 1", 10.0],
        attempt_key(charge, 2): ["attempt", 2, "StepBoom", "charge failed on attempt 2", 20.0],
        charge: ["step", result_value(7, "charge", 3)],
        step_key("cool", 1, None): ["sleep", 60.0],
        approve: ["wait"],
        delivery_key(approve): ["event", event_payload("a", 1)],
    }
    assert expected.optional == {approve}  # the event may be there before the wait starts
    assert expected.status == "complete"
    assert expected.output == [
        ["charge", result_value(7, "charge", 3)],
        ["cool", None],
        ["approve", {"event": event_payload("a", 1)}],
    ]


def test_the_model_ends_an_uncaught_non_retryable_failure_as_errored() -> None:
    program = Program(1, (Do("s0"), Do("s1", fail=2, limit=5, nonretryable=True)))
    expected = expect(program)
    assert expected.status == "errored"
    assert expected.error == {"name": "NonRetryableError", "message": "s1 refused on attempt 2"}


def test_a_fault_script_reads_back_what_it_prints() -> None:
    script = [Fault(3, "throttle"), Fault(40, "crash_after"), Fault(41, "drop")]
    assert parse_script(format_script(script)) == script
    assert parse_script("") == []
    with pytest.raises(ValueError, match="bad fault"):
        parse_script("12:meteor")


def test_random_scripts_place_faults_among_the_calls_and_skew_only_events() -> None:
    scripts = [random_script(case, 40, events=False) for case in range(200)]
    faults = [fault for script in scripts for fault in script]
    assert all(1 <= fault.at <= 40 and fault.kind != "skew" for fault in faults)
    assert {f.kind for f in faults} == set(KINDS) - {"skew", "forget"}
    assert random_script(7, 40, events=True) == random_script(7, 40, events=True)


def test_shrinking_keeps_only_the_faults_the_failure_needs() -> None:
    script = [Fault(n, "throttle") for n in range(1, 9)]
    needed = {Fault(3, "throttle"), Fault(7, "throttle")}
    tried: list[list[Fault]] = []

    def fails(candidate: list[Fault]) -> bool:
        tried.append(candidate)
        return needed <= set(candidate)

    assert minimize(script, fails) == sorted(needed)
    assert len(tried) < 30


def test_shrinking_to_nothing_when_no_fault_is_needed() -> None:
    assert minimize([Fault(5, "drop")], lambda candidate: True) == []
