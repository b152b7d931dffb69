"""`lambda-workflows dev`'s HTTP server: the local runtime's API and the dashboard on one port.

The composition above both: :mod:`lambda_workflows.local.server` serves the API and whatever
pages it is given, :mod:`lambda_workflows.dashboard` answers the dashboard's requests, and
neither imports the other.
"""

from __future__ import annotations

from lambda_workflows.dashboard import dashboard_answer
from lambda_workflows.http_server import Answer
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.local.server import DevServer
from lambda_workflows.local.server import make_server as make_api_server

__all__ = ["make_server"]


def make_server(runtime: LocalRuntime, host: str, port: int) -> DevServer:
    """The server of ``lambda-workflows dev`` on ``host``:``port`` (0: any free one): the
    dashboard's page, files and the diagrams of ``runtime``'s workflows, and the API for every
    other request. Not serving yet: call ``serve_forever``."""

    def dashboard(method: str, path: str) -> Answer | None:
        return dashboard_answer(method, path, runtime.workflows)

    return make_api_server(runtime, host, port, pages=dashboard)
