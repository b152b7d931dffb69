"""The HTTP server under every local server (``lambda-workflows dev``, ``lambda-workflows ui``,
the dashboard they serve): the request's framing, who sent it, the answers a server makes
itself, and the serve loop. It imports the standard library only, nothing of lambda_workflows.

- :mod:`.connection`: one connection, read strictly, every refusal a JSON 4xx;
- :mod:`.framing`: where a request body ends;
- :mod:`.origin`: which web page sent a request;
- :mod:`.refusal`: the answers in the API's error shape;
- :mod:`.serving`: serving until SIGTERM, or on a thread.
"""

from __future__ import annotations

from .connection import HOP_BY_HOP, IDLE_TIMEOUT, JsonRequestHandler, LocalHttpServer
from .framing import FramingError
from .origin import LOOPBACK, foreign_sender
from .refusal import Answer, Refusal, error_answer
from .serving import serve_in_background, serve_until_stopped

__all__ = [
    "HOP_BY_HOP",
    "IDLE_TIMEOUT",
    "LOOPBACK",
    "Answer",
    "FramingError",
    "JsonRequestHandler",
    "LocalHttpServer",
    "Refusal",
    "error_answer",
    "foreign_sender",
    "serve_in_background",
    "serve_until_stopped",
]
