"""What every command shares: where output goes, colour, exit codes, and the API connection.

Data (tables, timelines, JSON) goes to stdout and messages to stderr, so ``--json`` output can
be piped into ``jq`` while a warning still reaches the terminal. Colour is used only when the
stream is a terminal and ``NO_COLOR`` is unset (https://no-color.org).

Exit codes: 0 success; 1 the API answered an error, or what was asked for failed (an instance
``lambda-workflows run`` followed errored); 2 the command itself could not be carried out (a usage
error, bad input such as malformed JSON, an API that cannot be reached, nothing registered).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TextIO

from lambda_workflows.remote import ApiError, HttpApi, default_url


class Exit(IntEnum):
    """The command's exit status."""

    OK = 0
    FAILED = 1  # the API answered an error, or the instance failed
    USAGE = 2  # bad input, unreachable API, nothing registered


class CommandError(Exception):
    """A command cannot go on: ``message`` goes to stderr and the process exits with ``code``."""

    def __init__(self, message: str, code: Exit = Exit.USAGE) -> None:
        super().__init__(message)
        self.code = code


# Status words, coloured by what they ask of the reader: green done, red failed, yellow
# needs attention or input, blue in progress.
_COLOURS = {
    "complete": "32",
    "errored": "31",
    "terminated": "31",
    "paused": "33",
    "waitingForPause": "33",
    "waiting": "33",
    "running": "34",
    "queued": "34",
    "retrying": "33",
}


def wants_colour(stream: TextIO) -> bool:
    """True when ``stream`` is a terminal and ``NO_COLOR`` is unset or empty."""
    if os.environ.get("NO_COLOR", ""):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@dataclass
class Console:
    """The command's stdout (data) and stderr (messages)."""

    out: TextIO
    err: TextIO

    @classmethod
    def standard(cls) -> Console:
        """The process's streams, read at call time (tests replace ``sys.stdout``)."""
        return cls(sys.stdout, sys.stderr)

    def data(self, text: str) -> None:
        """A line of data on stdout."""
        print(text, file=self.out, flush=True)

    def json(self, value: Any) -> None:
        """``value`` as indented JSON on stdout."""
        self.data(json.dumps(value, indent=2, ensure_ascii=False))

    def message(self, text: str) -> None:
        """A message for the person at the terminal, on stderr."""
        print(text, file=self.err, flush=True)

    def status(self, word: str) -> str:
        """``word`` (an instance or step status) coloured when stdout is a terminal."""
        code = _COLOURS.get(word)
        if code is None or not wants_colour(self.out):
            return word
        return f"\033[{code}m{word}\033[0m"


Handler = Callable[[argparse.Namespace, Console], int]


def add_command(
    commands: Any, name: str, summary: str, examples: list[str], handler: Handler | None
) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` ends with its examples, shown as written."""
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples)
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=summary[0].upper() + summary[1:] + ".",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if handler is not None:
        parser.set_defaults(handler=handler)
    return parser


def add_workflow_argument(parser: argparse.ArgumentParser) -> None:
    """The ``NAME`` positional: the workflow's registered name."""
    parser.add_argument("name", metavar="NAME", help="the workflow's registered name")


def add_instance_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``NAME ID`` positionals that name one instance."""
    add_workflow_argument(parser)
    parser.add_argument("id", metavar="ID", help="the instance's id")


def add_api_options(parser: argparse.ArgumentParser, *, json_help: str | None = None) -> None:
    """``--url`` (and ``--json`` when ``json_help`` is given) for a command that calls the API."""
    parser.add_argument(
        "--url",
        default=None,
        help="the API's base URL: the stack's ApiUrl output, or a dev server; default "
        "WORKFLOWS_URL, else http://127.0.0.1:8787 (requests to an execute-api URL are signed "
        "with SigV4 from your AWS credentials)",
    )
    if json_help is not None:
        parser.add_argument("--json", action="store_true", help=json_help)


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` taking a whole number from ``low`` (to ``high``, when given)."""
    shown = f"≥ {low}" if high is None else f"from {low} to {high}"

    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            number = low - 1
        if number < low or (high is not None and number > high):
            raise argparse.ArgumentTypeError(f"must be a whole number {shown}, not {text!r}")
        return number

    return parse


def api(args: argparse.Namespace) -> HttpApi:
    """The API at ``--url`` (default: ``WORKFLOWS_URL``, else the dev server)."""
    url = args.url or default_url()
    try:
        return HttpApi(url)
    except ValueError as exc:
        raise CommandError(f"--url: {exc}") from None


def json_option(text: str | None, option: str) -> Any:
    """The JSON value of ``option``; a ``CommandError`` (exit 2) naming it when malformed."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CommandError(
            f"{option} is not JSON: {exc}; write it in single quotes, e.g. "
            f"""{option} '{{"user": "ana"}}'"""
        ) from None


def api_error_message(exc: ApiError) -> str:
    """The API's error, with the next thing to try when there is an obvious one."""
    hints = {
        "unknown_workflow": "`lambda-workflows list` shows the registered workflows",
        "instance_not_found": "`lambda-workflows instances list NAME` shows a workflow's instances",
        "invalid_transition": "a finished instance can only be restarted",
        "configuration_error": "set WORKFLOWS=name=module:Class where the API runs",
    }
    hint = hints.get(exc.code)
    return f"{exc.message} ({exc.status} {exc.code})" + (f"; {hint}" if hint else "")
