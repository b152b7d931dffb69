"""Run cases: ``python -m tests.simulation.chaos --seeds N [--workers W]`` or one case,
``--seed S [--faults '12:throttle,40:crash_after']``.

A case is a seed: a program (seeds 2k and 2k+1 share program k, and so its fault-free run,
which each worker keeps for the next seed), a fault script of its own (fault positions drawn
over the calls of the fault-free run), one faulty run on the embedded AWS, the invariants. A
failing case is shrunk to a minimal fault script (delta debugging: drop faults while the same
invariant still fails) and printed with the one command that replays it.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from .driver import Driver
from .faults import Fault, format_script, parse_script
from .generate import generate
from .invariants import Violation, check, primary
from .outcome import RunResult
from .program import Program
from .world import World

SEEDS_PER_PROGRAM = 2
_WORLD: World | None = None
_REFERENCE: tuple[int, RunResult] | None = None  # the last program's fault-free run
_WEIGHTS = {
    "throttle": 3,
    "server_error": 2,
    "connection": 2,
    "ambiguous": 3,
    "crash_before": 2,
    "crash_after": 2,
    "drop": 4,
    "duplicate": 2,
    "concurrent": 2,
    "takeover": 2,
    "skew": 1,
    "drop_firing": 6,  # only where a schedule fires
}


def world() -> World:
    """This process's embedded AWS (built on first use, reused by every case)."""
    global _WORLD
    if _WORLD is None:
        _WORLD = World()
    return _WORLD


@dataclass
class CaseResult:
    """What one case did and found."""

    case: int
    script: list[Fault]
    violations: list[Violation] = field(default_factory=list)  # known bugs left out
    known: list[Violation] = field(default_factory=list)  # KNOWN_BUGS excused these
    minimal: list[Fault] | None = None
    injected: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    seconds: float = 0.0
    digest: str = ""  # of the calls made and the endings: equal for equal runs

    def replay(self) -> str:
        """The one command that replays this case (with its minimal fault script)."""
        script = self.minimal if self.minimal is not None else self.script
        return f"make chaos SEED={self.case} FAULTS='{format_script(script)}'"

    def report(self) -> str:
        lines = [f"seed {self.case}: {self.violations[0]}"]
        lines += [f"    also {v}" for v in self.violations[1:4]]
        if self.minimal is not None:
            lines.append(f"    minimal faults: {format_script(self.minimal) or '(none)'}")
        lines.append(f"    replay: {self.replay()}")
        return "\n".join(lines)


def random_script(case: int, calls: int, events: bool, firings: bool = False) -> list[Fault]:
    """The fault script of ``case``: 1 to 6 faults at positions among ``calls`` calls (each
    fires at the first call from there that it applies to); a skew only where events are
    sent, a dropped firing only where a schedule fires."""
    rng = random.Random(f"faults-{case}")
    kinds = [k for k in _WEIGHTS if (events or k != "skew") and (firings or k != "drop_firing")]
    weights = [_WEIGHTS[k] for k in kinds]
    count = rng.choice([1, 1, 2, 2, 3, 4, 6])
    return sorted(
        Fault(rng.randint(1, max(1, calls)), rng.choices(kinds, weights)[0]) for _ in range(count)
    )


