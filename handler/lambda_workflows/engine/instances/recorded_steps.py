"""The steps an instance's journal recorded, and finding one of them by name, occurrence and
type: what a restart from a step and the step output endpoint look up, and what they answer
when the step is not there (the steps that are).

Only forward steps count (``step.do``, ``step.sleep``, ``step.wait_for_event``); a step's
rollback is part of the step, never a step of its own here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lambda_workflows.engine.errors import InvalidInput
from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import EntryKind, JournalEntry, StepInfo
from lambda_workflows.engine.replay.journal import NEST, base_key

__all__ = [
    "FORWARD_KINDS",
    "RecordedStep",
    "StepOutput",
    "StepSelector",
    "describe_steps",
    "find_step",
    "recorded_steps",
    "root_positions",
]

FORWARD_KINDS = frozenset(
    {EntryKind.STEP, EntryKind.ATTEMPT, EntryKind.SLEEP, EntryKind.WAIT, EntryKind.DELIVERY}
)
"""The entries of forward steps (not of rollbacks)."""

_TYPES = {
    "do": "do",
    "sleep": "sleep",
    "waitForEvent": "waitForEvent",
    "runWorkflow": "runWorkflow",
}
_TYPE_ALIASES = {**_TYPES, "wait_for_event": "waitForEvent", "run_workflow": "runWorkflow"}
_CALL_TYPES = {
    "do": "do",
    "sleep": "sleep",
    "wait_for_event": "waitForEvent",
    "run_workflow": "runWorkflow",
}
_SELECTOR_KEYS = frozenset({"name", "count", "type"})
_LISTED = 20  # steps named in a "not found" message before "and N more"


@immutable
class StepSelector:
    """Which step: its name, its occurrence (1-based ``count``, as in ``ctx.step.count``) and,
    optionally, its type (``do``, ``sleep`` or ``waitForEvent``; None matches any)."""

    name: str
    count: int = 1
    type: str | None = None

    @classmethod
    def parse(cls, value: Any, *, what: str = "from_step") -> StepSelector:
        """A selector from ``{"name", "count"?, "type"?}`` (or a selector), checked.

        Raises:
            InvalidInput: not an object, an unknown key, an empty name, a count that is not
                a whole number ≥ 1, or an unknown type.
        """
        if isinstance(value, StepSelector):
            return value
        if not isinstance(value, Mapping):
            raise InvalidInput(
                f'{what} must be an object {{"name": ..., "count"?: 1, "type"?: "do"}}, not '
                f"{type(value).__name__}"
            )
        unknown = sorted(map(str, set(value) - _SELECTOR_KEYS))
        if unknown:
            raise InvalidInput(f"{what} has unknown key(s) {unknown}; it takes name, count, type")
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"{what}.name must be the step's name, a non-empty string")
        count = value.get("count", 1)
        if count is None:
            count = 1
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidInput(
                f"{what}.count must be a whole number ≥ 1 (the step's occurrence: 1 for the "
                f"first call with this name), not {count!r}"
            )
        return cls(name, count, _step_type(value.get("type"), what))

    def matches(self, step: RecordedStep) -> bool:
        """True when ``step`` is the one this selects."""
        return (
            step.name == self.name
            and step.count == self.count
            and (self.type is None or step.type == self.type)
        )

    def __str__(self) -> str:
        kind = "" if self.type is None else f", type {self.type}"
        return f"{self.name!r} (occurrence {self.count}{kind})"


def _step_type(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in _TYPE_ALIASES:
        raise InvalidInput(
            f"{what}.type must be one of {', '.join(_TYPES)} (or left out to match any), not "
            f"{value!r}"
        )
    return _TYPE_ALIASES[value]


@immutable
class RecordedStep:
    """One step the journal recorded: its key, identity and where ``run()`` called it.

    ``position`` is the call position in ``run()`` of the step itself, or of the root step
    whose callback it is nested in (``parent`` is then the enclosing step's key).
    """

    key: str
    name: str
    count: int
    type: str
    parent: str | None
    position: int | None

    def __str__(self) -> str:
        occurrence = "" if self.count == 1 else f" #{self.count}"
        nested = "" if self.parent is None else ", nested"
        return f"{self.name!r}{occurrence} ({self.type}{nested})"


@immutable
class StepOutput:
    """One step's full recorded output (``GET …/instances/{id}/steps/{name}``).

    ``output`` is a ``do`` step's result (``"[REDACTED]"`` for a sensitive one), the payload
    of the event a ``waitForEvent`` step received, None otherwise (a sleep, a failed step).
    """

    name: str
    count: int
    type: str
    status: str
    output: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "count": self.count,
            "type": self.type,
            "status": self.status,
            "output": self.output,
        }

    def __getitem__(self, key: str) -> Any:
        """Also readable as a mapping: ``output["output"]``."""
        return self.to_dict()[key]

    @classmethod
    def from_row(cls, row: StepInfo) -> StepOutput:
        """The output a timeline row shows (its value already redacted when sensitive)."""
        return cls(row.name, row.count, row.type, str(row.status), row.output)

    @classmethod
    def from_dict(cls, shown: Mapping[str, Any]) -> StepOutput:
        """The output a :meth:`to_dict` shows (the body of the API's answer)."""
        return cls(
            str(shown["name"]),
            int(shown["count"]),
            str(shown["type"]),
            str(shown["status"]),
            shown.get("output"),
        )


def root_positions(entries: Iterable[JournalEntry]) -> dict[str, int]:
    """The call position of each root step, by its key."""
    found: dict[str, int] = {}
    for entry in entries:
        if entry.kind in FORWARD_KINDS and entry.parent is None and entry.position is not None:
            found.setdefault(base_key(entry), entry.position)
    return found


def recorded_steps(entries: Iterable[JournalEntry]) -> list[RecordedStep]:
    """Every forward step recorded, in the order ``run()`` called them (a nested step right
    after its root step)."""
    forward = [e for e in entries if e.kind in FORWARD_KINDS]
    positions = root_positions(forward)
    steps: dict[str, RecordedStep] = {}
    for entry in sorted(forward, key=lambda e: (e.at, e.key)):
        key = base_key(entry)
        if key not in steps:
            steps[key] = RecordedStep(
                key,
                entry.name,
                entry.count,
                _CALL_TYPES[entry.call_kind],
                entry.parent,
                positions.get(key.split(NEST, 1)[0]),
            )

    def order(step: RecordedStep) -> tuple[float, int]:
        return (float("inf") if step.position is None else step.position, step.key.count(NEST))

    return sorted(steps.values(), key=order)


def find_step(steps: Sequence[RecordedStep], selector: StepSelector) -> RecordedStep | None:
    """The step ``selector`` names: a root step first, else a nested one; None if neither."""
    matching = [step for step in steps if selector.matches(step)]
    roots = [step for step in matching if step.parent is None]
    found = roots or matching
    return found[0] if found else None


def describe_steps(steps: Sequence[RecordedStep]) -> str:
    """The recorded steps, for a message: ``'charge' (do), 'nap' #2 (sleep)`` (the first 20)."""
    if not steps:
        return "it has recorded no step yet"
    shown = ", ".join(map(str, steps[:_LISTED]))
    more = f" and {len(steps) - _LISTED} more" if len(steps) > _LISTED else ""
    return f"recorded steps: {shown}{more}"
