"""Immutable classes: frozen, slotted dataclasses that cost a cold start less to define.

``@dataclass(frozen=True, slots=True)`` compiles six methods per class when the class is
defined, each with an ``exec`` of its own (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__``, ``__delattr__``): over a millisecond of CPU a class on CPython 3.11, which
shipped bytecode does not save, and a Lambda handler defines some fifty such classes before
its first request. ``@immutable`` makes the same kind of class with one ``exec``: ``__init__``,
whose speed every step pays, is generated as dataclasses generates it; the other methods are
shared functions, or closures over an :func:`operator.attrgetter` of the fields, and compile
nothing.

An immutable class is still a dataclass: ``dataclasses.fields``, ``replace``, ``asdict`` and
``is_dataclass`` work on it, its ``__match_args__`` are dataclasses' own, and mypy checks it
as a frozen dataclass (through ``dataclass_transform``). It keeps what the engine relies on:

- assigning or deleting an attribute raises ``dataclasses.FrozenInstanceError``;
- two instances are equal when they are of the same class and their fields are equal, in order;
  the hash is that of the fields (so equal instances hash alike and work as keys);
- the repr lists the fields, ``ClassName(a=1, b='x')``, unless the class writes its own;
- ``copy``, ``deepcopy`` and ``pickle`` work (through ``__getstate__``/``__setstate__``).

It refuses, when the class is defined, what it does not implement: ``field(...)`` options
other than a plain default (default factories, fields left out of init, compare or repr),
``__post_init__``, and a class of its own ``__setattr__``/``__delattr__``. A class needing
them uses ``@dataclass(frozen=True, slots=True)``. (``__dataclass_params__`` describes what
dataclasses itself generated, which is nothing but the fields and the slots.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")
_MISSING = dataclasses.MISSING


@overload
def immutable(cls: type[_T], /) -> type[_T]: ...


@overload
def immutable(*, kw_only: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(frozen_default=True)
def immutable(cls: type[_T] | None = None, /, *, kw_only: bool = False) -> Any:
    """Make ``cls`` an immutable, slotted dataclass (``@immutable`` or ``@immutable(kw_only=True)``,
    which makes every parameter of ``__init__`` keyword-only)."""

    def wrap(cls: type[_T]) -> type[_T]:
        return _make(cls, kw_only)

    return wrap if cls is None else wrap(cls)


def _make(cls: type[_T], kw_only: bool) -> type[_T]:
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"@immutable {cls.__qualname__}: __post_init__ is not supported")
    for method in ("__setattr__", "__delattr__"):
        if method in cls.__dict__:
            raise TypeError(f"@immutable {cls.__qualname__} is frozen: it cannot define {method}")
    if cls.__doc__ is None:  # what dataclasses would show, without its costly signature
        cls.__doc__ = f"{cls.__name__}({', '.join(getattr(cls, '__annotations__', {}))})"
    # fields, defaults, __match_args__ and the slotted class, with no method generated
    made: Any = dataclasses.dataclass(
        cls, init=False, repr=False, eq=False, slots=True, kw_only=kw_only
    )
    own = dataclasses.fields(made)
    for f in own:
        _check(made, f)
    values = attrgetter(*(f.name for f in own)) if own else _no_values
    methods: dict[str, Callable[..., Any]] = {
        "__init__": _init(made, own),
        "__repr__": _repr,
        "__eq__": _eq(values),
    }
    defined = made.__dict__
    for name, fn in methods.items():
        if name not in defined:  # as dataclasses does, a method the class writes is kept
            setattr(made, name, fn)
    if defined.get("__hash__") is None:  # not written (__eq__ written alone sets it to None)
        made.__hash__ = _hash(values)
    made.__setattr__ = _refuse_set
    made.__delattr__ = _refuse_delete
    made.__getstate__ = _getstate
    made.__setstate__ = _setstate
    return made  # type: ignore[no-any-return]


def _check(cls: type, f: dataclasses.Field[Any]) -> None:
    plain = (
        f.default_factory is _MISSING
        and f.init
        and f.repr
        and f.compare
        and f.hash is None
        and not f.metadata
    )
    if not plain:
        raise TypeError(
            f"@immutable {cls.__qualname__}.{f.name}: only a plain default is supported; use "
            "@dataclass(frozen=True, slots=True) for field() options"
        )
    if f.name == "self":
        raise TypeError(f"@immutable {cls.__qualname__}: a field cannot be named self")


def _init(cls: type, own: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """``__init__(self, a, b=..., *, c=...)``, setting each field in order, compiled once."""
    names: dict[str, Any] = {"__name__": cls.__module__, "_set": object.__setattr__}
    positional: list[str] = []
    keyword: list[str] = []
    for f in own:
        param = f.name
        if f.default is not _MISSING:
            names[f"_default_{f.name}"] = f.default
            param += f"=_default_{f.name}"
        (keyword if f.kw_only else positional).append(param)
    params = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    body = "".join(f"\n    _set(self, {f.name!r}, {f.name})" for f in own) or "\n    pass"
    exec(f"def __init__({params}) -> None:{body}", names)
    init: Callable[..., None] = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {f.name: f.type for f in own} | {"return": None}
    return init


def _no_values(_: object) -> tuple[()]:
    return ()


def _eq(values: Callable[[Any], Any]) -> Callable[[Any, object], Any]:
    def __eq__(self: Any, other: object) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(values: Callable[[Any], Any]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _repr(self: Any) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
    return f"{self.__class__.__qualname__}({shown})"


def _refuse_set(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_delete(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=True):
        object.__setattr__(self, f.name, value)
