"""``lambda-workflows lint``: a static check of workflow code against the rules of Workflows.

``run()`` is replayed from the top every time an instance resumes, and only step results
survive; the rules of Workflows (Cloudflare's good / bad examples, ported in :mod:`examples`)
follow from that. This package finds the bad patterns in Python source with the standard
library's :mod:`ast` only; it never imports the code it checks.

What it checks: every class deriving from a ``...WorkflowEntrypoint`` base, its
``async def run(self, event, step)`` (parameter names taken by position), any function
with a parameter annotated ``WorkflowStep``, and any function of the module that such code
passes its step to (``await self.ship(step, order)``). Code in a lambda or def passed as
the callback of ``step.do(...)`` runs *inside a step*; the rest of ``run()`` runs *outside*
(again on every replay). WF110 and WF111 look at every ``.create(...)`` of a workflow
client in the file.

Each finding names the rule of Workflows it comes from by its heading in Cloudflare's
documentation, :data:`RULES_OF_WORKFLOWS_URL`; :data:`RULES_OF_WORKFLOWS` lists them.

======  ========  ==========================================================================
id      severity  catches (and the rule of Workflows it comes from)
======  ========  ==========================================================================
WF100   error     the file cannot be parsed or decoded
WF101   error     a step name built from time, randomness, uuid, ``id()``, ``hash()`` of a
                  string, a variable holding such a value, or a module-level name computed
                  from one at import ("Name steps deterministically")
WF102   error     time/randomness/uuid (or a helper reading them) in ``run()`` outside a step
                  ("Avoid doing side effects outside of a step"); in a branch condition, e.g.
                  ``if random.random() > 0.5:`` ("Use conditional logic carefully")
WF103   error     I/O outside a step: boto3 clients and their calls, HTTP (requests, httpx,
                  urllib, aiohttp), subprocesses, ``.create``/``.create_batch`` of a workflow
                  client; pure constructors are fine ("Avoid doing side effects outside of a
                  step")
WF104   error     a step call (or a coroutine of the module that runs steps) that nothing
                  awaits before run() returns: not awaited, a task or a gather nobody awaits,
                  a task kept in a set ("Always await your steps")
WF105   error     changing ``event`` or a part of it: assignment, ``del``, ``+=`` of a list, a
                  mutating method, ``setattr``, ``operator.setitem``; through an alias, a loop
                  variable, a shallow copy's contents, a callback, or a function of the module
                  it is passed to, at any depth ("Don't mutate your incoming events")
WF106   error     a step callback changing a variable of ``run()`` (``image_list.append``), a
                  ``nonlocal``, or ``self.attr`` ("Don't rely on state outside of a step")
WF107   error     ``asyncio.wait(FIRST_COMPLETED / timeout)``, ``as_completed``, ``wait_for``,
                  ``asyncio.timeout`` around steps, or a helper doing so, outside a step: the
                  Python forms of ``Promise.race()`` / ``Promise.any()`` ("Take care with
                  Promise.race() and Promise.any()")
WF108   warning   one callback calling two services (bindings on ``self.env``, clients, HTTP
                  hosts); storing the step's own output with ``put`` does not count ("Make
                  your steps granular")
WF109   warning   a callback returning a whole HTTP response or its
                  ``.json()``/``.read()``/``.content``/``.text`` ("Keep step return values
                  under 1 MiB")
WF110   warning   ``.create(...)`` of a workflow client in a loop ("Batch multiple Workflow
                  invocations")
WF111   warning   ``.create(id=user_id)``: an id naming a user, customer or account rather
                  than this run ("Instance IDs are unique")
WF112   error     a class's ``schedules`` literal that EventBridge Scheduler would refuse: a
                  cron expression without exactly one ``?`` day field, ``rate(1 hours)``... (the
                  same check fails registration; no rule of Workflows behind it)
WF113   error     a real-time sleep in run() outside a step (``time.sleep``, ``asyncio.sleep``
                  but for 0, ``anyio.sleep``, ``threading.Event().wait``, or a helper doing
                  so): it holds the invocation and sleeps again on every replay; use
                  ``step.sleep`` ("Avoid doing side effects outside of a step")
WF114   error     ``except BaseException``, a bare ``except:``, ``except CancelledError``,
                  ``suppress(BaseException)`` or a ``finally:`` that returns, around code that
                  runs steps (or passes the step to a function) without re-raising: it
                  swallows the engine's suspension of the step ("Always await your steps")
WF115   error     a step name built from module globals or class attributes that workflow
                  code changes (``global n; n += 1``, ``Cls.runs += 1``, ``next(counter)``, a
                  helper doing so): they outlive a replay in a warm process ("Name steps
                  deterministically")
WF116   error     steps named, or given an element, while iterating a set (``for x in {...}``,
                  ``set(...)``, ``frozenset``, ``a | b``, ``list(s)``, ``s.pop()``,
                  ``",".join(s)``): string hashing changes the order per process; iterate
                  ``sorted(...)`` ("Name steps deterministically")
======  ========  ==========================================================================

"Ensure API/Binding calls are idempotent" (check before a non-idempotent call) cannot be seen
in the source; the engine's at-least-once steps and the examples document it.

Silence a finding with a comment on its line: ``# lambda-workflows: ignore[WF102]``,
``# lambda-workflows: ignore[WF102,WF103]`` or a bare ``# lambda-workflows: ignore``;
``--no-ignore`` (``honor_ignores=False``) reports them anyway. A file that does not parse is always
reported (WF100), whatever its comments say.

The command ends with one line, ``checked 3 files, no problems`` (or the problems counted). It
reads ``*.py`` files in the folders it is given; a file given by name that is not Python (see
:mod:`.files`) is skipped with a note, not reported.

Example::

    from lambda_workflows.lint import lint_source
    for finding in lint_source(open("my_workflow.py").read(), "my_workflow.py"):
        print(finding.line, finding.rule, finding.message)
"""

from __future__ import annotations

from .checker import lint_paths, lint_source
from .command import main
from .findings import Finding, Severity
from .rules import RULES, RULES_OF_WORKFLOWS, RULES_OF_WORKFLOWS_URL, Rule, rule_of_workflows

__all__ = [
    "RULES",
    "RULES_OF_WORKFLOWS",
    "RULES_OF_WORKFLOWS_URL",
    "Finding",
    "Rule",
    "Severity",
    "lint_paths",
    "lint_source",
    "main",
    "rule_of_workflows",
]
