"""The answers a local server makes itself: JSON in the API's error shape,
``{"error": {"code", "message"}}``, so a client (the dashboard, the CLI, a script) shows them as
it shows the API's own.

Only the standard library: this sits under every local server.
"""

from __future__ import annotations

import json

__all__ = ["Answer", "Refusal", "error_answer"]

Answer = tuple[int, dict[str, str], bytes]
"""An HTTP answer: status, headers, body."""


class Refusal(Exception):
    """A request the server answers itself, then closes the connection: a 4xx (or a 502 when
    the API it forwards to is away).

    Attributes:
        status: the HTTP status to answer.
        code: the ``error.code`` of the JSON answer.
        message: what is wrong and how to send it right.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_answer(status: int, code: str, message: str) -> Answer:
    """A JSON error answer in the API's shape."""
    body = {"error": {"code": code, "message": message}}
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()
