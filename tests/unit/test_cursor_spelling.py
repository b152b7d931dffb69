"""A signed cursor is read only in the spelling it was written in: base64url leaves a few low
bits of its last character unused, and a cursor whose last character differs only there
decodes to the same bytes. Tampering of that kind must be refused, as any other."""

from __future__ import annotations

import pytest

from lambda_workflows.engine import cursors
from lambda_workflows.engine.errors import InvalidInput

KEY = b"k" * 32
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def test_a_cursor_whose_last_character_differs_only_in_unused_bits_is_refused() -> None:
    # GIVEN a cursor as sealed (a 32-byte signature: 43 characters, the last carrying 4 bits)
    cursor = cursors.seal(KEY, {"after": "x", "done": 3})
    assert cursors.unseal(lambda: KEY, cursor) == {"after": "x", "done": 3}
    last = ALPHABET.index(cursor[-1])
    # WHEN its last character is swapped for one with the same 4 used bits
    twin = cursor[:-1] + ALPHABET[(last & ~0b11) | ((last + 1) & 0b11)]
    assert twin != cursor
    # THEN it is refused, though it decodes to the very same signature
    with pytest.raises(InvalidInput, match="cursor is not valid"):
        cursors.unseal(lambda: KEY, twin)
