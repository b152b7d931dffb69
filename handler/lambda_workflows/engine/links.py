"""Approval links: a URL that delivers one event to one ``step.wait_for_event(..., link=True)``.

The token in the URL is the credential (its route needs no IAM signature), so everything
about it is decided here, with the standard library only:

- **What it binds.** ``workflow``, ``instance`` id, the instance's journal ``generation`` (a
  restart moves to a new one, so the links of the run before stop working), the wait's
  ``name``, the event ``type`` and the wait's ``timeout``. These claims are signed with
  HMAC-SHA256 under the stack's link key; changing one byte of the token, or signing with
  another key, is a :class:`LinkRefused` (``link_invalid``).
- **Deterministic.** The token depends on nothing but the claims and the key: every replay of
  ``run()`` mints the same URL, so a step that e-mails it records the same text.
- **Expiry is the wait's.** A link works while its wait is pending: not before the wait has
  started, not after it received an event or timed out (its deadline is the one the journal
  recorded, ``started_at + timeout``), not after the instance finished or was restarted.
- **Single use.** The event is sent with the idempotency key :func:`event_key`, a
  digest of the whole token: the event store's conditional write lets one send through; a
  second (even a concurrent one) finds the first and is refused (``link_used``).

The HTML and HTTP shape of the route is in :mod:`lambda_workflows.entrypoints._links`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from .errors import ConfigurationError, WorkflowError
from .immutable import immutable

__all__ = [
    "LINK_KEY_BYTES",
    "LINK_PATH",
    "LinkClaims",
    "LinkRefused",
    "LinkSigner",
    "event_key",
    "shown_claims",
]

LINK_PATH = "/links/"
"""Where links are served: ``GET`` and ``POST /links/{token}``."""
LINK_KEY_BYTES = 32
"""The key's length at least: 256 bits, HMAC-SHA256's block of security."""
_VERSION = "l1"
_MAX_TOKEN = 2048


class LinkRefused(WorkflowError):
    """A link that cannot be used now; nothing was written.

    ``status`` is the HTTP status its route answers with, ``code`` what went wrong:
    ``link_invalid`` (malformed, tampered, or signed with another key: 403), ``link_used``
    (its event was sent already: 409), ``link_expired`` (its wait ended, by an event or its
    timeout, or its instance finished: 410), ``link_stale`` (its instance was restarted or
    deleted, or its wait has not started: 409/410).
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@immutable
class LinkClaims:
    """What a token binds (see the module docstring)."""

    workflow: str
    instance: str
    generation: int
    name: str
    type: str
    timeout: float

    def encoded(self) -> bytes:
        """The claims as the token carries them (compact JSON, keys in a fixed order)."""
        fields = [self.workflow, self.instance, self.generation, self.name, self.type]
        return json.dumps([*fields, self.timeout], separators=(",", ":")).encode()

    @classmethod
    def decoded(cls, raw: bytes) -> LinkClaims:
        """The claims of a token whose signature was checked."""
        workflow, instance, generation, name, type_, timeout = json.loads(raw)
        return cls(str(workflow), str(instance), int(generation), str(name), str(type_), timeout)


class LinkSigner:
    """Mints and checks link tokens under one key, for URLs under ``base_url``.

    Args:
        key: the stack's link key (at least 32 bytes: ``WORKFLOWS_LINK_KEY``).
        base_url: where the API is served (``https://<api>.execute-api.<region>.amazonaws.com``,
            ``http://127.0.0.1:8787`` in ``lambda-workflows dev``); "" gives paths only.

    Raises:
        ConfigurationError: the key is shorter than 32 bytes.
    """

    def __init__(self, key: bytes, base_url: str = "") -> None:
        if len(key) < LINK_KEY_BYTES:
            raise ConfigurationError(
                f"the approval-link key is {len(key)} bytes; it must be at least "
                f"{LINK_KEY_BYTES}: template.yaml generates one per stack (LinkKey)"
            )
        self._key = key
        self.base_url = base_url.rstrip("/")

    @classmethod
    def from_setting(cls, key: str, base_url: str = "") -> LinkSigner:
        """A signer for the key as ``WORKFLOWS_LINK_KEY`` holds it: the text's UTF-8 bytes
        (template.yaml's LinkKey secret: 64 random letters and digits)."""
        return cls(key.encode(), base_url)

    def at(self, base_url: str) -> LinkSigner:
        """The same key, for URLs under another ``base_url``."""
        return LinkSigner(self._key, base_url)

    def mint(self, claims: LinkClaims) -> str:
        """The token for ``claims``: always the same for the same claims and key."""
        body = _b64(claims.encoded())
        return f"{_VERSION}.{body}.{_b64(self._sign(body))}"

    def url(self, claims: LinkClaims) -> str:
        """The link: ``{base_url}/links/{token}``."""
        return f"{self.base_url}{LINK_PATH}{self.mint(claims)}"

    def verify(self, token: str) -> LinkClaims:
        """The claims of a token this key signed.

        Raises:
            LinkRefused: ``link_invalid``: malformed, tampered, or signed with another key.
        """
        parts = token.split(".") if len(token) <= _MAX_TOKEN else []
        if len(parts) != 3 or parts[0] != _VERSION:
            raise _invalid("it is not an approval-link token")
        try:
            signature = _unb64(parts[2])
            raw = _unb64(parts[1])
        except (binascii.Error, ValueError):
            raise _invalid("it is not an approval-link token") from None
        if not hmac.compare_digest(signature, self._sign(parts[1])):
            raise _invalid("its signature does not match (changed, or from another stack)")
        try:
            return LinkClaims.decoded(raw)
        except (ValueError, TypeError):  # signed but unreadable: a key reused across versions
            raise _invalid("its claims are unreadable") from None

    def _sign(self, body: str) -> bytes:
        return hmac.new(self._key, f"{_VERSION}.{body}".encode(), hashlib.sha256).digest()


def event_key(token: str) -> str:
    """The idempotency key the link's event is sent with: one per token, never the token."""
    return "link-" + hashlib.sha256(token.encode()).hexdigest()[:40]


def shown_claims(claims: LinkClaims) -> Mapping[str, Any]:
    """What the confirmation page and the logs may show of a link (never the token)."""
    return {
        "workflow": claims.workflow,
        "instance": claims.instance,
        "wait": claims.name,
        "type": claims.type,
    }


def _invalid(why: str) -> LinkRefused:
    return LinkRefused(
        403,
        "link_invalid",
        f"this link is not valid: {why}; use the link exactly as you received it",
    )


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    if not text or any(c not in _ALPHABET for c in text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
