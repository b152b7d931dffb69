"""Sealed cursors: a position in a listing or a page, signed so that only cursors handed out
come back in.

A cursor is ``base64url(payload) "." base64url(HMAC-SHA256(key, payload))``, the payload being
compact JSON. It is checked in this order: its length (at most :data:`MAX_CURSOR` characters),
its form, then its signature with ``hmac.compare_digest``; only a cursor that passes all three
is parsed as JSON. So a forged one (deeply nested, of another table, a flipped character) is
refused as ``InvalidInput`` before anything reads it. Where the key lives is the store's
business: in the instance table on AWS (:mod:`lambda_workflows.aws.cursors`), in the process
for the in-memory store.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import InvalidInput

__all__ = ["MAX_CURSOR", "invalid_cursor", "seal", "unseal"]

MAX_CURSOR = 2048
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")


def invalid_cursor() -> InvalidInput:
    """The error for a cursor this store did not hand out (or one cut or changed since)."""
    return InvalidInput(
        "cursor is not valid: pass back, unchanged, the cursor of the previous page of the same "
        "listing, or start again without one"
    )


def seal(key: bytes, payload: Mapping[str, Any]) -> str:
    """A cursor carrying ``payload`` (JSON), signed with ``key``."""
    body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return f"{_encode(body)}.{_encode(_mac(key, body))}"


def unseal(key: Callable[[], bytes | None], cursor: str) -> Any:
    """The payload of a cursor :func:`seal` made with the key ``key()`` gives (None: there is
    no key, so no cursor is valid). The key is asked for only once the cursor's length and
    form are right.

    Raises:
        InvalidInput: anything else: too long, malformed, or a signature that does not match
            (checked before the payload is parsed).
    """
    if len(cursor) > MAX_CURSOR:
        raise invalid_cursor()
    encoded, dot, signature = cursor.partition(".")
    if not dot:
        raise invalid_cursor()
    body, mac = _decode(encoded), _decode(signature)
    secret = key()
    if secret is None or not hmac.compare_digest(mac, _mac(secret, body)):
        raise invalid_cursor()
    try:
        return json.loads(body)
    except ValueError:  # signed by us, so never; but never a 500 either
        raise invalid_cursor() from None


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).digest()


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _decode(text: str) -> bytes:
    """Unpadded base64url, strictly: any other character is an invalid cursor."""
    if not _BASE64URL.fullmatch(text):
        raise invalid_cursor()
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise invalid_cursor() from None
    if _encode(data) != text:
        # the last character's unused low bits differ: another spelling of the same bytes,
        # which a tampered cursor must not get through as its original
        raise invalid_cursor()
    return data
