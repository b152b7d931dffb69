"""The commands that run workflows on this machine: ``dev``, ``run``, ``dev-clock`` and
``dev-events``.

``dev`` and ``run`` load the workflows named by ``WORKFLOWS`` into a local runtime (the real
Lambda handlers on an embedded, moto-backed AWS). ``dev-clock`` moves a running dev server's
clock over HTTP, so a wait with a 2-day timeout can be tried in seconds; ``dev-events`` puts an
EventBridge event on it, which the real TriggerFunction handler delivers or creates from.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from lambda_workflows.remote import ApiError

from .console import (
    CommandError,
    Console,
    Exit,
    add_api_options,
    add_command,
    add_workflow_argument,
    api,
    json_option,
)

__all__ = ["DEFAULT_PORT", "add_commands"]

DEFAULT_PORT = 8787


def add_commands(commands: Any) -> None:
    """Register ``dev``, ``run``, ``dev-clock`` and ``dev-events``."""
    dev = add_command(
        commands,
        "dev",
        "serve the HTTP API locally, on an embedded AWS, with the workflows WORKFLOWS names",
        [
            "WORKFLOWS=orders=shop.orders:OrderWorkflow lambda-workflows dev",
            "lambda-workflows dev --port 9000 --skip-event-timeouts",
        ],
        serve,
    )
    dev.add_argument("--port", type=int, default=DEFAULT_PORT, help="default 8787")
    dev.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1")
    dev.add_argument(
        "--real-time", action="store_true", help="wait out sleeps instead of skipping idle time"
    )
    dev.add_argument(
        "--skip-event-timeouts",
        action="store_true",
        help="also skip the clock to the timeout of a wait_for_event when nothing else is due, "
        "so waits with no event time out at once (see also lambda-workflows dev-clock)",
    )

    run = add_command(
        commands,
        "run",
        "create one instance in this process, run it until it finishes or waits, show its timeline",
        [
            "lambda-workflows run orders",
            """lambda-workflows run orders --id order-42 --params '{"sku": "cat-poster"}'""",
        ],
        run_once,
    )
    add_workflow_argument(run)
    run.add_argument("--params", default="{}", help="the instance's params as JSON (default: {})")
    run.add_argument("--id", default=None, help="the instance's id (default: a new UUID)")
    _add_dev_clock(commands)
    _add_dev_events(commands)


def _add_dev_clock(commands: Any) -> None:
    clock = add_command(
        commands,
        "dev-clock",
        "move the clock of a running lambda-workflows dev forward (sleeps and event timeouts come "
        "due)",
        [
            'lambda-workflows dev-clock advance "2 days"',
            'lambda-workflows dev-clock advance "90 minutes" --json',
        ],
        None,
    )
    family = clock.add_subparsers(dest="clock_command", required=True, metavar="COMMAND")
    advance = add_command(
        family,
        "advance",
        "move the dev server's clock forward by a duration",
        [
            'lambda-workflows dev-clock advance "2 days"',
            'lambda-workflows dev-clock advance "1 hour" --url http://127.0.0.1:9000',
        ],
        advance_clock,
    )
    advance.add_argument(
        "by", metavar="BY", help="a duration: 'N unit' (second, minute, hour, day, week, ...)"
    )
    add_api_options(advance, json_help="print the server's answer (its new time) as JSON")


_EVENT_EXAMPLE = (
    """lambda-workflows dev-events put --detail-type "Workflow Event" --detail """
    """'{"workflow": "orders", "instance_id": "order-42", "type": "approved", """
    """"payload": {"user": "ana"}}'"""
)