def program_of(case: int) -> Program:
    """The program a case runs."""
    return generate(case // SEEDS_PER_PROGRAM)


def fault_free(sim: World, program: Program) -> RunResult:
    """The fault-free run of ``program`` (kept for the program's next seed)."""
    global _REFERENCE
    if _REFERENCE is None or _REFERENCE[0] != program.number:
        _REFERENCE = (program.number, Driver(sim, program, [], "ref").run())
    return _REFERENCE[1]


def split(violations: list[Violation]) -> tuple[list[Violation], list[Violation]]:
    """(violations, known ones): what KNOWN_BUGS excuses is not a failure."""
    return [v for v in violations if v.known is None], [v for v in violations if v.known]


def run_case(
    case: int, faults: list[Fault] | None = None, *, shrink: bool = True, sim: World | None = None
) -> CaseResult:
    """Run one case (its own fault script unless ``faults`` is given); shrink a failure."""
    started = time.perf_counter()
    sim = sim or world()
    program = program_of(case)
    reference = fault_free(sim, program)
    found, known = split(
        [Violation(v.invariant, f"fault-free run: {v.detail}") for v in check(program, reference)]
    )
    if faults is None:
        events, firings = bool(program.events), bool(program.schedule_hours)
        faults = random_script(case, len(reference.trace), events, firings)
    result = CaseResult(case, faults, known=known)
    if found:  # the program alone breaks the promise: no fault needed
        result.violations, result.minimal = found, []
    else:
        run = Driver(sim, program, faults, "run").run()
        result.violations, result.known = split(check(program, run, reference))
        result.injected, result.calls = run.injected, len(run.trace)
        result.digest = digest(run)
        if result.violations and shrink:
            target = primary(result.violations)

            def still_fails(candidate: list[Fault]) -> bool:
                again = Driver(sim, program, candidate, "run").run()
                return primary(check(program, again, reference)) == target

            result.minimal = minimize(faults, still_fails)
    result.seconds = time.perf_counter() - started
    return result


def digest(run: RunResult) -> str:
    """A fingerprint of a run: every call (who made it, what), every fault, every ending."""
    text = repr(
        (
            [(c.container, c.operation) for c in run.trace],
            sorted(run.injected.items()),
            [
                (role, i.status, i.output, i.error, sorted(i.journal.items()))
                for role, i in sorted(run.instances.items())
            ],
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def minimize(faults: list[Fault], fails: Callable[[list[Fault]], bool]) -> list[Fault]:
    """Delta debugging (ddmin): a smallest-found sub-script for which ``fails`` still holds."""
    granularity = 2
    while len(faults) >= 2:
        size = -(-len(faults) // granularity)
        chunks = [faults[i : i + size] for i in range(0, len(faults), size)]
        for chunk in chunks:
            rest = [f for f in faults if f not in chunk]
            if fails(rest):
                faults, granularity = rest, max(granularity - 1, 2)
                break
        else:
            if granularity >= len(faults):
                break
            granularity = min(len(faults), granularity * 2)
    if len(faults) == 1 and fails([]):
        return []
    return faults


Job = int | tuple[int, str]  # a case, or a case with a fault script of its own


def _worker(job: Job) -> CaseResult:
    case, script = job if isinstance(job, tuple) else (job, None)
    try:
        return run_case(case, parse_script(script) if script is not None else None)
    except Exception as exc:  # a harness bug must not hide the other cases
        return CaseResult(case, [], [Violation("harness", f"{type(exc).__name__}: {exc}")])


def run_many(jobs: Iterable[Job], workers: int) -> Iterator[CaseResult]:
    """Run cases in ``workers`` processes (each with its own embedded AWS), in any order."""
    jobs = list(jobs)
    if workers <= 1:
        yield from map(_worker, jobs)
        return
    # spawn, not fork: a forked child would inherit the parent's threads and moto state
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool:
        yield from pool.imap_unordered(_worker, jobs, chunksize=4)


@dataclass
class Summary:
    """What a batch of cases found."""

    cases: int = 0
    failed: list[CaseResult] = field(default_factory=list)
    known: Counter[str] = field(default_factory=Counter)  # cases per known bug's issue item
    injected: Counter[str] = field(default_factory=Counter)
    features: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, result: CaseResult) -> None:
        self.cases += 1
        self.injected.update(result.injected)
        self.features.update(program_of(result.case).features())
        self.known.update({str(v.known) for v in result.known})
        if result.violations:
            self.failed.append(result)

    def text(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.injected.items())) or "none"
        by_invariant = Counter(primary(r.violations) for r in self.failed)
        lines = [
            f"seeds run: {self.cases}",
            f"violations: {len(self.failed)}"
            + (
                f" ({', '.join(f'{k} {n}' for k, n in by_invariant.most_common())})"
                if self.failed
                else ""
            ),
            f"faults injected: {sum(self.injected.values())} ({kinds})",
            "features: " + ", ".join(f"{k} {n}" for k, n in sorted(self.features.items())),
        ]
        if self.known:
            known = ", ".join(f"item {k}: {n}" for k, n in sorted(self.known.items()))
            lines.append(f"known bugs excused (KNOWN_BUGS), cases: {known}")
        if self.seconds:
            lines.append(f"wall time: {self.seconds:.1f} s")
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.simulation.chaos", description=__doc__)
    parser.add_argument(
        "--seeds", type=int, default=200, help="how many cases to run (from --first)"
    )
    parser.add_argument("--first", type=int, default=0, help="the first case number")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--seed", type=int, help="run this one case")
    parser.add_argument("--faults", help="with --seed: this fault script instead of its own")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    summary = Summary()
    if args.seed is not None:
        faults = parse_script(args.faults) if args.faults is not None else None
        result = run_case(args.seed, faults)
        print(f"program: {program_of(args.seed).describe()}")
        print(
            f"faults: {format_script(result.script) or '(none)'}; injected: {dict(result.injected)}"
        )
        summary.add(result)
        if result.violations:
            print(result.report())
        for violation in result.known:
            print(f"known (issue item {violation.known}): {violation}")
    else:
        cases = range(args.first, args.first + args.seeds)
        for result in run_many(cases, args.workers):
            summary.add(result)
            if result.violations:
                print(result.report(), flush=True)
            for violation in result.known[:1]:
                print(f"seed {result.case}: known (issue item {violation.known}): {violation}")
            if summary.cases % 500 == 0:
                elapsed = time.perf_counter() - started
                print(
                    f"... {summary.cases} seeds, {len(summary.failed)} failing, {elapsed:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    summary.seconds = time.perf_counter() - started
    print(summary.text())
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
