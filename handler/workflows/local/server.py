"""`workflows dev`: the local runtime behind an HTTP server on 127.0.0.1 (default port 8787)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from .runtime import LocalRuntime

MAX_BODY = 6 * 1024 * 1024  # API Gateway's payload limit; the API rejects > 1 MiB itself


def make_server(runtime: LocalRuntime, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server that hands every request to ``runtime.handle_http``."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "workflows-dev"

        def _serve(self) -> None:
            split = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self.send_error(413, "request body too large")
                return
            body = self.rfile.read(length) if length else b""
            query = dict(parse_qsl(split.query, keep_blank_values=True))
            headers = {k: v for k, v in self.headers.items()}
            try:
                status, out_headers, data = runtime.handle_http(
                    self.command, split.path or "/", query, headers, body
                )
            except Exception as exc:  # never leave the client hanging
                status, out_headers = 500, {"Content-Type": "application/json"}
                error = {"code": "internal", "message": f"local server error: {type(exc).__name__}"}
                data = json.dumps({"error": error}).encode()
            self.send_response(status)
            for key, value in out_headers.items():
                if key.lower() not in ("content-length", "connection"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = _serve

        def log_message(self, format: str, *args: object) -> None:
            runtime.out(f"{self.command} {self.path} -> {args[1] if len(args) > 1 else ''}")

    return ThreadingHTTPServer((host, port), Handler)


def serve_in_background(server: ThreadingHTTPServer) -> threading.Thread:
    """Serve on a daemon thread (the demo and tests)."""
    thread = threading.Thread(target=server.serve_forever, name="local-http", daemon=True)
    thread.start()
    return thread
