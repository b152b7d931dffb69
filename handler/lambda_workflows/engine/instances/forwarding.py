"""A facade's methods that hand each call to one of its parts, declared once: the part's own
signature and docstring serve, not a restated copy (see
:class:`lambda_workflows.engine.instances.service.InstanceService`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

__all__ = ["forward"]

P = ParamSpec("P")
R = TypeVar("R")


class _Forward:
    """The descriptor behind :func:`forward`: ``facade.name`` is ``facade.<part>.name``."""

    def __init__(self, part: str, method: Callable[..., Any]) -> None:
        self.part = part
        self.name = method.__name__
        self.__doc__ = method.__doc__
        self.__wrapped__ = method

    def __get__(self, facade: Any, owner: type | None = None) -> Any:
        if facade is None:
            return self
        return getattr(getattr(facade, self.part), self.name)


def forward(
    part: str, method: Callable[Concatenate[Any, P], R]
) -> Callable[Concatenate[Any, P], R]:
    """A method of a facade that calls ``method`` on the facade's attribute ``part``, typed as
    ``method`` is (its parameters, its result), with its docstring."""
    return cast(Callable[Concatenate[Any, P], R], _Forward(part, method))
