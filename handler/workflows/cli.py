"""The ``workflows`` command: ``dev``, ``run``, ``status`` and ``lint``."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import urllib.error
import urllib.request
from typing import Any

DEFAULT_PORT = 8787


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``workflows`` console script."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["lint"]:  # the linter parses its own options (--format, --no-ignore)
        from workflows.lint import main as lint_main

        return lint_main(argv[1:])
    parser = argparse.ArgumentParser(prog="workflows", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    dev = commands.add_parser("dev", help="serve the HTTP API locally on an embedded AWS")
    dev.add_argument("--port", type=int, default=DEFAULT_PORT)
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument(
        "--real-time", action="store_true", help="wait out sleeps instead of skipping idle time"
    )

    run = commands.add_parser("run", help="create one instance locally and follow it to the end")
    run.add_argument("name", help="registered workflow name")
    run.add_argument("--params", default="null", help="params as JSON")
    run.add_argument("--id", default=None, help="instance id (generated when absent)")

    status = commands.add_parser("status", help="show an instance of a running dev server")
    status.add_argument("name")
    status.add_argument("id")
    status.add_argument("--url", default=f"http://127.0.0.1:{DEFAULT_PORT}")

    commands.add_parser(
        "lint", help="check workflow code against the rules of Workflows (see `workflows lint -h`)"
    )

    args = parser.parse_args(argv)
    if args.command == "status":
        return _status(args.name, args.id, args.url)
    if args.command == "run":
        return _run(args.name, args.params, args.id)
    return _dev(args.host, args.port, skip_sleeps=not args.real_time)


def _registry() -> dict[str, Any]:
    """The workflows ``WORKFLOWS`` registers; exit 2 saying what to set when there are none."""
    from workflows.engine.errors import NOTHING_REGISTERED, ConfigurationError
    from workflows.registry import load_workflows

    try:
        workflows = load_workflows()
    except ConfigurationError as exc:
        print(f"workflows: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if not workflows:
        print(f"workflows: {NOTHING_REGISTERED}", file=sys.stderr)
        raise SystemExit(2)
    return workflows


def _quiet_powertools() -> None:
    """Locally, Powertools' JSON logs and EMF metrics would drown the status lines."""
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")


def _dev(host: str, port: int, *, skip_sleeps: bool) -> int:
    _quiet_powertools()
    from workflows.local.runtime import LocalRuntime
    from workflows.local.server import make_server

    workflows = _registry()
    runtime = LocalRuntime(workflows, skip_sleeps=skip_sleeps, out=_say)
    try:
        server = make_server(runtime, host, port)
    except OSError as exc:
        runtime.close()
        print(f"workflows dev: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 2
    _say(f"workflows dev listening on http://{host}:{server.server_address[1]}")
    _say(f"registered workflows: {', '.join(sorted(workflows))}")
    _say("embedded AWS: moto (DynamoDB, SQS, EventBridge Scheduler) provisioned from template.yaml")
    if skip_sleeps:
        _say("idle sleeps and retry delays are SKIPPED (use --real-time to wait them out)")
    runtime.start()

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        _say("stopping")
    finally:
        server.server_close()
        runtime.close()
    return 0


def _run(name: str, params_text: str, instance_id: str | None) -> int:
    _quiet_powertools()
    from workflows.engine.errors import WorkflowError
    from workflows.local.runtime import LocalRuntime
    from workflows.text_timeline import render

    try:
        params = json.loads(params_text)
    except ValueError as exc:
        print(f"workflows run: --params is not JSON: {exc}", file=sys.stderr)
        return 2
    workflows = _registry()
    runtime = LocalRuntime(workflows, out=_say)
    try:
        service = runtime.aws.runtime.service
        try:
            record = service.create(name, instance_id, params)
        except WorkflowError as exc:
            print(f"workflows run: {exc}", file=sys.stderr)
            return 2
        runtime.run_until_idle()
        view = service.status(record.ref)
        print(render(view.to_dict()))
        if view.status == "waiting":
            print("the instance is waiting for an event; use `workflows dev` to send it one")
        return 0 if view.status == "complete" else 1
    finally:
        runtime.close()


def _status(name: str, instance_id: str, url: str) -> int:
    from workflows.text_timeline import render

    target = f"{url.rstrip('/')}/workflows/{name}/instances/{instance_id}"
    try:
        with urllib.request.urlopen(target, timeout=10) as response:
            data = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        print(
            f"workflows status: {exc.code} {exc.read().decode(errors='replace')}", file=sys.stderr
        )
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"workflows status: cannot reach {url} ({exc}); is `workflows dev` running?")
        return 2
    print(render(data))
    return 0


def _say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
