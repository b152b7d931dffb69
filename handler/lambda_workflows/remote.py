"""The HTTP API, seen from a client: JSON requests to a base URL, signed when it is AWS's.

The Python client's HTTP mode (``Workflow("orders", url=...)``) and the ``lambda-workflows`` CLI
talk to the API through :class:`HttpApi`. A URL on ``execute-api.<region>.amazonaws.com`` is an API
Gateway stage protected by IAM (the template's default ``ApiAuth=AWS_IAM``): its requests are
signed with SigV4 from the default credential chain (environment, profile, SSO, instance role),
as ``curl --aws-sigv4`` would sign them. Any other URL (``lambda-workflows dev`` on
``http://127.0.0.1:8787``) is called unsigned unless ``sign=True``.

Only the standard library and botocore (for the signer and the credential chain) are used;
botocore is imported when a request is first signed.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, urlencode, urlsplit

__all__ = [
    "DEFAULT_URL",
    "URL_VARIABLE",
    "ApiError",
    "ApiUnreachable",
    "HttpApi",
    "NoCredentials",
    "RawAnswer",
    "default_url",
    "is_execute_api",
]

URL_VARIABLE: Final = "WORKFLOWS_URL"
DEFAULT_URL: Final = "http://127.0.0.1:8787"  # where `lambda-workflows dev` listens by default
_EXECUTE_API = re.compile(r"^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")
_TIMEOUT = 30.0


def default_url() -> str:
    """``WORKFLOWS_URL`` when it is set, else the dev server's address."""
    return os.environ.get(URL_VARIABLE) or DEFAULT_URL


def is_execute_api(url: str) -> bool:
    """True for an API Gateway URL (``https://<id>.execute-api.<region>.amazonaws.com/...``)."""
    return _EXECUTE_API.match(urlsplit(url).hostname or "") is not None


class ApiError(Exception):
    """The API answered with an error: its HTTP status, error code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class ApiUnreachable(Exception):
    """No answer from the API at all (connection refused, DNS, timeout)."""


class NoCredentials(ApiUnreachable):
    """A request to sign, and no AWS credentials to sign it with: nothing was sent."""


@dataclass(frozen=True)
class Answer:
    """A 2xx answer: its status and decoded JSON body (None when it had none)."""

    status: int
    body: Any


@dataclass(frozen=True)
class RawAnswer:
    """Any answer, as it came: status, headers and body bytes (what a proxy passes on)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A 3xx is the caller's to see: following it would resend a signed request elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class HttpApi:
    """Requests to one deployment of the API.

    Args:
        url: the API's base URL (``http://127.0.0.1:8787``, or the stack's ``ApiUrl`` output:
            an HTTP API's root, or a REST API's stage, ``.../v1``).
        sign: sign requests with SigV4; default: when ``url`` is an execute-api URL.
        region: the region to sign for; default: the one in the execute-api host name, else
            the credential chain's.
        timeout: seconds to wait for each answer.
    """

    def __init__(
        self,
        url: str,
        *,
        sign: bool | None = None,
        region: str | None = None,
        timeout: float = _TIMEOUT,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"{url!r} is not an http(s) URL; give the API's base URL, e.g. "
                f"{DEFAULT_URL} for `lambda-workflows dev` or the stack's ApiUrl output"
            )
        self.url = url.rstrip("/")
        self.sign = is_execute_api(url) if sign is None else sign
        match = _EXECUTE_API.match(parts.hostname)
        self.region = region or (match.group(1) if match else None)
        self.timeout = timeout

    def path(self, *segments: str, query: dict[str, Any] | None = None) -> str:
        """A path of percent-encoded segments, with the query's non-None values."""
        path = "/" + "/".join(quote(s, safe="") for s in segments)
        shown = {k: v for k, v in (query or {}).items() if v is not None}
        return f"{path}?{urlencode(shown)}" if shown else path

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        has_body: bool = False,
    ) -> Answer:
        """Send one request; a 2xx is returned, anything else raised.

        ``body`` is sent as JSON when given (or when ``has_body``: a JSON ``null``).

        Raises:
            ApiError: the API answered 4xx or 5xx.
            ApiUnreachable: no answer (nothing listens there, DNS, timeout).
        """
        data = json.dumps(body).encode() if body is not None or has_body else None
        sent = {"Accept": "application/json", **(headers or {})}
        if data is not None:
            sent["Content-Type"] = "application/json"
        url = self.url + path
        if self.sign:
            sent = self.signed(method, url, data, sent)
        req = urllib.request.Request(url, data=data, headers=sent, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:
                return Answer(response.status, _decode(response.read()))
        except urllib.error.HTTPError as exc:
            raise _api_error(exc.code, exc.read()) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            hint = " (is `lambda-workflows dev` running?)" if self.url == DEFAULT_URL else ""
            raise ApiUnreachable(f"cannot reach {self.url}: {reason}{hint}") from None

    def exchange(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> RawAnswer:
        """Send one request as given and return its answer unchanged, whatever its status.

        What ``lambda-workflows ui`` forwards: ``target`` (a path and query, appended to the base
        URL) and ``body`` go out as they are, signed like :meth:`request`'s; the status, headers and
        body come back as the API sent them, a 4xx or 5xx included. Redirects are not followed.

        Raises:
            ApiUnreachable: no answer (nothing listens there, DNS, timeout).
            NoCredentials: the request is to be signed and there are no credentials.
        """
        url = self.url + target
        sent = self.signed(method, url, body, headers) if self.sign else dict(headers)
        req = urllib.request.Request(url, data=body, headers=sent, method=method)
        opener = urllib.request.build_opener(_NoRedirects)  # per call: it reads the proxy settings
        try:
            with opener.open(req, timeout=self.timeout) as response:
                return RawAnswer(response.status, list(response.headers.items()), response.read())
        except urllib.error.HTTPError as exc:
            return RawAnswer(exc.code, list(exc.headers.items()), exc.read())
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ApiUnreachable(f"cannot reach {self.url}: {reason}") from None

    def signed(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str]
    ) -> dict[str, str]:
        """``headers`` plus the SigV4 ones for ``execute-api`` (see
        :mod:`lambda_workflows.aws.sigv4`)."""
        from .aws.sigv4 import MissingCredentials, sign_request  # botocore, only when signing

        try:
            return sign_request(method, url, data, headers, self.region)
        except MissingCredentials as exc:
            raise NoCredentials(str(exc)) from None


def _decode(raw: bytes) -> Any:
    return json.loads(raw) if raw.strip() else None


def _api_error(status: int, raw: bytes) -> ApiError:
    """The API's ``{"error": {"code", "message"}}``, or whatever else answered."""
    try:
        decoded = json.loads(raw)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        error = decoded.get("error")
        if isinstance(error, dict) and "code" in error and "message" in error:
            return ApiError(status, str(error["code"]), str(error["message"]))
        # API Gateway's own answers (IAM denied, missing token): {"message": ...}
        message = decoded.get("message") or decoded.get("Message")
        if isinstance(message, str):
            return ApiError(status, "gateway_error", message)
    text = raw.decode(errors="replace").strip()[:500]
    return ApiError(status, "http_error", text or f"HTTP {status} with no body")
