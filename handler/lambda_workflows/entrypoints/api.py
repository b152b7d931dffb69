"""ApiFunction: the HTTP API of docs/semantics.md (API Gateway, Lambda proxy integration).

API Gateway delivers the REST API's event: from the template's HTTP API (payload format 1.0,
its header names in lower case, the ``$default`` stage in no path) or from its REST API
(``ApiType=REST``). Both are read alike (tests/functional/api/test_http_api_events.py).

Every route calls :class:`~lambda_workflows.engine.instances.service.InstanceService` once
(:mod:`._api_ops`) and answers with its model of :mod:`.api_models`. A request takes one of two
paths, which answer alike, byte for byte: a well-formed one is read and answered by
:mod:`._api_direct`, which needs neither Powertools' resolver nor pydantic (so a cold start loads
neither); the others, the OpenAPI document and the Swagger UI are left to the Powertools resolver of
:mod:`._api_resolver`, which validates them against the models and is loaded on the first such
request. Every failure is JSON ``{"error": {"code", "message"}}``:

====  ======================  =================================================================
400   invalid_json            the body is not JSON (or not UTF-8, or bad base64), or an object
                              in it has a key twice
400   invalid_body            the body is not what the route takes at all (e.g. a string for {})
400   invalid_input           the engine refused a value: bad event type, bad cursor, params
                              over 1 MiB encoded
400   stale_cursor            a cursor of an instance's steps or history handed out before it
                              was restarted: read again from the first page
404   unknown_workflow        no workflow of that name (a malformed name included)
404   instance_not_found      no instance of that id (a malformed id included)
404   step_not_found          the instance recorded no such step (the message lists its steps)
404   not_found               no such route (a path segment with characters no name, id or
                              event type may hold included)
405   method_not_allowed      the route exists, not with this method (``Allow`` lists them)
409   instance_exists         the id is taken (ids are never reused)
409   invalid_transition      the instance has finished (pause, resume, terminate, events)
413   body_too_large          the body is over 1 MiB
415   unsupported_media_type  a body that is not ``application/json`` (in any letter case)
422   validation_error        a field is missing, of the wrong type, unknown, or out of range;
                              or a JSON array sent to a route that takes one object; or a
                              batch item that is not a JSON object
503   storage_error           DynamoDB or SQS failed; safe to retry
500   configuration_error     the service is misconfigured: no workflow is registered, or a
                              setting is missing; the message says what to set
500   internal_error          a bug; logged with its traceback
====  ======================  =================================================================

A request that gets a 4xx has written nothing: every check runs before the first write. The
batch routes answer for each item: an item that cannot be created (a bad id or params, an id
repeated in the batch, a taken id) or deleted (no such instance, not an id) is reported in the
answer's ``errors`` by its index and the others are done; only a body that is not a list of at
most 100 objects (``{ids: [...]}`` of at most 100 strings for a delete) is refused whole.

``GET …/instances/{id}`` leaves out each step output over 64 KiB (and any past 4 MiB of them in all:
a Lambda answer holds at most 6 MB) as ``output: null, output_truncated: true``; ``GET
…/instances/{id}/steps/{step_name}?count=N`` answers with one step's output, whole. It carries the
first page of the step timeline (at most 1,000 rows and 512 KiB), with ``steps_total`` and
``steps_cursor`` when there are more; ``GET …/instances/{id}/steps`` and ``GET
…/instances/{id}/history`` page with ``limit`` and ``cursor`` (see
:mod:`lambda_workflows.engine.instances.pages`), so every answer stays bounded however long the
instance.

``GET /openapi.json`` serves the OpenAPI 3.1 document; ``GET /docs`` the Swagger UI (bundled
assets, no CDN). Both name the server the request came through (see :func:`_base_path`), so
the UI's "Try it out" calls the API where it is served: the stage (``/v1``) on a REST API's
execute-api domain, ``/`` on an HTTP API's, on a custom domain and in ``lambda-workflows dev``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lambda_workflows.aws.runtime import get_runtime
from lambda_workflows.engine.errors import ConfigurationError
from lambda_workflows.observability import logger
from lambda_workflows.registry import load_workflows

from . import _api_direct, _links
from ._api_common import JSON_MEDIA_TYPE, RUNTIME, error, header, shown, strict_json
from ._api_ops import STEP_OUTPUT_CAP
from ._wiring import LambdaHandler, RuntimeSource, runtime_of

if TYPE_CHECKING:
    from ._api_resolver import app

load_workflows()  # a bad WORKFLOWS entry fails the cold start, naming it

__all__ = ["MAX_BODY_BYTES", "STEP_OUTPUT_CAP", "app", "handler", "make_handler"]

MAX_BODY_BYTES = 1024 * 1024
_JSON = JSON_MEDIA_TYPE
_BODY_METHODS = {"POST", "PUT", "PATCH"}
_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def __getattr__(name: str) -> Any:
    """``app``, the Powertools resolver, is imported on first use (see :mod:`._api_resolver`)."""
    if name == "app":
        from ._api_resolver import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- the Lambda entry point ---------------------------------------------------------------


def make_handler(runtime: RuntimeSource) -> LambdaHandler:
    """The Lambda entry point (an API Gateway proxy event, payload format 1.0), on ``runtime``."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if _links.is_link(event):  # its own checks and answers: HTML, the token as credential
            return _link_answer(event, runtime)
        rejected = _check_envelope(event) or _check_path(event) or _check_body_shape(event)
        if rejected is not None:
            return rejected
        try:
            token = RUNTIME.set(runtime_of(runtime))
        except ConfigurationError as exc:
            logger().error("the API is misconfigured", extra={"error": str(exc)})
            return _proxy_answer(500, exc.code, f"the service is misconfigured: {exc}")
        except Exception:
            logger().exception("could not build the runtime")
            return _proxy_answer(500, "internal_error", "internal error; it has been logged")
        try:
            direct = _api_direct.answer(event)
            if direct is not None:
                return direct
            from ._api_resolver import app  # the first request that needs it loads it

            return app.resolve(_with_json_media_type(event), context)
        except Exception:  # the resolver's own handlers failed: still answer in our shape
            logger().exception("unexpected error resolving the request")
            return _proxy_answer(500, "internal_error", "internal error; it has been logged")
        finally:
            RUNTIME.reset(token)

    return handler


