"""The catalogue of lint rules: stable id, severity, title and the seed rule behind each.

The seed rules are the "rules of Workflows" (Cloudflare's good / bad examples); their short
names here match the modules of :mod:`examples` that port them to Python.
"""

from __future__ import annotations

from dataclasses import dataclass

from .findings import Severity

__all__ = ["RULES", "SEED_RULES", "Rule"]

SEED_RULES: dict[str, str] = {
    "idempotent-calls": "check before a non-idempotent call, a step may run more than once",
    "granular-steps": "one step per unrelated API/binding call",
    "no-state-outside-steps": "only step results survive a restart; build state from them",
    "side-effects-in-steps": "side effects and non-deterministic values belong inside steps",
    "dont-mutate-event": "the incoming event is read-only; return new state from a step",
    "deterministic-step-names": "a step name must be the same on every replay",
    "race-inside-step": "wrap a race (first-completed) in a step.do",
    "unique-instance-ids": "instance ids must be unique across all future instances",
    "await-steps": "await every step (or gather it)",
    "conditional-logic": "branch only on step results, the event, or constants",
    "batch-create": "create many instances with create_batch",
    "small-step-results": "keep step results small; store large data elsewhere",
    "syntax": "the file must parse",
}


@dataclass(frozen=True, slots=True)
class Rule:
    """One lint rule.

    Attributes:
        id: stable id used in output and in ``# workflows: ignore[...]`` comments.
        name: short kebab-case name.
        severity: ``"error"`` or ``"warning"``.
        seed_rule: the seed rule it enforces (a key of :data:`SEED_RULES`).
        title: one line saying what the rule catches.
    """

    id: str
    name: str
    severity: Severity
    seed_rule: str
    title: str


_ALL = (
    Rule("WF100", "syntax-error", "error", "syntax", "the file cannot be parsed"),
    Rule(
        "WF101",
        "non-deterministic-step-name",
        "error",
        "deterministic-step-names",
        "a step name is built from time, randomness or another value that changes on replay",
    ),
    Rule(
        "WF102",
        "non-determinism-outside-step",
        "error",
        "side-effects-in-steps",
        "time, randomness or uuid read in run() outside a step (also in a branch condition)",
    ),
    Rule(
        "WF103",
        "side-effect-outside-step",
        "error",
        "side-effects-in-steps",
        "I/O (AWS, HTTP, processes) or instance creation in run() outside a step",
    ),
    Rule(
        "WF104",
        "step-not-awaited",
        "error",
        "await-steps",
        "a step call whose result is never awaited or gathered",
    ),
    Rule("WF105", "event-mutated", "error", "dont-mutate-event", "run() changes the event"),
    Rule(
        "WF106",
        "state-mutated-in-step",
        "error",
        "no-state-outside-steps",
        "a step callback changes a variable of run() (or self) instead of returning a value",
    ),
    Rule(
        "WF107",
        "race-outside-step",
        "error",
        "race-inside-step",
        "a race (first completed, timeout) between steps outside a step.do",
    ),
    Rule(
        "WF108",
        "step-calls-two-services",
        "warning",
        "granular-steps",
        "one step callback calls two unrelated services",
    ),
    Rule(
        "WF109",
        "large-step-result",
        "warning",
        "small-step-results",
        "a step returns a whole HTTP response or body, which may exceed 1 MiB",
    ),
    Rule(
        "WF110",
        "create-in-loop",
        "warning",
        "batch-create",
        "instances created one by one in a loop instead of with create_batch",
    ),
    Rule(
        "WF111",
        "entity-id-as-instance-id",
        "warning",
        "unique-instance-ids",
        "an instance id that is a bare user/customer/account id, reused by later instances",
    ),
)

RULES: dict[str, Rule] = {rule.id: rule for rule in _ALL}
