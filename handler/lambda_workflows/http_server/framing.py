"""Where an HTTP/1.1 request body ends (RFC 9112 §6): ``Content-Length`` or chunked coding.

``http.server`` leaves this to the handler, and a handler that reads ``int(Content-Length)``
bytes hangs on ``-1`` (read to EOF), fails on ``abc`` and ignores a chunked body altogether.
Here every malformed framing is a :class:`FramingError` raised before the body reaches the API,
so a local server answers it at once with a JSON 4xx and closes the connection (after a framing
error the next request's first byte is unknown).

Only the standard library: this sits under every local server.
"""

from __future__ import annotations

import re
from email.message import Message
from typing import Protocol

from .refusal import Refusal

__all__ = ["ByteReader", "FramingError", "declared_length", "is_chunked", "read_body", "too_large"]

_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(r"[0-9A-Fa-f]+")
_MAX_LINE = 4096  # a chunk-size line or a trailer field
_MAX_TRAILERS = 100


class ByteReader(Protocol):
    """The connection's buffered reader (``rfile``), as far as framing uses it."""

    def read(self, size: int, /) -> bytes: ...

    def readline(self, size: int, /) -> bytes: ...


class FramingError(Refusal):
    """The request's body cannot be delimited: answer ``status`` (a 4xx) and close the
    connection."""


def declared_length(headers: Message) -> int | None:
    """The body length ``Content-Length`` declares (``None`` without one).

    Raises:
        FramingError: not a decimal number, or several values that differ (RFC 9112 §6.3:
            an invalid ``Content-Length`` is unrecoverable).
    """
    values = headers.get_all("Content-Length") or []
    if not values:
        return None
    lengths = {part.strip() for value in values for part in str(value).split(",")}
    if len(lengths) != 1 or not _DIGITS.fullmatch(next(iter(lengths))):
        shown = ", ".join(repr(v) for v in values)[:80]
        raise FramingError(
            400,
            "bad_request",
            f"Content-Length {shown} is not a length: send the body's size in bytes as one "
            "decimal number (e.g. Content-Length: 17), or use Transfer-Encoding: chunked",
        )
    return int(next(iter(lengths)))


def is_chunked(headers: Message) -> bool:
    """Whether the body comes in chunked coding.

    Raises:
        FramingError: a transfer coding other than exactly ``chunked`` (gzip and friends are
            not decoded here), or ``Content-Length`` as well (RFC 9112 §6.3 lets the server
            refuse rather than guess which framing the client meant).
    """
    values = headers.get_all("Transfer-Encoding") or []
    if not values:
        return False
    if headers.get_all("Content-Length"):  # two framings that may disagree: a smuggling shape
        raise FramingError(
            400,
            "bad_request",
            "the request has both Content-Length and Transfer-Encoding; send only one of them",
        )
    codings = [part.strip().lower() for value in values for part in str(value).split(",")]
    if codings != ["chunked"]:
        raise FramingError(
            400,
            "bad_request",
            f"Transfer-Encoding {', '.join(values)[:60]!r} is not supported; send the body "
            "with Content-Length, or with Transfer-Encoding: chunked alone",
        )
    return True


def read_body(headers: Message, rfile: ByteReader, limit: int) -> bytes:
    """Read the request body framed by ``headers`` from ``rfile``: at most ``limit`` bytes.

    Args:
        headers: the parsed request headers.
        rfile: the connection's buffered reader, positioned after the headers.
        limit: the largest body accepted.

    Returns:
        The body (empty when the request declares none).

    Raises:
        FramingError: malformed framing, a body over ``limit`` (413), or a connection that
            ended before the body did.
        TimeoutError: the client stopped sending (the socket's timeout).
    """
    if is_chunked(headers):
        return _read_chunked(rfile, limit)
    length = declared_length(headers)
    if not length:
        return b""
    if length > limit:
        raise too_large(limit)
    body = rfile.read(length)
    if len(body) < length:
        raise FramingError(
            400,
            "bad_request",
            f"the connection ended after {len(body)} of the {length} bytes Content-Length "
            "declares; send the whole body, or the body's real size",
        )
    return body


def too_large(limit: int) -> FramingError:
    """The 413 for a body over ``limit`` bytes."""
    return FramingError(
        413,
        "body_too_large",
        f"the body is over {limit:,} bytes; store large data elsewhere and pass a reference",
    )


def _read_chunked(rfile: ByteReader, limit: int) -> bytes:
    """Decode a chunked body (RFC 9112 §7.1); chunk extensions and trailers are dropped."""
    parts: list[bytes] = []
    total = 0
    while True:
        size_text = _line(rfile, "chunk size").split(b";", 1)[0].strip()
        if not _HEX.fullmatch(size_text.decode("latin-1")):
            shown = size_text[:20].decode("latin-1")
            raise _bad_chunk(f"chunk size {shown!r} is not a hexadecimal number")
        size = int(size_text, 16)
        if size == 0:
            break
        total += size
        if total > limit:
            raise too_large(limit)
        chunk = rfile.read(size)
        if len(chunk) < size:
            raise _bad_chunk("the connection ended inside a chunk")
        if _line(rfile, "chunk end") != b"":
            raise _bad_chunk(f"a chunk of {size} bytes is not followed by CRLF")
        parts.append(chunk)
    for _ in range(_MAX_TRAILERS):
        if _line(rfile, "trailer") == b"":
            return b"".join(parts)
    raise _bad_chunk(f"more than {_MAX_TRAILERS} trailer fields")


def _line(rfile: ByteReader, what: str) -> bytes:
    """One CRLF- (or LF-) terminated line, without its terminator."""
    line = rfile.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise _bad_chunk(f"the {what} line is over {_MAX_LINE} bytes")
    if not line.endswith(b"\n"):
        raise _bad_chunk(f"the connection ended inside the {what} line")
    return line.rstrip(b"\r\n")


def _bad_chunk(problem: str) -> FramingError:
    return FramingError(
        400,
        "bad_request",
        f"the chunked body is malformed: {problem}; send hexadecimal-size chunks, each "
        "followed by CRLF, then a 0-size chunk and an empty line",
    )
