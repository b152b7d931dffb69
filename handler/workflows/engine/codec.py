"""The one codec every recorded value goes through: step results, params, payloads, output.

Values are stored as JSON text. Pydantic models, dataclasses, datetimes, UUIDs, tuples and sets
are encoded by pydantic-core; decoding gives plain JSON types back, or, when the step callback
declares a return type (``def fetch() -> User``), a value validated into that type. Because the
first run also returns the *decoded* value, a workflow sees the same types before and after a
restart.
"""

from __future__ import annotations

import json
import typing
from functools import lru_cache
from typing import Any

import pydantic
import pydantic_core

from .errors import NotSerializable, ResultTooLarge

MAX_VALUE_BYTES = 1024 * 1024
"""Limit on an encoded step result, event payload, params or workflow output (1 MiB)."""


def encode(value: Any, *, what: str = "step result", limit: int = MAX_VALUE_BYTES) -> str:
    """Encode ``value`` as JSON text.

    Raises:
        NotSerializable: the value has a type JSON cannot hold.
        ResultTooLarge: the encoded value is larger than ``limit`` bytes.
    """
    try:
        raw = pydantic_core.to_json(value)
    except pydantic_core.PydanticSerializationError as exc:
        raise NotSerializable(
            f"{what} is not JSON-serializable ({exc}); return JSON types, a pydantic model or "
            "a dataclass"
        ) from None
    if len(raw) > limit:
        raise ResultTooLarge(
            f"{what} is {len(raw):,} bytes encoded, over the {limit:,}-byte (1 MiB) limit; "
            "store large data outside the workflow (e.g. S3) and return a reference to it "
            "(rules of Workflows: keep step return values under 1 MiB)"
        )
    return raw.decode()


def decode(text: str | None, as_type: Any = None) -> Any:
    """Decode JSON text produced by :func:`encode`, optionally validated into ``as_type``."""
    if text is None:
        return None
    value = json.loads(text)
    if as_type is None:
        return value
    return _adapter(as_type).validate_python(value)


@lru_cache(maxsize=256)
def _adapter(as_type: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(as_type)


_PLAIN = {Any, object, None, type(None)}


def return_type(callback: Any) -> Any:
    """The declared return type of a callback worth validating into, or None.

    Plain JSON-ish annotations (``Any``, ``dict``, ``None``...) give None: the decoded JSON is
    returned as is, which is cheaper on replay. Resolved once per function body and annotation.
    """
    annotations = getattr(callback, "__annotations__", None)
    if not annotations or "return" not in annotations:
        return None
    hint = annotations["return"]
    key = (getattr(callback, "__code__", None), hint if isinstance(hint, str) else id(hint))
    try:
        return _RESOLVED[key]
    except KeyError:
        pass
    except TypeError:  # unhashable annotation: resolve without caching
        return _resolve(callback, hint)
    resolved = _RESOLVED[key] = _resolve(callback, hint)
    return resolved


_RESOLVED: dict[tuple[Any, Any], Any] = {}


def _resolve(callback: Any, hint: Any) -> Any:
    if isinstance(hint, str):
        try:
            hint = typing.get_type_hints(callback).get("return")
        except Exception:  # an unresolvable forward reference: fall back to plain JSON
            return None
    origin = typing.get_origin(hint)
    if origin in (typing.Awaitable, typing.Coroutine) or str(origin) == "collections.abc.Coroutine":
        args = typing.get_args(hint)
        hint = args[-1] if args else None
    if hint in _PLAIN or hint in (dict, list, str, int, float, bool):
        return None
    if _is_pydantic_or_dataclass(hint):
        return hint
    # Containers of models (list[User]) and unions are validated too; plain generics are not.
    if any(_is_pydantic_or_dataclass(a) for a in typing.get_args(hint)):
        return hint
    return None


def _is_pydantic_or_dataclass(hint: Any) -> bool:
    import dataclasses

    return isinstance(hint, type) and (
        issubclass(hint, pydantic.BaseModel) or dataclasses.is_dataclass(hint)
    )
