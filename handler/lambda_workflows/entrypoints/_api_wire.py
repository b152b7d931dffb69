"""The answers of the direct path, dumped as the resolver's answer models dump them.

Each route's answer model (:mod:`._api_answers`) is the contract, and the OpenAPI document
shows it: its fields in their order, every optional one present (null or its default) unless
its ``exclude_if`` leaves it out, nothing else. :mod:`._api_ops` answers with the service's
dicts, which are close to that but not the same (a step row has no ``output_truncated`` until
one is cut, an error may carry its traceback where the model shows name and message only, a
dict lists a version's keys in another order).

The models' fields are read from :data:`._api_wire_fields.FIELDS`, which
:mod:`._api_wire_gen` generates from the models themselves: a test generates it again and
compares, so a field added to, removed from or changed in a model fails until the table is
generated anew. This module dumps an answer from that table as pydantic's
``model_dump(mode="json")`` does, without importing pydantic or the models (a cold start
pays for neither).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._api_routes import ROUTES
from ._api_wire_fields import FIELDS, KEEPS_UNDECLARED

Shape = Callable[[Any], Any]
Row = tuple[str, Any, str, str]
"""One field of a model: its name, its default (``...`` when required), how its value dumps
(see :func:`value_dump`) and when it is left out (a key of :data:`OMITTED_WHEN`, or "")."""


def absent_when_none(value: object) -> bool:
    """``exclude_if`` of an answer field left out when it is null."""
    return value is None


def absent_when_empty(value: object) -> bool:
    """``exclude_if`` of an answer field left out when it is empty (or zero)."""
    return not value


OMITTED_WHEN: dict[str, Callable[[Any], bool]] = {
    "none": absent_when_none,
    "empty": absent_when_empty,
}
"""The answer models' ``exclude_if`` rules, by their name in the table."""


def dumpers(
    fields: Mapping[str, tuple[Row, ...]], keeps_undeclared: tuple[str, ...] = ()
) -> dict[str, Shape]:
    """A dump function for each model of ``fields`` (whose nested models it holds too)."""
    built: dict[str, Shape] = {}
    for model in fields:  # a nested model comes after the model that holds it: bind late
        built[model] = _model_dump(fields[model], model in keeps_undeclared, built)
    return built


def _model_dump(rows: tuple[Row, ...], keeps_undeclared: bool, models: dict[str, Shape]) -> Shape:
    """How one model dumps a mapping: its fields in order, then (``extra="allow"``) the keys
    it does not declare, in the mapping's order."""
    fields = [
        (name, default, value_dump(kind, models), OMITTED_WHEN.get(omitted))
        for name, default, kind, omitted in rows
    ]
    declared = {name for name, *_ in rows}

    def dump(answer: Mapping[str, Any]) -> dict[str, Any]:
        shown: dict[str, Any] = {}
        for name, default, value, omitted in fields:
            found = answer[name] if default is ... else answer.get(name, default)
            found = None if found is None else value(found)
            if omitted is None or not omitted(found):
                shown[name] = found
        if keeps_undeclared:
            shown.update((key, item) for key, item in answer.items() if key not in declared)
        return shown

    return dump


def value_dump(kind: str, models: Mapping[str, Shape]) -> Shape:
    """How a value of ``kind`` dumps: "" as it is, "float" as a float, a model's name as that
    model, "list:<kind>" each item as ``kind``, "dict:<kind>" each value as ``kind``."""
    container, _, inner = kind.partition(":")
    if container == "list":
        item = value_dump(inner, models)
        return lambda items: [None if found is None else item(found) for found in items]
    if container == "dict":
        item = value_dump(inner, models)
        return lambda found: {k: None if v is None else item(v) for k, v in found.items()}
    if kind == "float":
        return float
    if kind:
        return lambda found: models[kind](found)
    return _copy


def _copy(value: Any) -> Any:
    """A value the model dumps as it is (a list or dict copied, as the model copies it)."""
    return type(value)(value) if isinstance(value, list | dict) else value


_DUMPERS = dumpers(FIELDS, KEEPS_UNDECLARED)

# a model not in the table yet has no shape (the generator, which imports this, still runs)
SHAPES: dict[str, Shape] = {r.answer: _DUMPERS[r.answer] for r in ROUTES if r.answer in _DUMPERS}
"""How each route's answer model dumps, by the model's name."""
