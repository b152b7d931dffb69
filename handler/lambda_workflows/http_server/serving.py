"""Running a local server: in the foreground until Ctrl-C or SIGTERM (``lambda-workflows dev``,
``lambda-workflows ui``), or on a daemon thread (``make demo``, tests)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from socketserver import BaseServer

__all__ = ["serve_in_background", "serve_until_stopped"]


def serve_until_stopped(server: BaseServer, say: Callable[[str], None]) -> None:
    """Serve until Ctrl-C or SIGTERM, then close the server's socket.

    Args:
        server: the server, listening already.
        say: where "stopping" goes when the server is told to stop.
    """

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        say("stopping")
    finally:
        server.server_close()


def serve_in_background(server: BaseServer) -> threading.Thread:
    """Serve on a daemon thread until ``server.shutdown()``."""
    thread = threading.Thread(
        target=server.serve_forever, args=(0.05,), name="local-http", daemon=True
    )
    thread.start()
    return thread