handler = make_handler(get_runtime)


def _link_answer(event: dict[str, Any], runtime: RuntimeSource) -> dict[str, Any]:
    """``/links/{token}`` (see :mod:`._links`)."""
    try:
        return _links.answer(event, runtime_of(runtime))
    except ConfigurationError as exc:
        logger().error("the API is misconfigured", extra={"error": str(exc)})
        return _proxy_answer(500, exc.code, f"the service is misconfigured: {exc}")


def _check_envelope(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Refuse, before routing, a body that is too large, badly encoded or not JSON.

    Size comes first for every request (as API Gateway's own payload limit does). Media type
    and encoding only matter for the methods that carry a body here; the media type is checked
    even when the body is empty, because the resolver would parse a form or multipart body.
    """
    body = event.get("body") or ""
    if not isinstance(body, str):
        return _proxy_answer(400, "invalid_body", "the body must be text")
    if body and event.get("isBase64Encoded"):
        if len(body) > (MAX_BODY_BYTES * 4) // 3 + 4:
            return _too_large()
        try:
            raw = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            return _proxy_answer(400, "invalid_body", "the body is not valid base64")
    else:
        raw = body.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_BODY_BYTES:
        return _too_large()
    if str(event.get("httpMethod", "")).upper() not in _BODY_METHODS:
        return None
    content_type = header(event, "content-type")
    if content_type and content_type.split(";")[0].strip().lower() != _JSON:
        return _proxy_answer(
            415,
            "unsupported_media_type",
            f"Content-Type {content_type!r} is not supported; send JSON with Content-Type: "
            "application/json (or no Content-Type)",
        )
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return _proxy_answer(400, "invalid_json", "the body is not valid UTF-8")
    return None


def _check_path(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Refuse a path with a control character: no name, id or event type holds one.

    Checked here because the resolver matches routes with ``$``, which also matches before a
    trailing newline: ``.../events/approved\\n`` would reach the route as ``approved``.
    """
    path = str(event.get("path") or "")
    if not _CONTROL_CHARACTER.search(path):
        return None
    method = str(event.get("httpMethod", "")).upper()
    return _proxy_answer(
        404,
        "not_found",
        f"no route {method} {shown(path, 200)}: the path holds a control character; workflow "
        "names, instance ids and event types may only contain letters, digits, '-' and '_'",
    )


def _check_body_shape(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Refuse a JSON array sent to a route that takes one object, before anything reads it.

    The resolver would validate the array's first item as the body and ignore the rest. Only
    a body that starts like an array is parsed here; malformed JSON is left to the resolver,
    which says what is wrong with it.
    """
    method = str(event.get("httpMethod", "")).upper()
    path = str(event.get("path") or "")
    if not _api_direct.takes_one_object(method, path):
        return None
    text = _body_text(event)
    if not text.lstrip(" \t\r\n").startswith("["):
        return None
    try:
        strict_json(text)
    except ValueError:
        return None
    return _proxy_answer(
        422,
        "validation_error",
        "the body is not what this route takes: it is a JSON array, and this route takes one "
        "JSON object (to create many instances, POST the array to .../instances/batch)",
    )


def _body_text(event: Mapping[str, Any]) -> str:
    """The body as text (after :func:`_check_envelope` accepted it)."""
    body = str(event.get("body") or "")
    if body and event.get("isBase64Encoded"):
        return base64.b64decode(body).decode("utf-8")
    return body


def _with_json_media_type(event: dict[str, Any]) -> dict[str, Any]:
    """The event with a JSON ``Content-Type`` spelled ``application/json``.

    Media types are case-insensitive (RFC 9110) and :func:`_check_envelope` has accepted this
    one, but the resolver compares it letter for letter and refuses ``APPLICATION/JSON``.
    """
    content_type = header(event, "content-type")
    if content_type is None or content_type.split(";")[0].strip().lower() != _JSON:
        return event
    single = {
        k: v for k, v in (event.get("headers") or {}).items() if str(k).lower() != "content-type"
    }
    normalized = {**event, "headers": {**single, "Content-Type": _JSON}}
    if event.get("multiValueHeaders"):
        multi = {
            k: v for k, v in event["multiValueHeaders"].items() if str(k).lower() != "content-type"
        }
        normalized["multiValueHeaders"] = {**multi, "Content-Type": [_JSON]}
    return normalized


def _too_large() -> dict[str, Any]:
    return _proxy_answer(
        413,
        "body_too_large",
        f"the body is over {MAX_BODY_BYTES:,} bytes (1 MiB); store large data elsewhere "
        "(e.g. S3) and pass a reference",
    )


def _proxy_answer(status: int, code: str, message: str) -> dict[str, Any]:
    """An error answered before routing (envelope checks, last resort), laid out as every
    other answer."""
    return _api_direct.proxy_answer(error(status, code, message))
