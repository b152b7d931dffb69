"""``lambda-workflows pause|resume|terminate|restart NAME ID`` (``terminate --rollback`` runs the
instance's rollbacks first; ``restart --from-step STEP`` keeps what was recorded before that
step), ``lambda-workflows delete NAME ID...`` and ``lambda-workflows send-event``."""

from __future__ import annotations

import argparse
from typing import Any

from .console import (
    CommandError,
    Console,
    Exit,
    add_api_options,
    add_command,
    add_instance_arguments,
    add_workflow_argument,
    api,
    json_option,
    whole_number,
)

__all__ = ["add_commands"]

_ACTIONS = {
    "pause": "pause an instance at its next step boundary",
    "resume": "resume a paused instance",
    "terminate": "terminate an instance for good",
    "restart": "restart an instance from the top, with the same id and params",
}
_DONE = {"pause": "paused", "resume": "resumed", "terminate": "terminated", "restart": "restarted"}
_STEP_TYPES = ("do", "sleep", "waitForEvent", "runWorkflow")
MAX_DELETE = 100  # ids per request of the API's batch delete


def add_commands(commands: Any) -> None:
    """Register the four status changes, ``delete`` and ``send-event``."""
    for action, summary in _ACTIONS.items():
        examples = [f"lambda-workflows {action} orders order-42"]
        if action == "terminate":
            examples.append("lambda-workflows terminate orders order-42 --rollback")
        if action == "restart":
            examples.append('lambda-workflows restart orders order-42 --from-step "charge card"')
            examples.append("lambda-workflows restart orders order-42 --from-step fetch --count 2")
        change = add_command(commands, action, summary, examples, change_status)
        change.set_defaults(action=action, rollback=False, from_step=None, count=None, type=None)
        add_instance_arguments(change)
        if action == "terminate":
            change.add_argument(
                "--rollback",
                action="store_true",
                help="first run the rollbacks of the steps it started, newest first; it is "
                "running until they are over, then terminated",
            )
        if action == "restart":
            _add_from_step(change)
        add_api_options(change, json_help="print the API's answer (id and status) as JSON")
    _add_delete(commands)

    send = add_command(
        commands,
        "send-event",
        "send an event to an instance; it is kept until a wait_for_event of its type takes it",
        [
            """lambda-workflows send-event orders order-42 approved --payload '{"user": "ana"}'""",
            "lambda-workflows send-event orders order-42 approved --key approval-order-42",
        ],
        send_event,
    )
    add_instance_arguments(send)
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


def _add_from_step(restart: argparse.ArgumentParser) -> None:
    restart.add_argument(
        "--from-step",
        metavar="STEP",
        help="restart from this recorded step: the results recorded before it are kept (their "
        "callbacks do not run again); it and every step after it run again",
    )
    restart.add_argument(
        "--count",
        type=whole_number(1),
        metavar="N",
        help="with --from-step: the step's occurrence, 1 for the first call with its name "
        "(default 1)",
    )
    restart.add_argument(
        "--type",
        choices=_STEP_TYPES,
        metavar="TYPE",
        help="with --from-step: only a step of this type (do, sleep, waitForEvent, runWorkflow)",
    )


def _add_delete(commands: Any) -> None:
    delete = add_command(
        commands,
        "delete",
        "delete instances: their record, journal, events and pending wake-ups (a running or "
        "waiting one is terminated first)",
        [
            "lambda-workflows delete orders order-42",
            "lambda-workflows delete orders order-42 order-43 order-44",
        ],
        delete_instances,
    )
    add_workflow_argument(delete)
    delete.add_argument("ids", metavar="ID", nargs="+", help="the instances' ids")
    add_api_options(delete, json_help="print the API's answer (deleted and errors) as JSON")


def change_status(args: argparse.Namespace, console: Console) -> int:
    """``PATCH /workflows/{name}/instances/{id}/status``."""
    change: dict[str, Any] = {"status": args.action}
    if args.rollback:
        change["rollback"] = True
    if args.from_step is not None:
        change["from_step"] = {"name": args.from_step, "count": args.count or 1}
        if args.type is not None:
            change["from_step"]["type"] = args.type
    elif args.count is not None or args.type is not None:
        raise CommandError("--count and --type choose which step --from-step names; add it")
    remote = api(args)
    path = remote.path("workflows", args.name, "instances", args.id, "status")
    body = remote.request("PATCH", path, change).body
    if args.json:
        console.json(body)
        return 0
    console.data(f"{args.name}/{body['id']}: {console.status(body['status'])}")
    if args.rollback:
        console.message(
            f"rolling back {args.name}/{body['id']}: it becomes terminated once its rollbacks "
            f"have run (lambda-workflows status {args.name} {body['id']})"
        )
        return 0
    console.message(f"{_DONE[args.action]} {args.name}/{body['id']}")
    return 0


def delete_instances(args: argparse.Namespace, console: Console) -> int:
    """``POST /workflows/{name}/instances/delete`` (100 ids a request): a line per id; exit 1
    when one was not deleted (not found, not an id)."""
    remote = api(args)
    path = remote.path("workflows", args.name, "instances", "delete")
    answer: dict[str, list[Any]] = {"deleted": [], "errors": []}
    for start in range(0, len(args.ids), MAX_DELETE):
        body = remote.request("POST", path, {"ids": args.ids[start : start + MAX_DELETE]}).body
        answer["deleted"] += body["deleted"]
        answer["errors"] += [{**e, "index": e["index"] + start} for e in body["errors"]]
    if args.json:
        console.json(answer)
    else:
        for deleted in answer["deleted"]:
            console.data(f"{args.name}/{deleted['id']}: deleted")
        for error in answer["errors"]:
            console.message(f"{args.name}/{error['id']}: {error['code']}: {error['message']}")
    return Exit.FAILED if answer["errors"] else Exit.OK


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
