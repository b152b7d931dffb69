"""Approval-link tokens: HMAC-SHA256 over the claims, deterministic, refused when changed."""

from __future__ import annotations

import dataclasses

import pytest

from lambda_workflows.engine.errors import ConfigurationError
from lambda_workflows.engine.links import LinkClaims, LinkRefused, LinkSigner, event_key

KEY = bytes(range(32))
CLAIMS = LinkClaims("approvals", "order-1", 1733400000000, "approval", "approved", 3600.0)


def refused(signer: LinkSigner, token: str) -> LinkRefused:
    with pytest.raises(LinkRefused) as caught:
        signer.verify(token)
    return caught.value


def test_a_minted_token_verifies_to_its_claims() -> None:
    signer = LinkSigner(KEY, "https://api.example")

    token = signer.mint(CLAIMS)

    assert signer.verify(token) == CLAIMS
    assert signer.url(CLAIMS) == f"https://api.example/links/{token}"


def test_the_same_claims_and_key_mint_the_same_token_every_time() -> None:
    # a replay of run() must produce the same URL as the pass that e-mailed it
    assert LinkSigner(KEY).mint(CLAIMS) == LinkSigner(KEY, "https://other").mint(CLAIMS)


@pytest.mark.parametrize(
    "change",
    [
        {"instance": "order-2"},
        {"generation": CLAIMS.generation + 1},
        {"name": "other wait"},
        {"type": "rejected"},
        {"timeout": 7200.0},
        {"workflow": "other"},
    ],
    ids=["instance", "generation", "wait", "type", "timeout", "workflow"],
)
def test_each_claim_changes_the_token(change: dict[str, object]) -> None:
    signer = LinkSigner(KEY)
    other = dataclasses.replace(CLAIMS, **change)  # type: ignore[arg-type]
    assert signer.mint(other) != signer.mint(CLAIMS)


def test_a_token_signed_with_another_key_is_refused() -> None:
    token = LinkSigner(bytes(32)).mint(CLAIMS)

    error = refused(LinkSigner(KEY), token)

    assert (error.status, error.code) == (403, "link_invalid")
    assert "signature" in str(error)


def test_a_tampered_token_is_refused_whatever_byte_changed() -> None:
    signer = LinkSigner(KEY)
    token = signer.mint(CLAIMS)
    for index in range(len(token)):
        flipped = "A" if token[index] != "A" else "B"
        tampered = token[:index] + flipped + token[index + 1 :]
        if tampered == token:
            continue
        assert refused(signer, tampered).code == "link_invalid", index


def test_claims_of_another_instance_with_this_tokens_signature_are_refused() -> None:
    # GIVEN two valid tokens: one for order-1, one for order-2
    signer = LinkSigner(KEY)
    version, _, signature = signer.mint(CLAIMS).split(".")
    other_claims = signer.mint(dataclasses.replace(CLAIMS, instance="order-2")).split(".")[1]

    # WHEN order-2's claims are sent with order-1's signature, THEN it is refused
    assert refused(signer, f"{version}.{other_claims}.{signature}").code == "link_invalid"


@pytest.mark.parametrize(
    "token", ["", "l1", "l1..", "l1.a.b", "x1.abc.def", "l1.!!!.???", "l1." + "a" * 5000 + ".b"]
)
def test_garbage_is_refused_as_invalid(token: str) -> None:
    assert refused(LinkSigner(KEY), token).code == "link_invalid"


def test_a_short_key_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="at least 32"):
        LinkSigner(b"short")
    with pytest.raises(ConfigurationError, match="at least 32"):
        LinkSigner.from_setting("x" * 31)
    assert LinkSigner.from_setting("x" * 64).mint(CLAIMS) == LinkSigner(b"x" * 64).mint(CLAIMS)


def test_the_event_key_is_a_valid_idempotency_key_and_not_the_token() -> None:
    token = LinkSigner(KEY).mint(CLAIMS)

    key = event_key(token)

    assert key.startswith("link-") and len(key) == 45
    assert token not in key and key == event_key(token)
