"""The harness's own parts, without AWS: programs, the model, fault scripts, shrinking."""

from __future__ import annotations

import pytest

from lambda_workflows.engine.replay.journal import attempt_key, delivery_key, rollback_key, step_key

from . import invariants
from .chaos import minimize, random_script, split
from .faults import KINDS, Fault, format_script, parse_script
from .generate import generate
from .invariants import Violation
from .model import event_payload, expect, expect_instance, expect_role
from .program import (
    CHILD,
    CONTROLLED_FEATURES,
    HOLD,
    Child,
    Control,
    Do,
    EventPlan,
    KnownBug,
    Program,
    Sleep,
    Wait,
)
from .workflows import result_value, undo_failure


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


def test_random_scripts_place_faults_among_the_calls_skew_only_events_drop_only_firings() -> None:
    scripts = [random_script(case, 40, events=False) for case in range(200)]
    faults = [fault for script in scripts for fault in script]
    assert all(1 <= fault.at <= 40 for fault in faults)
    assert {f.kind for f in faults} == set(KINDS) - {"skew", "drop_firing", "forget"}
    with_firings = [random_script(case, 40, events=True, firings=True) for case in range(200)]
    assert {f.kind for s in with_firings for f in s} == set(KINDS) - {"forget"}
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


def test_a_case_always_generates_the_same_program_with_every_feature_among_them() -> None:
    programs = [generate(number) for number in range(150)]
    features = set().union(*(p.features() for p in programs))
    assert set(CONTROLLED_FEATURES) <= features
    assert all(Program.from_json(p.to_json()) == p for p in programs)


def test_the_model_rolls_back_newest_first_until_a_rollback_fails_for_good() -> None:
    # GIVEN a saga: three undoable steps (the middle one's undo fails twice, for good), then a
    # last step that fails
    first = Do("debit", undo=True)
    middle = Do("reserve", undo=True, undo_fail=2, undo_limit=1, undo_delay=30.0)
    last = Do("notify", undo=True)
    failing = Do("ship", fail=1, limit=0)
    expected = expect(Program(3, (first, middle, last, failing)))
    # THEN the instance errors with the forward failure, rolls back notify, then reserve
    # (retried once, failing for good), and never reaches debit's rollback
    assert expected.status == "errored"
    assert expected.error == {"name": "StepBoom", "message": "ship failed on attempt 1"}
    assert expected.undo_order == ["notify", "reserve"]
    reserve = rollback_key(step_key("reserve", 1, None))
    assert expected.journal[rollback_key(step_key("notify", 1, None))] == ["rollback"]
    name, message = undo_failure(middle, 1)
    assert expected.journal[attempt_key(reserve, 1)] == ["rollback-attempt", 1, name, message, 30.0]
    assert expected.journal[reserve] == ["rollback-error", *undo_failure(middle, 2)]
    assert rollback_key(step_key("debit", 1, None)) not in expected.journal
    assert expected.rollback == {
        "status": "failed",
        "failed_step": "reserve",
        "ends_as": "errored",
        "cause": expected.error,
    }


def test_the_model_delivers_a_childs_output_or_its_caught_failure() -> None:
    ok = Child("pay", CHILD, (Do("pay-s0"),))
    fails = Child("ship", CHILD, (Do("ship-s0", fail=1, limit=0),), catch=True)
    expected = expect(Program(5, (ok, fails)))
    paid = [["pay-s0", result_value(5, "pay-s0", 1)]]
    assert expected.values == {
        "pay": paid,
        "ship": {"caught": ["StepBoom", "ship-s0 failed on attempt 1"]},
    }
    assert expected.journal[delivery_key(step_key("pay", 1, None))] == [
        "child",
        "complete",
        paid,
        None,
    ]
    assert expected.children["ship"].status == "errored"
    assert expect_role(Program(5, (ok, fails)), "top0/ship", {}) == expected.children["ship"]
    assert expect_role(Program(5, (ok, fails)), "top0/nothing", {}) is None


def test_a_racing_terminate_requires_only_the_steps_before_it() -> None:
    program = Program(
        9,
        (Do("b0", undo=True), Sleep("b1", 30.0), Wait("hold", HOLD), Do("a0")),
        control=Control("terminate_rollback", "hold"),
    )
    expected = expect_instance(program, 0)
    assert (expected.status, expected.racy) == ("terminated", True)
    assert expected.required == {step_key("b0", 1, None), step_key("b1", 1, None)}
    assert step_key("a0", 1, None) in expected.journal  # may run if the terminate lands late
    assert expect_instance(program, 1).status == "complete"  # only instance 0 gets it
    deleting = Program(9, program.ops, control=Control("delete", "hold"))
    assert expect_instance(deleting, 0).status == "deleted"


def test_a_known_bug_is_excused_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    bug = KnownBug("24.99", "deleted", r"left \d+ item", "a bug another change fixes")
    monkeypatch.setattr(invariants, "KNOWN_BUGS", (bug,))
    known = Violation("deleted", "top0 left 2 item(s): J#1/x")
    other = Violation("ending", "top0 ended errored")
    assert split([known, other]) == ([other], [known])
    assert (known.known, other.known) == ("24.99", None)
    assert invariants.primary([known, other]) == "ending"  # shrunk on what is not known
