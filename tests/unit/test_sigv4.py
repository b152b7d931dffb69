"""The client's HTTP mode signs requests with SigV4 exactly as botocore's own signer would.

A local server records what the client sends; the test then recomputes the signature with
botocore's ``SigV4Auth`` for the recorded method, URL, headers and body at the recorded
``X-Amz-Date`` — as API Gateway checks it, over the headers the request says it signed.
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from lambda_workflows import Workflow
from lambda_workflows.engine.errors import ConfigurationError

from .http_recorder import Recorded, Recorder, recording_server

ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "session-token-example"
AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[^,]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)


@dataclass(frozen=True)
class Signature:
    """An ``Authorization`` header taken apart."""

    key: str
    date: str
    region: str
    service: str
    signed: list[str]
    signature: str


def parse_authorization(request: Recorded) -> Signature:
    header = request.header("Authorization")
    assert header is not None, request.headers
    match = AUTHORIZATION.match(header)
    assert match, header
    parts = match.groupdict()
    return Signature(
        parts["key"],
        parts["date"],
        parts["region"],
        parts["service"],
        parts["signed"].split(";"),
        parts["signature"],
    )


def botocore_signature(
    request: Recorded, url: str, signed: list[str], region: str, body: bytes | None = None
) -> str:
    """What botocore's SigV4Auth computes for this request at its own X-Amz-Date."""
    headers = {k: v for k, v in request.headers if k.lower() in signed}
    replayed = AWSRequest(
        method=request.method,
        url=url + request.target,
        data=request.body if body is None else body,
        headers=headers,
    )
    replayed.context["timestamp"] = request.header("X-Amz-Date")
    signer = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN), "execute-api", region)
    canonical = signer.canonical_request(replayed)
    return str(signer.signature(signer.string_to_sign(replayed, canonical), replayed))


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed fake credentials, found by the default chain in the environment."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with recording_server() as server:
        yield server


def test_a_signed_request_carries_botocores_signature(
    credentials: None, recorder: Recorder
) -> None:
    # GIVEN a client told to sign, for a region, against a server that records its requests
    orders = Workflow("orders", url=recorder.url, sign=True, region="eu-west-3")

    # WHEN it creates an instance, sends it an event with a key, and lists by status and cursor
    recorder.answer = (201, {"id": "o-1", "status": "queued"})
    instance = orders.create(id="o-1", params={"sku": "cat-poster"})
    recorder.answer = (202, {"instance_id": "o-1", "type": "approved", "event_id": "1"})
    instance.send_event(type="approved", payload={"user": "ana"}, key="approval-1")
    recorder.answer = (200, {"instances": [], "cursor": None})
    orders.list(status="waiting", cursor="c2lnbmVk+/=", limit=5)

    # THEN each signature is the one botocore computes for that request, key and scope
    assert [r.method for r in recorder.requests] == ["POST", "POST", "GET"]
    for sent in recorder.requests:
        signature = parse_authorization(sent)
        assert (signature.key, signature.region, signature.service) == (
            ACCESS_KEY,
            "eu-west-3",
            "execute-api",
        )
        assert (sent.header("X-Amz-Date") or "")[:8] == signature.date
        assert sent.header("X-Amz-Security-Token") == SESSION_TOKEN
        assert {"host", "x-amz-date", "x-amz-security-token"} <= set(signature.signed)
        expected = botocore_signature(sent, recorder.url, signature.signed, "eu-west-3")
        assert signature.signature == expected, sent
    # the body's type and the idempotency key are signed too: nobody can swap them
    event = recorder.requests[1]
    assert {"content-type", "idempotency-key"} <= set(parse_authorization(event).signed)
    assert event.header("Idempotency-Key") == "approval-1"
    # and the check is a check: another body gives another signature
    signed = parse_authorization(event).signed
    tampered = botocore_signature(event, recorder.url, signed, "eu-west-3", body=b"{}")
    assert tampered != parse_authorization(event).signature


API_HOST = "http://a1b2c3d4e5.execute-api.eu-west-2.amazonaws.com"


@pytest.mark.parametrize(
    "api_url",
    [API_HOST, API_HOST + "/", API_HOST + "/v1"],
    ids=["http-api-root", "http-api-root-slash", "rest-api-stage"],
)
def test_an_execute_api_url_is_signed_by_default_for_the_region_in_its_host(
    credentials: None, recorder: Recorder, monkeypatch: pytest.MonkeyPatch, api_url: str
) -> None:
    # GIVEN an API Gateway URL (an HTTP API's ApiUrl is its root, a REST API's its stage),
    # reached through the recording server as an HTTP proxy (so no request leaves the
    # machine), and another region configured for the credential chain
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("http_proxy", recorder.url)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    urllib.request.install_opener(None)  # the next request builds an opener that sees the proxy
    recorder.answer = (201, {"id": "o-1", "status": "queued"})
    try:
        # WHEN a client of that URL, told nothing about signing, creates an instance
        Workflow("orders", url=api_url).create(id="o-1")
    finally:
        urllib.request.install_opener(None)  # later requests: an opener without the proxy

    # THEN the request went to the API's host, signed for the region its host names
    [sent] = recorder.requests
    assert sent.target == f"{api_url.rstrip('/')}/workflows/orders/instances"
    assert sent.header("Host") == "a1b2c3d4e5.execute-api.eu-west-2.amazonaws.com"
    signature = parse_authorization(sent)
    assert (signature.region, signature.service) == ("eu-west-2", "execute-api")
    expected = botocore_signature(sent, "", signature.signed, "eu-west-2")
    assert signature.signature == expected


def test_a_local_url_is_not_signed(credentials: None, recorder: Recorder) -> None:
    # GIVEN credentials in the environment, and the URL of a `lambda-workflows dev`
    recorder.answer = (201, {"id": "o-1", "status": "queued"})

    # WHEN the client creates an instance there
    Workflow("orders", url=recorder.url).create(id="o-1")

    # THEN the request carries no signature at all
    [sent] = recorder.requests
    assert sent.header("Authorization") is None
    assert sent.header("X-Amz-Date") is None and sent.header("X-Amz-Security-Token") is None


def test_signing_without_credentials_is_a_configuration_error_and_sends_nothing(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # GIVEN no credentials anywhere in the default chain
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    # WHEN a signing client sends a request
    orders = Workflow("orders", url=recorder.url, sign=True)
    with pytest.raises(ConfigurationError) as caught:
        orders.create(id="o-1")

    # THEN it says how to give credentials, and nothing reached the server
    assert "credentials" in str(caught.value)
    assert recorder.requests == []
