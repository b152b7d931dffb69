"""``lambda-workflows ui``: the dashboard of a deployed stack, on this machine.

The pages are served on 127.0.0.1 and their API calls forwarded to the stack, signed with
SigV4 from your AWS credentials (see :mod:`lambda_workflows.dashboard.ui_server` for what it
forwards and what it refuses). The workflows ``WORKFLOWS`` names, when it is set here, give their
diagrams: a diagram is drawn from a workflow's source, which the deployed API does not serve.
"""

from __future__ import annotations

import argparse
from typing import Any

from lambda_workflows.remote import HttpApi, NoCredentials, default_url

from .console import CommandError, Console, add_command

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Register ``ui``."""
    ui = add_command(
        commands,
        "ui",
        "open the dashboard of a deployed stack: its pages on 127.0.0.1, the API's calls "
        "forwarded to the stack and signed with your AWS credentials",
        [
            "lambda-workflows ui --url https://abc123.execute-api.eu-west-1.amazonaws.com",
            "WORKFLOWS_URL=https://abc123.execute-api.eu-west-1.amazonaws.com lambda-workflows ui",
            "AWS_PROFILE=ops lambda-workflows ui --port 9000",
            "lambda-workflows ui --url http://127.0.0.1:8787    a dev server's API, unsigned",
        ],
        serve_ui,
    )
    ui.add_argument(
        "--url",
        default=None,
        help="the API's base URL: the stack's ApiUrl output; default WORKFLOWS_URL, else "
        "http://127.0.0.1:8787 (requests to an execute-api URL are signed with SigV4 from your "
        "AWS credentials: environment, AWS_PROFILE, SSO, as for the AWS CLI)",
    )
    ui.add_argument("--port", type=int, default=None, help="the port on 127.0.0.1; default 8788")


def serve_ui(args: argparse.Namespace, console: Console) -> int:
    """Serve until Ctrl-C or SIGTERM."""
    from lambda_workflows.dashboard.ui_server import DEFAULT_UI_PORT, make_ui_server
    from lambda_workflows.http_server import serve_until_stopped

    url = args.url or default_url()
    try:
        upstream = HttpApi(url)
    except ValueError as exc:
        raise CommandError(f"--url: {exc}") from None
    if upstream.sign:  # no credentials: say so now, not on the first page load
        try:
            upstream.signed("GET", f"{upstream.url}/workflows", None, {})
        except NoCredentials as exc:
            raise CommandError(str(exc)) from None
    workflows, sources = _local_sources()
    port = DEFAULT_UI_PORT if args.port is None else args.port
    try:
        server = make_ui_server(upstream, port, workflows=workflows, out=console.data)
    except OSError as exc:
        raise CommandError(f"cannot listen on 127.0.0.1:{port}: {exc}") from None
    say = console.data
    say(f"lambda-workflows ui: the dashboard on {server.url}/")
    signed = "signed with SigV4 from your AWS credentials" if upstream.sign else "unsigned"
    say(f"API calls forwarded to {upstream.url} ({signed})")
    say(sources)
    serve_until_stopped(server, say)
    return 0


def _local_sources() -> tuple[dict[str, Any], str]:
    """The workflows ``WORKFLOWS`` names here (for their diagrams), and a line saying so."""
    from lambda_workflows.engine.errors import ConfigurationError
    from lambda_workflows.engine.versions import workflow_names
    from lambda_workflows.registry import load_workflows

    from .project import use_project_workflows

    use_project_workflows()  # in a project's folder: what its template deploys
    try:
        workflows = load_workflows()
    except ConfigurationError as exc:
        return {}, f"no diagrams: {exc}"
    if not workflows:
        return {}, (
            "no diagrams: they are drawn from the workflows' source; set WORKFLOWS (and "
            "PYTHONPATH) here as for lambda-workflows dev to see them"
        )
    names = ", ".join(workflow_names(workflows))
    return dict(workflows), f"diagrams drawn from the source of: {names}"
