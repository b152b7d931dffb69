"""Deep-frozen containers for the workflow event.

Rules of Workflows, "Don't mutate your incoming events": changes to ``event.payload`` are lost,
so after a restart the workflow would silently see the original value again. Here every
mutation raises :class:`EventMutationError` at once. The containers subclass ``dict`` and
``list`` so JSON encoding, ``isinstance`` checks and equality keep working.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from .errors import EventMutationError

_RULE = (
    "the workflow event is immutable: changes to it are not persisted and would be lost on "
    "the next replay (rules of Workflows: don't mutate your incoming events). Return data from a "
    "step.do instead and use the step's result"
)


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise EventMutationError(_RULE)


class FrozenDict(dict[str, Any]):
    """A ``dict`` that refuses every mutation."""

    __slots__ = ()
    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __copy__(self) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> Any:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A ``list`` that refuses every mutation."""

    __slots__ = ()
    __setitem__ = __delitem__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __iadd__ = __imul__ = _refuse

    def __copy__(self) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> Any:
        return (FrozenList, (list(self),))


def freeze(value: Any) -> Any:
    """A deep-frozen copy of a JSON-like value."""
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, Mapping):
        frozen = FrozenDict()
        for key, item in value.items():
            dict.__setitem__(frozen, key, freeze(item))
        return frozen
    if isinstance(value, list | tuple):
        frozen_list = FrozenList()
        for item in value:
            list.append(frozen_list, freeze(item))
        return frozen_list
    return value


def thaw(value: Any) -> Any:
    """A mutable deep copy (what ``copy.copy`` of a frozen container returns)."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list):
        return [thaw(item) for item in value]
    return value
