"""``GET`` and ``POST /links/{token}``: the approval links of ``wait_for_event(..., link=True)``.

The token is the credential, so the template serves this route without IAM (docs/security.md);
it is answered here, before the API's own checks and routes, and never by the resolver.

- ``GET`` checks the link and shows a confirmation page with one button. It changes nothing
  (a mail scanner or a link preview that fetches the URL sends no event).
- ``POST`` checks it again and sends the event, once: an optional JSON body (at most 64 KiB)
  is its payload; the page's button posts an empty form. The answer is a page for a browser
  (``Accept: text/html``) and JSON otherwise: ``{"sent": true, ...}``, or
  ``{"error": {"code", "message"}}`` with the status of :class:`~.links.LinkRefused`.

Every answer carries ``Referrer-Policy: no-referrer`` (the token never leaves in a
``Referer``), ``Cache-Control: no-store`` and a CSP that forbids scripts and framing. The
token is never logged: a log line names the workflow, instance, wait and outcome.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
from collections.abc import Mapping
from typing import Any

from lambda_workflows.aws.runtime import AwsRuntime
from lambda_workflows.engine.errors import InfrastructureError, InvalidInput, InvalidTransition
from lambda_workflows.engine.instances.approval_links import check_link, use_link
from lambda_workflows.engine.links import LINK_PATH, LinkClaims, LinkRefused, shown_claims
from lambda_workflows.observability import logger

from ._api_common import header, strict_json

__all__ = ["MAX_LINK_PAYLOAD", "answer", "is_link"]

MAX_LINK_PAYLOAD = 64 * 1024
_HEADERS = {
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
}


class _BadRequest(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def is_link(event: Mapping[str, Any]) -> bool:
    """Whether the request is for the links route."""
    return str(event.get("path") or "").startswith(LINK_PATH)


def answer(event: Mapping[str, Any], runtime: AwsRuntime) -> dict[str, Any]:
    """The proxy answer to a request on ``/links/...``."""
    method = str(event.get("httpMethod", "")).upper()
    html_wanted = "text/html" in (header(event, "accept") or "") or method == "GET"
    token = str(event.get("path") or "")[len(LINK_PATH) :]
    if method not in ("GET", "HEAD", "POST"):
        return _error(405, "method_not_allowed", f"use GET or POST, not {method}", html_wanted)
    if runtime.links is None:
        message = "this stack serves no approval links (WORKFLOWS_LINK_KEY is not set)"
        return _error(404, "not_found", message, html_wanted)
    try:
        if method != "POST":
            claims = check_link(runtime.service, runtime.links, token)
            _log("opened", claims)
            return _answer(200, _confirm_page(claims), html=True)
        payload = _payload(event)
        claims, _ = use_link(runtime.service, runtime.links, token, payload)
    except LinkRefused as refused:
        logger().info("approval link refused", extra={"code": refused.code})
        return _error(refused.status, refused.code, str(refused), html_wanted)
    except _BadRequest as bad:
        return _error(bad.status, bad.code, str(bad), html_wanted)
    except InvalidTransition as exc:  # finished between the check and the send
        return _error(410, "link_expired", f"this link has expired: {exc}", html_wanted)
    except InvalidInput as exc:
        return _error(400, exc.code, str(exc), html_wanted)
    except InfrastructureError:
        message = "the store is unavailable; nothing was sent, try again shortly"
        return _error(503, "storage_error", message, html_wanted)
    _log("used", claims)
    if html_wanted:
        return _answer(200, _done_page(claims), html=True)
    return _answer(200, json.dumps({"sent": True, **shown_claims(claims)}), html=False)


def _payload(event: Mapping[str, Any]) -> Any:
    """The event's payload: the JSON body, or None for no body or the page's empty form."""
    raw = _body(event)
    if len(raw) > MAX_LINK_PAYLOAD:
        raise _too_large(f"{len(raw):,} bytes")
    kind = (header(event, "content-type") or "").split(";")[0].strip().lower()
    if not raw.strip():
        return None
    if kind not in ("", "application/json"):
        raise _BadRequest(
            415,
            "unsupported_media_type",
            f"send the payload as Content-Type: application/json, not {kind!r}",
        )
    try:
        return strict_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _BadRequest(400, "invalid_json", f"the payload is not valid JSON ({exc})") from None


def _body(event: Mapping[str, Any]) -> bytes:
    body = event.get("body") or ""
    if not isinstance(body, str):
        raise _BadRequest(400, "invalid_body", "the body must be text")
    if len(body) > MAX_LINK_PAYLOAD * 4 // 3 + 4:  # over the cap however it is encoded
        raise _too_large(f"over {MAX_LINK_PAYLOAD:,} bytes")
    if not event.get("isBase64Encoded"):
        return body.encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise _BadRequest(400, "invalid_body", "the body is not valid base64") from None


def _too_large(size: str) -> _BadRequest:
    return _BadRequest(
        413,
        "payload_too_large",
        f"the payload is {size}, over the {MAX_LINK_PAYLOAD:,}-byte (64 KiB) limit of an "
        "approval link; send less, or a reference to it",
    )


def _log(what: str, claims: LinkClaims) -> None:
    logger().info(f"approval link {what}", extra=dict(shown_claims(claims)))


def _confirm_page(claims: LinkClaims) -> str:
    what = html.escape(claims.type)
    body = (
        f"<p>Send <b>{what}</b> to the wait <b>{html.escape(claims.name)}</b> of "
        f"<b>{html.escape(claims.workflow)}</b> instance "
        f"<b>{html.escape(claims.instance)}</b>?</p>"
        '<form method="post"><button type="submit">Confirm</button></form>'
        "<p><small>This link works once.</small></p>"
    )
    return _page(f"Confirm: {what}", body)


def _done_page(claims: LinkClaims) -> str:
    body = (
        f"<p>Done: <b>{html.escape(claims.type)}</b> was sent to "
        f"<b>{html.escape(claims.instance)}</b>. You can close this page.</p>"
    )
    return _page("Done", body)


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;"
        "padding:0 1rem}button{font-size:1.1rem;padding:.5rem 1.5rem}</style>"
        f"</head><body><h1>{title}</h1>{body}</body></html>"
    )


def _error(status: int, code: str, message: str, html_wanted: bool) -> dict[str, Any]:
    if html_wanted:
        page = _page("This link cannot be used", f"<p>{html.escape(message)}</p>")
        return _answer(status, page, html=True, code=code)
    body = json.dumps({"error": {"code": code, "message": message}})
    return _answer(status, body, html=False)


def _answer(status: int, body: str, *, html: bool, code: str | None = None) -> dict[str, Any]:
    kind = "text/html; charset=utf-8" if html else "application/json"
    headers = {**_HEADERS, "Content-Type": kind}
    if code is not None:
        headers["X-Link-Error"] = code  # what went wrong, for a script reading the page
    return {
        "statusCode": status,
        "body": body,
        "isBase64Encoded": False,
        "multiValueHeaders": {key: [value] for key, value in headers.items()},
    }
