"""The catalogue of lint rules: stable id, severity, title and the rule of Workflows behind each.

The rules of Workflows are Cloudflare's guide to writing workflows that survive replay
(https://developers.cloudflare.com/workflows/build/rules-of-workflows/). Each has a short key
here, matching the module of :mod:`examples` that shows it in Python, and the heading
Cloudflare's documentation gives it, so a finding can be looked up there.
"""

from __future__ import annotations

from dataclasses import dataclass

from .findings import Severity

__all__ = ["RULES", "RULES_OF_WORKFLOWS", "RULES_OF_WORKFLOWS_URL", "Rule", "rule_of_workflows"]

RULES_OF_WORKFLOWS_URL = "https://developers.cloudflare.com/workflows/build/rules-of-workflows/"

RULES_OF_WORKFLOWS: dict[str, str] = {
    "idempotent-calls": "Ensure API/Binding calls are idempotent",
    "granular-steps": "Make your steps granular",
    "no-state-outside-steps": "Don't rely on state outside of a step",
    "side-effects-in-steps": "Avoid doing side effects outside of a step",
    "dont-mutate-event": "Don't mutate your incoming events",
    "deterministic-step-names": "Name steps deterministically",
    "race-inside-step": "Take care with Promise.race() and Promise.any()",
    "unique-instance-ids": "Instance IDs are unique",
    "await-steps": "Always await your steps",
    "conditional-logic": "Use conditional logic carefully",
    "batch-create": "Batch multiple Workflow invocations",
    "small-step-results": "Keep step return values under 1 MiB",
}
"""Key of each rule of Workflows → its heading in Cloudflare's documentation."""


def rule_of_workflows(key: str) -> str:
    """The heading of a rule of Workflows, as a finding cites it: ``"make your steps granular"``.

    Raises:
        KeyError: ``key`` is not a key of :data:`RULES_OF_WORKFLOWS`.
    """
    heading = RULES_OF_WORKFLOWS[key]
    return heading[0].lower() + heading[1:]


@dataclass(frozen=True, slots=True)
class Rule:
    """One lint rule.

    Attributes:
        id: stable id used in output and in ``# lambda-workflows: ignore[...]`` comments.
        name: short kebab-case name.
        severity: ``"error"`` or ``"warning"``.
        workflow_rule: the rule of Workflows it enforces (a key of
            :data:`RULES_OF_WORKFLOWS`), or None for a file that cannot be read at all.
        title: one line saying what the rule catches.
    """

    id: str
    name: str
    severity: Severity
    workflow_rule: str | None
    title: str


_ALL = (
    Rule("WF100", "syntax-error", "error", None, "the file cannot be parsed"),
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
    Rule(
        "WF112",
        "bad-schedule",
        "error",
        None,
        "a schedules entry EventBridge Scheduler would refuse (bad cron or rate expression)",
    ),
    Rule(
        "WF113",
        "blocking-sleep",
        "error",
        "side-effects-in-steps",
        "a real-time sleep (time.sleep, asyncio.sleep) in run() outside a step; use step.sleep",
    ),
    Rule(
        "WF114",
        "suspension-swallowed",
        "error",
        "await-steps",
        "except BaseException / bare except / CancelledError (or finally: return) around a step",
    ),
    Rule(
        "WF115",
        "process-state-in-step-name",
        "error",
        "deterministic-step-names",
        "a step name built from module or class state that run() changes (it outlives a replay)",
    ),
    Rule(
        "WF116",
        "set-order-step-name",
        "error",
        "deterministic-step-names",
        "steps named or fed while iterating a set, whose order changes from process to process",
    ),
)

RULES: dict[str, Rule] = {rule.id: rule for rule in _ALL}
