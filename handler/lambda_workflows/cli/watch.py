"""``lambda-workflows instances watch NAME ID``: an instance's events as they happen, one line
each, until it finishes (long polls of ``GET …/instances/{id}/subscribe``)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from lambda_workflows.engine.instances.clients import SUBSCRIBE_WAIT

from .console import Console, add_api_options, add_command, add_instance_arguments, api

__all__ = ["add_watch", "event_line", "watch_instance"]

INTERRUPTED = 130  # the shell's status for a command stopped by Ctrl-C


def add_watch(family: Any) -> None:
    """Register ``instances watch``."""
    watch = add_command(
        family,
        "watch",
        "print an instance's events as they happen, one a line, until it finishes",
        [
            "lambda-workflows instances watch orders order-42",
            "lambda-workflows instances watch orders order-42 --types step.completed,step.failed",
            "lambda-workflows instances watch orders order-42 --cursor CURSOR --json",
        ],
        watch_instance,
    )
    add_instance_arguments(watch)
    watch.add_argument(
        "--types",
        help="only these event types, comma-separated (instance.complete, step.failed, ...)",
    )
    watch.add_argument(
        "--cursor", help="start after this event (an event's cursor, as --json prints it)"
    )
    add_api_options(watch, json_help="print each event as one line of JSON, with its cursor")


def watch_instance(args: argparse.Namespace, console: Console) -> int:
    """Long-poll the instance's events and print each; 0 once the instance has finished."""
    remote = api(args)
    cursor = args.cursor
    try:
        while True:
            query = {"cursor": cursor, "types": args.types, "wait": int(SUBSCRIBE_WAIT)}
            path = remote.path(
                "workflows", args.name, "instances", args.id, "subscribe", query=query
            )
            page = remote.request("GET", path).body
            for event in page["events"]:
                console.data(json.dumps(event) if args.json else event_line(event, console))
            cursor = page["cursor"]
            if page["finished"]:
                return 0
    except KeyboardInterrupt:
        if cursor is not None:
            console.message(f"stopped; go on from here with --cursor {cursor}")
        return INTERRUPTED


def event_line(event: Mapping[str, Any], console: Console) -> str:
    """``<time>  <type>  <what it is about>``: one event as a line."""
    return f"{event['timestamp']}  {event['type']:<20} {_about(event, console)}".rstrip()


def _about(event: Mapping[str, Any], console: Console) -> str:
    parts: list[str] = []
    step = event.get("step")
    if step:
        count = f" #{step['count']}" if step.get("count", 1) != 1 else ""
        parts.append(f"{step['name']!r}{count}")
    if event.get("attempt"):
        parts.append(f"attempt {event['attempt']}")
    if event.get("status"):
        parts.append(console.status(str(event["status"])))
    received = event.get("event")
    if received:
        parts.append(f"{received['type']} (event {received['id']})")
    for key, label in (("wake_at", "until"), ("timeout_at", "until"), ("retry_at", "retry at")):
        if event.get(key):
            parts.append(f"{label} {event[key]}")
    if event.get("event_type") and not received:
        parts.append(f"type {event['event_type']}")
    child = event.get("child")
    if child:
        parts.append(f"child {child['workflow']}/{child['id']}")
    error = event.get("error")
    if error:
        parts.append(f"{error['name']}: {error['message']}")
    return "  ".join(parts)