def _add_dev_events(commands: Any) -> None:
    events = add_command(
        commands,
        "dev-events",
        "put EventBridge events on a running lambda-workflows dev, as aws events put-events puts "
        "them "
        "on the trigger bus",
        [_EVENT_EXAMPLE],
        None,
    )
    family = events.add_subparsers(dest="events_command", required=True, metavar="COMMAND")
    put = add_command(
        family,
        "put",
        "put one event: a Workflow Event is sent to its instance, any other detail-type "
        "creates an instance (TriggerFunction's rules)",
        [
            _EVENT_EXAMPLE,
            """lambda-workflows dev-events put --detail-type "Order Placed" --detail """
            """'{"workflow": "orders", "sku": "cat-poster"}' --id order-placed-1""",
        ],
        put_event,
    )
    put.add_argument("--detail-type", required=True, help='e.g. "Workflow Event"')
    put.add_argument("--detail", required=True, help="the detail, a JSON object")
    put.add_argument(
        "--source", default=None, help="default: the trigger's source (workflows.trigger)"
    )
    put.add_argument(
        "--id",
        default=None,
        help="the event's id (default: a new one); the same id again is the same event, "
        "delivered once",
    )
    add_api_options(put, json_help="print the server's answer as JSON")


def _registry() -> dict[str, Any]:
    """The workflows ``WORKFLOWS`` registers; a usage error saying what to set when none."""
    from lambda_workflows.engine.errors import NOTHING_REGISTERED, ConfigurationError
    from lambda_workflows.registry import load_workflows

    from .project import use_project_workflows

    use_project_workflows()  # in a project's folder: what its template deploys
    try:
        workflows = load_workflows()
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    if not workflows:
        raise CommandError(NOTHING_REGISTERED)
    return workflows


def _quiet_powertools() -> None:
    """Locally, Powertools' JSON logs and EMF metrics would drown the status lines."""
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")


def serve(args: argparse.Namespace, console: Console) -> int:
    """``lambda-workflows dev``: serve until Ctrl-C or SIGTERM."""
    _quiet_powertools()
    from lambda_workflows.dev_server import make_server
    from lambda_workflows.http_server import serve_until_stopped
    from lambda_workflows.local.runtime import LocalRuntime

    workflows = _registry()
    runtime = LocalRuntime(
        workflows,
        skip_sleeps=not args.real_time,
        skip_event_timeouts=args.skip_event_timeouts,
        out=console.data,
    )
    try:
        server = make_server(runtime, args.host, args.port)
    except OSError as exc:
        runtime.close()
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc}") from None
    say = console.data
    url = f"http://{args.host}:{server.server_address[1]}"
    say(f"lambda-workflows dev listening on {url}")
    say(f"dashboard: {url}/ (instances, step timelines, controls, diagrams)")
    from .project import project_template_used

    origin = project_template_used()
    shown = f" (from {os.path.relpath(origin)}'s Workflows parameter)" if origin else ""
    say(f"registered workflows: {', '.join(sorted(workflows))}{shown}")
    say("embedded AWS: moto (DynamoDB, SQS, EventBridge Scheduler) provisioned from template.yaml")
    if not args.real_time:
        say("idle sleeps and retry delays are SKIPPED (use --real-time to wait them out)")
    if args.skip_event_timeouts:
        say(
            "event-wait timeouts are SKIPPED: a wait with no event times out once nothing else "
            "is due"
        )
    runtime.start()
    try:
        serve_until_stopped(server, say)
    finally:
        runtime.close()
    return 0


def run_once(args: argparse.Namespace, console: Console) -> int:
    """``lambda-workflows run``: 0 when the instance completed or waits for an event, 1 when it
    failed."""
    params = json_option(args.params, "--params")
    _quiet_powertools()
    from lambda_workflows.engine.errors import WorkflowError
    from lambda_workflows.local.runtime import LocalRuntime
    from lambda_workflows.text_timeline import render

    runtime = LocalRuntime(_registry(), out=console.data)
    try:
        service = runtime.aws.runtime.service
        try:
            record = service.create(args.name, args.id, params)
        except WorkflowError as exc:
            raise CommandError(str(exc)) from None
        runtime.run_until_idle()
        status = service.status(record.ref).to_dict()
    finally:
        runtime.close()
    console.data(render(status))
    if status["status"] == "waiting":
        for line in waiting_help(args.name, status, args.params):
            console.data(line)
    return 0 if status["status"] in ("complete", "waiting") else 1


