"""``lambda-workflows instances list|describe|step|export|watch``, its alias
``lambda-workflows status``, and ``trigger``."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from lambda_workflows.api_pages import Fetch, whole_history, whole_instance
from lambda_workflows.engine.model import InstanceStatus
from lambda_workflows.remote import ApiError, HttpApi
from lambda_workflows.text_timeline import render

from .console import (
    Console,
    add_api_options,
    add_command,
    add_instance_arguments,
    add_workflow_argument,
    api,
    json_option,
    whole_number,
)
from .watch import add_watch

__all__ = ["add_commands"]

MAX_PAGE = 1000  # the API's largest ?limit=
_READS = 3  # reads of a paged answer, when restarts keep making its cursors stale


def add_commands(commands: Any) -> None:
    """Register ``instances list``, ``instances describe``, ``instances step``, ``status``
    and ``trigger``."""
    instances = add_command(
        commands,
        "instances",
        "list a workflow's instances, or show one instance's timeline or one step's output",
        [
            "lambda-workflows instances list orders --status errored",
            "lambda-workflows instances describe orders order-42",
            'lambda-workflows instances step orders order-42 "fetch page" --count 2',
            "lambda-workflows instances export orders order-42 > history.json",
            "lambda-workflows instances watch orders order-42",
        ],
        None,
    )
    family = instances.add_subparsers(dest="instances_command", required=True, metavar="COMMAND")
    _add_list(family)
    _describe_arguments(
        add_command(
            family,
            "describe",
            "show an instance: its status, output or error, and its step timeline",
            [
                "lambda-workflows instances describe orders order-42",
                "lambda-workflows instances describe orders order-42 --json",
            ],
            describe_instance,
        )
    )
    _add_step(family)
    _add_export(family)
    add_watch(family)
    _describe_arguments(
        add_command(
            commands,
            "status",
            "show an instance (the same as lambda-workflows instances describe)",
            [
                "lambda-workflows status orders order-42",
                "lambda-workflows status orders order-42 --json",
            ],
            describe_instance,
        )
    )
    _add_trigger(commands)


def _add_list(family: Any) -> None:
    listing = add_command(
        family,
        "list",
        "list a workflow's instances, newest first, one page at a time",
        [
            "lambda-workflows instances list orders",
            "lambda-workflows instances list orders --status waiting --limit 10",
            "lambda-workflows instances list orders --cursor CURSOR_FROM_THE_PREVIOUS_PAGE",
        ],
        list_instances,
    )
    add_workflow_argument(listing)
    listing.add_argument(
        "--status",
        choices=[s.value for s in InstanceStatus if s is not InstanceStatus.UNKNOWN],
        metavar="STATUS",
        help="only instances in this status: "
        + ", ".join(s.value for s in InstanceStatus if s is not InstanceStatus.UNKNOWN),
    )
    listing.add_argument(
        "--limit", type=whole_number(1, MAX_PAGE), help=f"page size, 1 to {MAX_PAGE} (default 50)"
    )
    listing.add_argument("--cursor", help="the cursor printed with the previous page")
    add_api_options(listing, json_help="print the API's answer (instances and cursor) as JSON")


def _add_step(family: Any) -> None:
    step = add_command(
        family,
        "step",
        "print one step's whole recorded output as JSON (the timeline leaves out large ones)",
        [
            'lambda-workflows instances step orders order-42 "charge card"',
            'lambda-workflows instances step orders order-42 "fetch page" --count 2',
        ],
        step_output,
    )
    add_instance_arguments(step)
    step.add_argument("step", metavar="STEP", help="the step's name")
    step.add_argument(
        "--count",
        type=whole_number(1),
        default=1,
        metavar="N",
        help="the step's occurrence: 1 for the first call with its name (default 1)",
    )
    add_api_options(step)


def _add_export(family: Any) -> None:
    export = add_command(
        family,
        "export",
        "print an instance's recorded history as JSON, for lambda_workflows.testing.Replayer "
        "(sensitive "
        "step results as [REDACTED]: a replay needs the steps' names, kinds and order only)",
        [
            "lambda-workflows instances export orders order-42 > tests/histories/order-42.json",
            "lambda-workflows instances export orders order-42 --url $WORKFLOWS_URL > history.json",
        ],
        export_history,
    )
    add_instance_arguments(export)
    add_api_options(export)


def _add_trigger(commands: Any) -> None:
    trigger = add_command(
        commands,
        "trigger",
        "create an instance of a workflow (it starts at once)",
        [
            "lambda-workflows trigger orders",
            """lambda-workflows trigger orders --id order-42 --params '{"sku": "cat-poster"}'""",
        ],
        trigger_instance,
    )
    add_workflow_argument(trigger)
    trigger.add_argument("--id", help="the instance's id, unique forever (default: a new UUID)")
    trigger.add_argument("--params", help="the instance's params as JSON (default: {})")
    add_api_options(trigger, json_help="print the API's answer (id and status) as JSON")


def _describe_arguments(describe: argparse.ArgumentParser) -> None:
    add_instance_arguments(describe)
    add_api_options(describe, json_help="print the API's answer as JSON")


def step_output(args: argparse.Namespace, console: Console) -> int:
    """``GET /workflows/{name}/instances/{id}/steps/{step}?count=N``, printed as JSON:
    ``{name, count, type, status, output}``."""
    remote = api(args)
    path = remote.path(
        "workflows",
        args.name,
        "instances",
        args.id,
        "steps",
        args.step,
        query={"count": args.count},
    )
    console.json(remote.request("GET", path).body)
    return 0


def export_history(args: argparse.Namespace, console: Console) -> int:
    """``GET /workflows/{name}/instances/{id}/history``, page by page, printed as JSON (the
    export format, whole)."""
    console.json(read_pages(api(args), args.name, args.id, whole_history))
    return 0


def read_pages(
    remote: HttpApi, name: str, instance_id: str, read: Callable[[Fetch], dict[str, Any]]
) -> dict[str, Any]:
    """``read`` (see :mod:`lambda_workflows.api_pages`) of an instance's pages; read again
    from the first page when the instance was restarted meanwhile (a few times at most).

    Raises:
        ApiError: the API refused a page (a stale cursor the last time too).
    """

    def fetch(segments: tuple[str, ...], query: Mapping[str, Any]) -> Any:
        path = remote.path(
            "workflows", name, "instances", instance_id, *segments, query=dict(query)
        )
        return remote.request("GET", path).body

    for _ in range(_READS - 1):
        try:
            return read(fetch)
        except ApiError as exc:
            if exc.code != "stale_cursor":
                raise
    return read(fetch)


def list_instances(args: argparse.Namespace, console: Console) -> int:
    """``GET /workflows/{name}/instances``: a table, and how to get the next page."""
    remote = api(args)
    query = {"status": args.status, "limit": args.limit, "cursor": args.cursor}
    body = remote.request("GET", remote.path("workflows", args.name, "instances", query=query)).body
    if args.json:
        console.json(body)
        return 0
    rows = body.get("instances", [])
    width = max([len(r["id"]) for r in rows] + [2])
    console.data(f"{'ID':<{width}}  {'STATUS':<15}  {'CREATED':<24}  FINISHED")
    for row in rows:
        # pad before colouring: escape codes have no width on screen
        status = console.status(row["status"]) + " " * (15 - len(row["status"]))
        created, finished = row.get("created") or "", row.get("finished") or ""
        console.data(f"{row['id']:<{width}}  {status}  {created:<24}  {finished}")
    if body.get("cursor"):
        # the same listing's next page: a cursor belongs to its status filter (and a page of a
        # rare status may come back short, with a cursor, see docs/architecture.md)
        same = "".join(
            f" --{name} {value}"
            for name, value in (("status", args.status), ("limit", args.limit))
            if value is not None
        )
        console.message(
            f"more: lambda-workflows instances list {args.name}{same} --cursor {body['cursor']}"
        )
    return 0


def describe_instance(args: argparse.Namespace, console: Console) -> int:
    """``GET /workflows/{name}/instances/{id}``, with every step (``GET …/steps`` pages past
    the first): the timeline."""
    body = read_pages(api(args), args.name, args.id, whole_instance)
    if args.json:
        console.json(body)
        return 0
    head, _, rest = render(body).partition("\n")
    instance, _, status = head.rpartition(": ")
    console.data(f"{instance}: {console.status(status)}" + (f"\n{rest}" if rest else ""))
    if body.get("usage"):
        console.data(usage_line(body["usage"]))
    return 0


def usage_line(usage: dict[str, int]) -> str:
    """``usage: 9 writes, 2 reads, 2 invocations, 1 schedule`` (what the instance used)."""
    counts = [
        f"{usage.get(name, 0)} {name if usage.get(name, 0) != 1 else name[:-1]}"
        for name in ("writes", "reads", "invocations", "schedules")
    ]
    return "usage: " + ", ".join(counts)


def trigger_instance(args: argparse.Namespace, console: Console) -> int:
    """``POST /workflows/{name}/instances``: the new instance's id and status."""
    new: dict[str, Any] = {}
    if args.id is not None:
        new["instance_id"] = args.id
    if args.params is not None:
        new["params"] = json_option(args.params, "--params")
    remote = api(args)
    body = remote.request("POST", remote.path("workflows", args.name, "instances"), new).body
    if args.json:
        console.json(body)
        return 0
    console.data(f"{args.name}/{body['id']}: {console.status(body['status'])}")
    console.message(f"follow it: lambda-workflows instances describe {args.name} {body['id']}")
    return 0
