"""The ``lambda-workflows`` command.

One module per family of commands: :mod:`.registered` (``list``, ``describe``),
:mod:`.instances` (``instances list|describe|step``, ``status``, ``trigger``),
:mod:`.control` (``pause``, ``resume``, ``terminate``, ``restart``, ``delete``,
``send-event``), :mod:`.local` (``dev``, ``run``, ``dev-clock``, ``dev-events``), :mod:`.ui`
(``ui``), :mod:`.check_deploy` (``check-deploy``); ``lint`` is :mod:`lambda_workflows.lint`'s own
command. What they share (output streams, colour, exit codes) is in :mod:`.console`.
"""

from __future__ import annotations

import argparse
import sys

from lambda_workflows.distribution import installed_version
from lambda_workflows.remote import ApiError, ApiUnreachable

from . import check_deploy, control, doctor, instances, local, project, registered, ui
from .console import CommandError, Console, Exit, api_error_message

__all__ = ["main"]

DESCRIPTION = """\
Durable workflows on AWS: run them locally, and operate them through the HTTP API.

Every command but dev, run and lint talks to the API at --url: by default WORKFLOWS_URL, else
a lambda-workflows dev server on http://127.0.0.1:8787. Requests to an API Gateway (execute-api) URL
are signed with SigV4 from your AWS credentials.

exit status: 0 success; 1 the API answered an error, or the instance run followed failed;
2 a usage error, bad input, an API that cannot be reached, or no workflow registered."""

EXAMPLES = """\
examples:
  lambda-workflows dev                                  serve the API locally on port 8787
  lambda-workflows run orders                           run one instance in this process
  lambda-workflows list                                 the registered workflows
  lambda-workflows describe orders                      one workflow, instance counts by status
  lambda-workflows trigger orders --params '{"sku": "cat-poster"}'
  lambda-workflows instances list orders --status waiting
  lambda-workflows instances describe orders order-42   an instance's step timeline
  lambda-workflows send-event orders order-42 approved --payload '{"user": "ana"}'
  lambda-workflows pause orders order-42                (also resume, terminate, restart)
  lambda-workflows restart orders order-42 --from-step "charge card"
  lambda-workflows delete orders order-42 order-43      an instance's record, journal and wake-ups
  lambda-workflows dev-clock advance "2 days"           move the dev server's clock forward
  lambda-workflows dev-events put --detail-type "Workflow Event" --detail '{"workflow": "orders",
  ...}'
  lambda-workflows lint handler/                        check workflow code against the rules
  lambda-workflows ui --url $WORKFLOWS_URL              the dashboard of a deployed stack
  lambda-workflows check-deploy --url $WORKFLOWS_URL    would the local code replay what is in
  flight?

Run lambda-workflows COMMAND --help for a command's options and examples."""


def package_version() -> str:
    """The installed package's version."""
    return installed_version()


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command but ``lint`` (which parses its own options)."""
    parser = argparse.ArgumentParser(
        prog="lambda-workflows",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"lambda-workflows {package_version()}"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    project.add_commands(commands)
    local.add_commands(commands)
    registered.add_commands(commands)
    instances.add_commands(commands)
    control.add_commands(commands)
    ui.add_commands(commands)
    check_deploy.add_commands(commands)
    doctor.add_commands(commands)
    commands.add_parser(
        "lint", help="check workflow code against the rules of Workflows (lambda-workflows lint -h)"
    )
    return parser


def main(argv: list[str] | None = None, *, console: Console | None = None) -> int:
    """Entry point of the ``lambda-workflows`` console script; returns the exit status.

    Args:
        argv: the arguments after ``workflows``; default ``sys.argv[1:]``.
        console: where data and messages go; default stdout and stderr (argparse's help and
            usage errors always go to those).
    """
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["lint"]:  # the linter parses its own options (--format, --no-ignore)
        from lambda_workflows.lint import main as lint_main

        return lint_main(argv[1:])
    args = build_parser().parse_args(argv)
    console = console or Console.standard()
    prefix = f"lambda-workflows {args.command}"
    try:
        return int(args.handler(args, console))
    except CommandError as exc:
        console.message(f"{prefix}: {exc}")
        return exc.code
    except ApiError as exc:
        console.message(f"{prefix}: {api_error_message(exc)}")
        return Exit.FAILED
    except ApiUnreachable as exc:
        console.message(f"{prefix}: {exc}")
        return Exit.USAGE


if __name__ == "__main__":
    sys.exit(main())
