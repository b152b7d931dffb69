"""The one codec every recorded value goes through: step results, params, payloads, output.

Values are stored as JSON text. Plain JSON values (dicts, lists, tuples, strings, numbers,
booleans, None) are encoded by the standard library; pydantic models, dataclasses, datetimes,
UUIDs, sets, NaN and the rest by pydantic-core, imported the first time such a value comes by (it
is a cold-start cost a runner whose steps return plain JSON never pays). Decoding gives plain
JSON types back, or, when the step callback declares a return type (``def fetch() -> User``), a
value validated into that type. Because the first run also returns the *decoded* value, a
workflow sees the same types before and after a restart.
"""

from __future__ import annotations

import json
import sys
import typing
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pydantic

from .errors import NotSerializable, ResultTooLarge

MAX_VALUE_BYTES = 1024 * 1024
"""Limit on an encoded step result, event payload, params or workflow output (1 MiB)."""


def encode(value: Any, *, what: str = "step result", limit: int = MAX_VALUE_BYTES) -> str:
    """Encode ``value`` as JSON text.

    Raises:
        NotSerializable: the value has a type JSON cannot hold.
        ResultTooLarge: the encoded value is larger than ``limit`` bytes.
    """
    text = _plain(value)
    size = None if text is None else _utf8_size(text)
    if text is None or size is None:
        raw = _rich(value, what)
        text, size = raw.decode(), len(raw)
    if size > limit:
        raise ResultTooLarge(
            f"{what} is {size:,} bytes encoded, over the {limit:,}-byte (1 MiB) limit; "
            "store large data outside the workflow (e.g. S3) and return a reference to it "
            "(rules of Workflows: keep step return values under 1 MiB)"
        )
    return text


# Compact, UTF-8 (not \u escapes), NaN refused: what pydantic-core writes for plain JSON.
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _plain(value: Any) -> str | None:
    """``value`` as JSON text when it is plain JSON, else None."""
    kind = type(value)
    if kind is str:
        return _quoted(value)
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    try:
        return _JSON.encode(value)
    except (TypeError, ValueError):  # a type JSON does not know, NaN, a cycle
        return None


_quoted: Callable[[str], str] = json.encoder.encode_basestring


def _utf8_size(text: str) -> int | None:
    """Bytes of ``text`` in UTF-8; None for a lone surrogate (pydantic-core decides then)."""
    if text.isascii():
        return len(text)
    try:
        return len(text.encode())
    except UnicodeEncodeError:
        return None


def _rich(value: Any, what: str) -> bytes:
    """``value`` as JSON, by pydantic-core (models, dataclasses, datetimes, ...)."""
    import pydantic_core

    try:
        return pydantic_core.to_json(value)
    except pydantic_core.PydanticSerializationError as exc:
        raise NotSerializable(
            f"{what} is not JSON-serializable ({exc}); return JSON types, a pydantic model or "
            "a dataclass"
        ) from None


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
    import pydantic  # only for declared return types: a runner that never meets one skips it

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

    if not isinstance(hint, type):
        return False
    # A model class exists only once pydantic is imported: never import it just to ask.
    pydantic = sys.modules.get("pydantic")
    return dataclasses.is_dataclass(hint) or (
        pydantic is not None and issubclass(hint, pydantic.BaseModel)
    )
