"""The dashboard: pages to see, debug and control instances in a browser.

Static files only (``static/``: one HTML page, ES modules, a style sheet), no build step and
nothing fetched from elsewhere, so it works offline. The pages call the HTTP API on the origin
that served them. :func:`~lambda_workflows.dashboard.routes.dashboard_answer` is what a server calls
to serve the files and the workflows' diagrams (:mod:`.diagram`, drawn from their source);
``lambda-workflows dev`` serves them at ``/`` (:mod:`lambda_workflows.dev_server`).
:mod:`.ui_server` is ``lambda-workflows ui``: the same pages for a deployed stack, its API calls
forwarded and signed on this machine. Both servers are :mod:`lambda_workflows.http_server`'s.
"""

from __future__ import annotations

from .files import ASSET_PREFIX
from .routes import dashboard_answer

__all__ = ["ASSET_PREFIX", "dashboard_answer"]
