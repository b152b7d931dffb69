"""``lambda-workflows check-deploy``: would the local code replay every instance in flight on a
stack?

Before a deploy, every instance not finished on the target stack (dev server or deployed API)
is listed, its history fetched (``GET .../history``, every page of it) and replayed with the
local code (the classes ``WORKFLOWS`` registers here) by
:class:`lambda_workflows.testing.Replayer`: with the class of the instance's version when it is
registered here (``name@version``), else with the newest. A
divergence found now is a ``NonDeterminismError`` the deployed code would have raised when that
instance next woke up.

Histories are fetched and replayed by a pool of threads (``--concurrency``), so thousands of
instances take seconds, not minutes; progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lambda_workflows.api_pages import whole_history
from lambda_workflows.engine.instances.history import History, HistoryFormatError
from lambda_workflows.engine.instances.replayer import Divergence, Replayer, StepCall
from lambda_workflows.engine.model import InstanceStatus
from lambda_workflows.engine.versions import is_registered, workflow_names
from lambda_workflows.remote import ApiError, HttpApi

from .console import CommandError, Console, Exit, add_api_options, add_command, api, whole_number
from .instances import read_pages

__all__ = ["Checked", "add_commands", "check_deploy"]

IN_FLIGHT = (
    InstanceStatus.QUEUED,
    InstanceStatus.RUNNING,
    InstanceStatus.WAITING,
    InstanceStatus.PAUSED,
    InstanceStatus.WAITING_FOR_PAUSE,
)
PAGE_SIZE = 1000  # the API's largest ?limit=
DEFAULT_CONCURRENCY = 8


def add_commands(commands: Any) -> None:
    """Register ``check-deploy``."""
    check = add_command(
        commands,
        "check-deploy",
        "replay the history of every instance in flight on a stack with the local code, and "
        "exit 1 if any would diverge (run it in CI before sam deploy)",
        [
            "lambda-workflows check-deploy                           against lambda-workflows dev",
            "WORKFLOWS=orders=app.orders:Orders lambda-workflows check-deploy --url $WORKFLOWS_URL",
            "lambda-workflows check-deploy --workflow orders --concurrency 16",
            "lambda-workflows check-deploy --json > check.json",
        ],
        check_deploy,
    )
    check.add_argument(
        "--workflow",
        metavar="NAME",
        help="check only this workflow's instances (default: every workflow the stack serves)",
    )
    check.add_argument(
        "--concurrency",
        type=whole_number(1, 64),
        default=DEFAULT_CONCURRENCY,
        metavar="N",
        help=f"histories fetched and replayed at once (default {DEFAULT_CONCURRENCY})",
    )
    add_api_options(check, json_help="print one object per instance, and the verdict, as JSON")
    check.epilog = (check.epilog or "") + (
        "\n\nThe local code is what WORKFLOWS (and PYTHONPATH) name here, as for lambda-workflows "
        "dev."
        "\nexit status: 0 every instance replays clean; 1 some instance would diverge (or "
        "its workflow is\nnot registered here); 2 a usage error, an API that cannot be "
        "reached, or nothing registered."
    )


@dataclass(frozen=True, slots=True)
class Checked:
    """One instance in flight, and how its history replays with the local code.

    ``replayed_with`` is the local version that replayed it (None: its workflow is not
    registered here); ``problem`` says why it could not be replayed at all.
    """

    workflow: str
    id: str
    version: str
    replayed_with: str | None = None
    divergence: Divergence | None = None
    problem: str | None = None

    @property
    def safe(self) -> bool:
        """True when the deploy leaves this instance able to go on."""
        return self.replayed_with is not None and self.divergence is None and not self.problem

    @property
    def verdict(self) -> str:
        """``compatible``, or what is wrong, in a few words."""
        if self.problem:
            return self.problem
        if self.divergence is not None:
            d = self.divergence
            recorded = str(d.recorded) if d.recorded else "run() returned"
            new = str(d.replayed) if d.replayed else "run() returns"
            return f"diverges at step {d.position} (recorded {recorded} vs new {new})"
        if self.replayed_with != self.version:
            return (
                f"compatible with version {self.replayed_with}, but version {self.version} "
                "is not registered here: it would be parked"
            )
        return "compatible"

    def shown(self) -> dict[str, Any]:
        """The ``--json`` object."""
        d = self.divergence
        return {
            "workflow": self.workflow,
            "id": self.id,
            "version": self.version,
            "replayed_with": self.replayed_with,
            "compatible": self.safe,
            "result": self.verdict,
            "divergence": None
            if d is None
            else {
                "position": d.position,
                "recorded": _call(d.recorded),
                "replayed": _call(d.replayed),
                "hint": d.hint,
            },
        }


def check_deploy(args: argparse.Namespace, console: Console) -> int:
    """List, fetch and replay every instance in flight; print the table; the exit status."""
    workflows = _local_workflows(args.workflow)
    remote = api(args)
    names = [args.workflow] if args.workflow else _served(remote)
    refs = list(_in_flight(remote, names))
    console.message(
        f"check-deploy: {len(refs)} instance(s) in flight on {remote.url}; replaying each "
        f"history with the local code ({args.concurrency} at a time)"
    )
    replayer = Replayer(workflows)
    progress = _Progress(console, len(refs))

    def check(ref: tuple[str, str]) -> Checked:
        checked = _check_one(remote, replayer, ref)
        progress.tick()
        return checked

    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        results = sorted(pool.map(check, refs), key=lambda c: (c.workflow, c.id))
    _print(console, results, as_json=args.json)
    unsafe = [r for r in results if not r.safe]
    parked = [r for r in results if r.safe and r.replayed_with != r.version]
    if parked:
        console.message(
            f"{len(parked)} instance(s) run on a version not registered here: keep the old "
            "class registered as name@version (WORKFLOWS) until lambda-workflows describe shows "
            "none "
            "in flight on it, or they are parked after the deploy"
        )
    if unsafe:
        console.message(
            f"{len(unsafe)} of {len(results)} instance(s) would not replay with this code: "
            "bump version on the changed class and register the old one as name@version"
        )
        return Exit.FAILED
    console.message(f"all {len(results)} instance(s) in flight replay clean with this code")
    return Exit.OK


def _local_workflows(only: str | None) -> dict[str, Any]:
    from lambda_workflows.engine.errors import NOTHING_REGISTERED, ConfigurationError
    from lambda_workflows.registry import load_workflows

    from .project import use_project_workflows

    use_project_workflows()  # in a project's folder: what its template deploys
    try:
        workflows: dict[str, Any] = load_workflows()
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    if not workflows:
        raise CommandError(NOTHING_REGISTERED)
    if only is not None and not is_registered(workflows, only):
        raise CommandError(
            f"--workflow {only}: no workflow {only!r} is registered here (WORKFLOWS names "
            f"{', '.join(workflow_names(workflows))}); check the local code against the "
            "stack's instances of a workflow it registers"
        )
    return workflows


def _served(remote: HttpApi) -> list[str]:
    body = remote.request("GET", "/workflows").body or {}
    return workflow_names(str(name) for name in body.get("workflows", []))


def _in_flight(remote: HttpApi, names: list[str]) -> Iterator[tuple[str, str]]:
    """(workflow, id) of every instance not finished, page by page."""
    for name in names:
        for status in IN_FLIGHT:
            cursor: str | None = None
            while True:
                query = {"status": status.value, "limit": PAGE_SIZE, "cursor": cursor}
                path = remote.path("workflows", name, "instances", query=query)
                try:
                    body = remote.request("GET", path).body or {}
                except ApiError as exc:
                    if exc.code == "unknown_workflow":  # not deployed yet: nothing in flight
                        break
                    raise
                yield from ((name, str(row["id"])) for row in body.get("instances", []))
                cursor = body.get("cursor")
                if not cursor:
                    break


def _check_one(remote: HttpApi, replayer: Replayer, ref: tuple[str, str]) -> Checked:
    name, instance_id = ref

    try:  # every page of it: the first alone would replay as a history cut short
        history = History.from_dict(read_pages(remote, name, instance_id, whole_history))
    except ApiError as exc:
        if exc.code == "instance_not_found":
            return Checked(name, instance_id, "?", "?", problem="deleted while checking")
        return Checked(name, instance_id, "?", problem=f"no history: {exc.message}")
    except HistoryFormatError as exc:
        return Checked(name, instance_id, "?", problem=str(exc))
    version = history.workflow_version
    if not is_registered(replayer.workflows, name):
        return Checked(name, instance_id, version, problem="workflow not registered here")
    result = replayer.replay_history(history)
    return Checked(name, instance_id, version, result.replayed_with, result.divergence)


def _print(console: Console, results: list[Checked], *, as_json: bool) -> None:
    if as_json:
        console.json(
            {
                "compatible": all(r.safe for r in results),
                "instances": [r.shown() for r in results],
            }
        )
        return
    width = max([len(f"{r.workflow}/{r.id}") for r in results] + [len("INSTANCE")])
    console.data(f"{'INSTANCE':<{width}}  {'VERSION':<7}  RESULT")
    for r in results:
        console.data(f"{r.workflow + '/' + r.id:<{width}}  {r.version:<7}  {r.verdict}")


class _Progress:
    """``checked i/N`` on stderr every 5% (at least every 100 instances), and at the end."""

    def __init__(self, console: Console, total: int) -> None:
        self.say: Callable[[str], None] = console.message
        self.total = total
        self.every = max(1, min(100, total // 20))
        self.done = 0
        self._lock = threading.Lock()

    def tick(self) -> None:
        with self._lock:
            self.done += 1
            if self.done % self.every == 0 or self.done == self.total:
                self.say(f"checked {self.done}/{self.total}")


def _call(call: StepCall | None) -> dict[str, str] | None:
    return None if call is None else {"name": call.name, "kind": call.kind}
