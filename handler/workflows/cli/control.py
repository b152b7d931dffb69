"""``workflows pause|resume|terminate|restart NAME ID`` (``terminate --rollback`` runs the
instance's rollbacks first) and ``workflows send-event``."""

from __future__ import annotations

import argparse
from typing import Any

from .console import Console, add_api_options, add_command, api, json_option

__all__ = ["add_commands"]

_ACTIONS = {
    "pause": "pause an instance at its next step boundary",
    "resume": "resume a paused instance",
    "terminate": "terminate an instance for good",
    "restart": "restart an instance from the top, with the same id and params",
}
_DONE = {"pause": "paused", "resume": "resumed", "terminate": "terminated", "restart": "restarted"}


def add_commands(commands: Any) -> None:
    """Register the four status changes and ``send-event``."""
    for action, summary in _ACTIONS.items():
        examples = [f"workflows {action} orders order-42"]
        if action == "terminate":
            examples.append("workflows terminate orders order-42 --rollback")
        change = add_command(commands, action, summary, examples, change_status)
        change.set_defaults(action=action, rollback=False)
        change.add_argument("name", metavar="NAME", help="the workflow's registered name")
        change.add_argument("id", metavar="ID", help="the instance's id")
        if action == "terminate":
            change.add_argument(
                "--rollback",
                action="store_true",
                help="first run the rollbacks of the steps it started, newest first; it is "
                "running until they are over, then terminated",
            )
        add_api_options(change, json_help="print the API's answer (id and status) as JSON")

    send = add_command(
        commands,
        "send-event",
        "send an event to an instance; it is kept until a wait_for_event of its type takes it",
        [
            """workflows send-event orders order-42 approved --payload '{"user": "ana"}'""",
            "workflows send-event orders order-42 approved --key approval-order-42",
        ],
        send_event,
    )
    send.add_argument("name", metavar="NAME", help="the workflow's registered name")
    send.add_argument("id", metavar="ID", help="the instance's id")
    send.add_argument(
        "type", metavar="TYPE", help="the event type the instance's wait_for_event waits for"
    )
    send.add_argument(
        "--payload", help="the event's payload as JSON (default: none; the payload is null)"
    )
    send.add_argument(
        "--key",
        help="an idempotency key: sending again with the same key stores nothing new",
    )
    add_api_options(send, json_help="print the API's answer (instance, type, event id) as JSON")


def change_status(args: argparse.Namespace, console: Console) -> int:
    """``PATCH /workflows/{name}/instances/{id}/status``."""
    remote = api(args)
    path = remote.path("workflows", args.name, "instances", args.id, "status")
    change: dict[str, Any] = {"status": args.action}
    if args.rollback:
        change["rollback"] = True
    body = remote.request("PATCH", path, change).body
    if args.json:
        console.json(body)
        return 0
    console.data(f"{args.name}/{body['id']}: {console.status(body['status'])}")
    if args.rollback:
        console.message(
            f"rolling back {args.name}/{body['id']}: it becomes terminated once its rollbacks "
            f"have run (workflows status {args.name} {body['id']})"
        )
        return 0
    console.message(f"{_DONE[args.action]} {args.name}/{body['id']}")
    return 0


def send_event(args: argparse.Namespace, console: Console) -> int:
    """``POST /workflows/{name}/instances/{id}/events/{type}``; bad JSON sends nothing."""
    payload = json_option(args.payload, "--payload")
    remote = api(args)
    path = remote.path("workflows", args.name, "instances", args.id, "events", args.type)
    headers = {"Idempotency-Key": args.key} if args.key is not None else None
    body = remote.request(
        "POST", path, payload, headers=headers, has_body=args.payload is not None
    ).body
    if args.json:
        console.json(body)
        return 0
    console.data(f"{body['event_id']}")
    console.message(f"sent {body['type']} to {args.name}/{body['instance_id']}")
    return 0
