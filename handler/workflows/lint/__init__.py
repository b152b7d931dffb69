"""``workflows lint``: a static check of workflow code against the rules of Workflows.

``run()`` is replayed from the top every time an instance resumes, and only step results
survive; the rules of Workflows (Cloudflare's good / bad examples, ported in :mod:`examples`)
follow from that. This package finds the bad patterns in Python source with the standard
library's :mod:`ast` only; it never imports the code it checks.

What it checks: every class deriving from a ``...WorkflowEntrypoint`` base, its
``async def run(self, event, step)`` (parameter names taken by position) and any function
with a parameter annotated ``WorkflowStep``. Code in a lambda or def passed as the callback of
``step.do(...)`` runs *inside a step*; the rest of ``run()`` runs *outside* (again on every
replay). WF110 and WF111 look at every ``.create(...)`` of a workflow client in the file.

======  ========  =========================  ==================================================
id      severity  seed rule                  catches
======  ========  =========================  ==================================================
WF100   error     (syntax)                   the file cannot be parsed or decoded
WF101   error     deterministic-step-names   a step name built from time, randomness, uuid,
                                             ``id()``, or a variable holding such a value
WF102   error     side-effects-in-steps,     time/randomness/uuid (or a helper reading them)
                  conditional-logic          in ``run()`` outside a step, e.g.
                                             ``if random.random() > 0.5:``
WF103   error     side-effects-in-steps      I/O outside a step: boto3 clients and their
                                             calls, HTTP (requests, httpx, urllib, aiohttp),
                                             subprocesses, ``.create``/``.create_batch`` of a
                                             workflow client; pure constructors are fine
WF104   error     await-steps                a step call that is not awaited, gathered,
                                             turned into a task, or stored and awaited later
WF105   error     dont-mutate-event          assigning to / deleting from / calling a mutating
                                             method on ``event`` or a part of it
WF106   error     no-state-outside-steps     a step callback changing a variable of ``run()``
                                             (``image_list.append``), a ``nonlocal``, or
                                             ``self.attr``
WF107   error     race-inside-step           ``asyncio.wait(FIRST_COMPLETED / timeout)``,
                                             ``as_completed``, ``wait_for``, ``asyncio.timeout``
                                             around steps, or a helper doing so, outside a step
WF108   warning   granular-steps             one callback calling two services (bindings on
                                             ``self.env``, clients, HTTP hosts); storing the
                                             step's own output with ``put`` does not count
WF109   warning   small-step-results         a callback returning a whole HTTP response or its
                                             ``.json()``/``.read()``/``.content``/``.text``
WF110   warning   batch-create               ``.create(...)`` of a workflow client in a loop
WF111   warning   unique-instance-ids        ``.create(id=user_id)``: an id naming a user,
                                             customer or account rather than this run
======  ========  =========================  ==================================================

The seed rule "idempotent-calls" (check before a non-idempotent call) cannot be seen in the
source; the engine's at-least-once steps and the examples document it.

Silence a finding with a comment on its line: ``# workflows: ignore[WF102]``,
``# workflows: ignore[WF102,WF103]`` or a bare ``# workflows: ignore``; ``--no-ignore``
(``honor_ignores=False``) reports them anyway.

Example::

    from workflows.lint import lint_source
    for finding in lint_source(open("my_workflow.py").read(), "my_workflow.py"):
        print(finding.line, finding.rule, finding.message)
"""

from __future__ import annotations

from .checker import lint_paths, lint_source
from .command import main
from .findings import Finding, Severity
from .rules import RULES, SEED_RULES, Rule

__all__ = [
    "RULES",
    "SEED_RULES",
    "Finding",
    "Rule",
    "Severity",
    "lint_paths",
    "lint_source",
    "main",
]