def waiting_help(name: str, status: dict[str, Any], params: str) -> list[str]:
    """What a waiting instance waits for, and the commands that send it from a dev server."""
    waits = [
        s
        for s in status.get("steps", [])
        if s.get("type") == "waitForEvent" and s.get("status") == "waiting"
    ]
    if not waits:
        return [f"waiting until {status.get('wake_at') or 'its next wake-up'}"]
    step = waits[-1]
    event_type = step.get("event_type")
    what = f"event {event_type!r}" if event_type else "an event"
    until = f", until {status['wake_at']} when the wait times out" if status.get("wake_at") else ""
    quoted = params.replace("'", "'\\''")
    return [
        f"waiting for {what} (step {step.get('name')!r}){until}",
        "this instance ends with this process; to send it the event, run it on a dev server:",
        "  lambda-workflows dev    # in another terminal",
        f"  lambda-workflows trigger {name} --id {status['id']} --params '{quoted}'",
        f"  lambda-workflows send-event {name} {status['id']} {event_type or 'TYPE'} --payload "
        f"'{{...}}'",
    ]


def dev_request(args: argparse.Namespace, path: str, body: dict[str, Any], what: str) -> Any:
    """``POST body`` to ``path`` at ``--url``, a route only ``lambda-workflows dev`` serves: the
    answer.

    Any other server answers 404 or 405 there: that fails (exit 1) with its message and what
    only a dev server does (``what``), pointing at --url. Any other API error, and no answer
    at all (ApiUnreachable), go up to ``main``, which reports them as for every command.
    """
    try:
        return api(args).request("POST", path, body).body
    except ApiError as exc:
        if exc.code not in ("not_found", "method_not_allowed"):
            raise
        raise CommandError(
            f"{exc.message} ({exc.status} {exc.code}); only a lambda-workflows dev server {what}: "
            "point --url at one",
            Exit.FAILED,
        ) from None


def advance_clock(args: argparse.Namespace, console: Console) -> int:
    """``POST /_dev/clock/advance``: the dev server's new time."""
    from lambda_workflows.engine.durations import parse_duration
    from lambda_workflows.engine.errors import InvalidStepError

    try:
        parse_duration(args.by)
    except InvalidStepError:
        raise CommandError(
            f"{args.by!r} is not a duration to move the clock by: write it as 'N unit', with "
            'unit one of second, minute, hour, day, week, month, year; e.g. "2 days"'
        ) from None
    body = dev_request(args, "/_dev/clock/advance", {"by": args.by}, "has a clock to move")
    if args.json:
        console.json(body)
    else:
        console.data(str(body.get("now")))
    return 0


def put_event(args: argparse.Namespace, console: Console) -> int:
    """``POST /_dev/events``: what TriggerFunction did with the event."""
    detail = json_option(args.detail, "--detail")
    if not isinstance(detail, dict):
        raise CommandError(
            """--detail must be a JSON object, e.g. '{"workflow": "orders", "instance_id": """
            """"order-42", "type": "approved"}'"""
        )
    if args.source is None:
        from lambda_workflows.local.dev_events import trigger_rules

        args.source = trigger_rules().source
    entry = {"Source": args.source, "DetailType": args.detail_type, "Detail": detail}
    if args.id is not None:
        entry["Id"] = args.id
    body = dev_request(
        args, "/_dev/events", entry, "takes events this way (on AWS: aws events put-events)"
    )
    if args.json:
        console.json(body)
        return 0
    where = f"{body.get('workflow')}/{body.get('instance_id')}"
    said = {
        "delivered": f"event {body.get('id')} delivered to {where} as {body.get('type')!r}",
        "created": f"event {body.get('id')} created {where}",
        "exists": f"event {body.get('id')}: {where} already exists; nothing created",
    }
    console.data(said.get(str(body.get("outcome")), json.dumps(body)))
    return 0
