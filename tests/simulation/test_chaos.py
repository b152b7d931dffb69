"""The promise under faults, kept: a bounded run of the simulation (``make chaos`` runs more).

Every case is a random workflow program run twice on the real handlers and adapters (moto):
fault-free, then under a random fault script; the invariants of :mod:`.invariants` must hold.
Among the programs: children (one of which fails), a limited workflow with more instances than
slots, sagas, terminate(rollback=True), restart() and restart(from_step=...), delete of a
running instance, and an hourly schedule over several virtual hours.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator

import pytest

from .chaos import CaseResult, Summary, program_of, run_many
from .faults import CALL_KINDS, RUNNER_KINDS
from .program import CONTROLLED_FEATURES

CASES = 300  # make test's share; make chaos SEEDS=N runs N
REPEATED = 10  # cases run twice, in whichever worker picks them up
CANARIES = [(case, "1:forget") for case in range(3)]


@pytest.fixture(scope="module")
def results() -> Iterator[list[CaseResult]]:
    jobs = [*range(CASES), *range(REPEATED), *CANARIES]
    yield list(run_many(jobs, workers=2))


def regular(results: list[CaseResult]) -> list[CaseResult]:
    return [r for r in results if not any(f.kind == "forget" for f in r.script)]


def test_no_case_breaks_the_promise(results: list[CaseResult]) -> None:
    summary = Summary()
    for result in {r.case: r for r in regular(results)}.values():
        summary.add(result)
    failed = "\n".join(r.report() for r in summary.failed[:10])
    assert summary.cases >= CASES
    assert not summary.failed, f"{failed}\n{summary.text()}"


def test_every_fault_kind_is_injected(results: list[CaseResult]) -> None:
    injected: Counter[str] = Counter()
    for result in regular(results):
        injected.update(result.injected)
    wanted = {*CALL_KINDS, *RUNNER_KINDS, "drop"}
    assert wanted <= {kind for kind, n in injected.items() if n >= 5}, injected
    assert injected["drop_firing"] >= 1, injected  # only where a schedule fires


def test_every_feature_runs_under_faults(results: list[CaseResult]) -> None:
    features: Counter[str] = Counter()
    for result in regular(results):
        if result.injected:
            features.update(program_of(result.case).features())
    wanted = set(CONTROLLED_FEATURES)
    assert wanted <= {feature for feature, n in features.items() if n >= 5}, features


def test_the_same_case_runs_the_same_calls_to_the_same_end(results: list[CaseResult]) -> None:
    digests: defaultdict[int, set[str]] = defaultdict(set)
    for result in regular(results):
        digests[result.case].add(result.digest)
    assert [case for case, seen in digests.items() if len(seen) > 1] == []


def test_a_lost_journal_write_is_noticed(results: list[CaseResult]) -> None:
    # GIVEN a canary fault that deletes a journal item right after it was written
    canaries = [r for r in results if any(f.kind == "forget" for f in r.script)]
    # THEN the invariants say so: the rerun step is written a second time (recorded-once), or,
    # when nothing reruns it (a child that had finished), the journal lacks the entry the
    # model and what run() saw call for
    assert len(canaries) == len(CANARIES)
    for result in canaries:
        assert result.injected["forget"] == 1
        noticed = {v.invariant for v in result.violations} & {"recorded-once", "journal", "seen"}
        assert noticed, result.violations
