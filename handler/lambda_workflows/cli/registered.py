"""``lambda-workflows list`` and ``lambda-workflows describe NAME``: the workflows the API
serves."""

from __future__ import annotations

import argparse
from typing import Any

from lambda_workflows.engine.model import FINISHED
from lambda_workflows.remote import ApiError

from .console import Console, add_api_options, add_command, add_workflow_argument, api

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Register ``list`` and ``describe``."""
    listing = add_command(
        commands,
        "list",
        "list the workflows the API serves",
        [
            "lambda-workflows list",
            "lambda-workflows list --url https://abc123.execute-api.eu-west-1.amazonaws.com",
        ],
        list_workflows,
    )
    add_api_options(listing, json_help="print the API's answer as JSON")

    describe = add_command(
        commands,
        "describe",
        "show a workflow: its class, module, description and instance counts by status",
        ["lambda-workflows describe orders", "lambda-workflows describe orders --json"],
        describe_workflow,
    )
    add_workflow_argument(describe)
    add_api_options(describe, json_help="print the API's answer as JSON")


def list_workflows(args: argparse.Namespace, console: Console) -> int:
    """``GET /workflows``: one name per line."""
    body = api(args).request("GET", "/workflows").body
    if args.json:
        console.json(body)
    else:
        for name in body.get("workflows", []):
            console.data(name)
    return 0


def describe_workflow(args: argparse.Namespace, console: Console) -> int:
    """``GET /workflows/{name}``: the workflow and how many of its instances are in each status."""
    remote = api(args)
    try:
        body = remote.request("GET", remote.path("workflows", args.name)).body
    except ApiError as exc:
        if exc.code not in ("not_found", "method_not_allowed"):
            raise
        body = _name_only(remote.request("GET", "/workflows").body, args.name)
    if args.json:
        console.json(body)
        return 0
    console.data(f"{'name:':<13}{body.get('name', args.name)}")
    fields = (("class", "class_name"), ("module", "module"), ("description", "description"))
    for label, key in fields:
        if body.get(key):
            console.data(f"{label + ':':<13}{body[key]}")
    counts = body.get("instances")
    at_least = set(body.get("instances_at_least") or ())  # counts that are lower bounds
    if isinstance(counts, dict):
        shown = ", ".join(
            f"{console.status(s)} {n}{'+' if s in at_least else ''}" for s, n in counts.items() if n
        )
        console.data(f"{'instances:':<13}{shown or 'none'}")
    in_flight_plus = "+" if at_least - FINISHED else ""
    for version in body.get("versions") or ():
        where = f"{version.get('module')}:{version.get('class_name')}"
        if version.get("class_name") is None:
            where = "not registered"
        console.data(
            f"{'version ' + str(version.get('version')) + ':':<13}{where}, "
            f"{version.get('in_flight', 0)}{in_flight_plus} in flight"
        )
    for schedule in body.get("schedules") or ():
        zone = schedule.get("timezone")
        expression = schedule.get("expression", "")
        expression += f" ({zone})" if zone and zone != "UTC" else ""
        upcoming = ", ".join(schedule.get("next_firings") or ()) or "none"
        console.data(f"{'schedule:':<13}{expression}, next {upcoming}")
    return 0


def _name_only(listing: Any, name: str) -> dict[str, Any]:
    """An API without ``GET /workflows/{name}`` (an older deployment): its name, if it serves it."""
    if name not in (listing or {}).get("workflows", []):
        raise ApiError(404, "unknown_workflow", f"no workflow named {name!r} is registered")
    return {"name": name}
