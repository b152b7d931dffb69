"""A workflow's diagram, built from its source with the linter's model of run(): the bundled
examples drawn as their code reads, and a workflow with every shape — branches, loops, gathers,
races, try/except, sleeps, event waits, rollbacks, helpers (issue 16)."""

from __future__ import annotations

import inspect
import re
import textwrap
from typing import Any

import pytest

from lambda_workflows.dashboard.diagram import Node, NodeKind
from lambda_workflows.dashboard.diagram_builder import DiagramError, build_diagram
from lambda_workflows.dashboard.diagram_route import diagram_of
from lambda_workflows.examples import GOOD_WORKFLOWS
from lambda_workflows.examples.showcase import SHOWCASE_WORKFLOWS

Outline = Any
EXAMPLES = {**GOOD_WORKFLOWS, **SHOWCASE_WORKFLOWS}
STEP_CALL = re.compile(r"\bstep\.(do|sleep|sleep_until|wait_for_event)\(")


def outline(nodes: tuple[Node, ...] | list[Node]) -> list[Outline]:
    """Nodes as nested tuples: a step (method, name[, detail]); a container (kind, label,
    [(path label, [...]), ...])."""
    shown: list[Outline] = []
    for node in nodes:
        if node.kind is NodeKind.STEP:
            step: tuple[Any, ...] = (node.method, node.label)
            step += (node.detail,) if node.detail else ()
            step += (f"rollback {node.rollback}",) if node.rollback else ()
            if node.paths:
                step += (outline(node.paths[0].nodes),)
            shown.append(step)
        else:
            paths = [(path.label, outline(path.nodes)) for path in node.paths]
            shown.append((node.kind.value, node.label, paths))
    return shown


def drawn(cls: type) -> list[Outline]:
    return outline(diagram_of("x", cls).nodes)


# --- the examples ------------------------------------------------------------------------------


def test_a_sequence_with_a_sleep_and_an_event_wait() -> None:
    assert drawn(SHOWCASE_WORKFLOWS["subscription"]) == [
        ("do", "charge {customer}"),
        ("sleep", "cool down", "3 hours"),
        ("wait_for_event", "approval", 'type "approved", timeout 1 day'),
    ]


def test_a_child_workflow_step_is_drawn_with_the_workflow_it_runs() -> None:
    source = """
class Order(WorkflowEntrypoint):
    async def run(self, event, step):
        receipt = await step.run_workflow("pay", workflow="charge", params={"amount": 1})
        await step.run_workflow("notify", workflow=event.payload["notifier"])
        return receipt
"""
    assert outline(build_diagram(source, "Order").nodes) == [
        ("run_workflow", "pay", 'child workflow "charge"'),
        ("run_workflow", "notify", "child workflow event.payload['notifier']"),
    ]


def test_a_config_named_by_a_variable_shows_its_retries() -> None:
    assert drawn(SHOWCASE_WORKFLOWS["flaky-fetch"]) == [
        ("do", "fetch cat", "retries 4 × 5 seconds exponential"),
    ]


def test_steps_in_a_loop_are_drawn_once_inside_it_with_their_f_string_names() -> None:
    assert drawn(SHOWCASE_WORKFLOWS["crash-resume"]) == [
        ("loop", "for name in ('reserve stock', 'charge card', 'ship parcel')",
         [("", [("do", "{name}")])]),
    ]  # fmt: skip
    assert drawn(GOOD_WORKFLOWS["deterministic-step-names"])[-1] == (
        "loop", "for cat in cat_list", [("", [("do", "get cat: {cat}")])],
    )  # fmt: skip


def test_branches_keep_the_arm_that_takes_no_step() -> None:
    assert drawn(GOOD_WORKFLOWS["conditional-logic"]) == [
        ("do", "fetch config"),
        ("branch", "if", [
            ("if config['enable_email_notifications']", [("do", "send email")]),
            ("else", []),
        ]),
        ("branch", "if", [
            ("if event.payload.get('user_type') == 'premium'", [("do", "premium processing")]),
            ("else", []),
        ]),
        ("do", "decide randomly"),
        ("branch", "if", [
            ("if should_process", [("do", "conditionally do something")]),
            ("else", []),
        ]),
    ]  # fmt: skip


def test_a_gather_of_steps_is_one_path_each() -> None:
    assert drawn(GOOD_WORKFLOWS["no-state-outside-steps"]) == [
        ("parallel", "asyncio.gather(…)", [
            ("", [("do", "get first cutest cat from KV")]),
            ("", [("do", "get second cutest cat from KV")]),
        ]),
        ("sleep", "💤💤💤💤", "3 hours"),
        ("do", "choose a random cat from the list and download it"),
    ]  # fmt: skip


def test_a_race_inside_a_step_is_drawn_inside_that_step() -> None:
    assert drawn(GOOD_WORKFLOWS["race-inside-step"]) == [
        ("do", "Promise step", [
            ("race", "first_completed(…)", [
                ("", [("do", "Promise first race")]),
                ("", [("do", "Promise second race")]),
            ]),
        ]),
        ("sleep", "Sleep step", "2 hours"),
        ("do", "Another step"),
    ]  # fmt: skip


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_example_draws_each_step_call_of_its_run_once(name: str) -> None:
    # GIVEN an example, and the step calls its class's source holds
    cls = EXAMPLES[name]
    calls = len(STEP_CALL.findall(inspect.getsource(cls)))

    # WHEN its diagram is built
    diagram = diagram_of(name, cls)

    # THEN every call is a step of the diagram, once, and nothing was left over
    assert len(diagram.steps()) == calls
    assert diagram.notes == ()
    assert diagram.to_dict()["steps"] == calls
    assert (diagram.workflow, diagram.class_name, diagram.module) == (
        name, cls.__name__, cls.__module__,
    )  # fmt: skip


# --- every shape -------------------------------------------------------------------------------

EVERY_SHAPE = textwrap.dedent("""
    import asyncio
    from functools import partial
    from asyncio import gather as together
    from lambda_workflows import StepFailedError, WorkflowEntrypoint, WorkflowStep


    class Fulfilment(WorkflowEntrypoint):
        async def run(self, event, step):
            order = await step.do(
                "load order",
                {"retries": {"limit": 3, "delay": "1 second"}, "timeout": "30 seconds"},
                lambda: {},
            )
            if order["express"]:
                await step.do("book courier", lambda: "courier")
            elif order["pickup"]:
                await step.wait_for_event("collected", type="picked-up", timeout="7 days")
            for item in order["items"]:
                await step.do(f"reserve {item}", lambda: True, rollback=self.release)
            await together(*[step.do(f"label {box}", lambda: box) for box in order["boxes"]])
            await asyncio.gather(
                step.do("notify customer", lambda: "sent"),
                self.invoice(step, order),
            )
            try:
                await step.do("charge", partial(print, "charged"))
            except StepFailedError:
                await step.do("refund", lambda: "refunded")
            while not await step.do("check carrier", lambda: True):
                await step.sleep("wait for carrier", "1 hour")
            await step.sleep_until("until dispatch", order["dispatch_at"])
            match order["region"]:
                case "eu":
                    await step.do("customs EU", lambda: "ok")
                case _:
                    pass
            return "done" if order["quiet"] else await step.do("thank", lambda: "thanks")

        async def invoice(self, step: WorkflowStep, order):
            await step.do("write invoice", lambda: "invoice")
            await self.invoice_again(step)

        async def invoice_again(self, step: WorkflowStep):
            await self.invoice(step, {})  # recursion: drawn once

        def release(self, ctx, output, error):
            pass
""")


def test_every_shape_of_run_is_drawn_in_source_order() -> None:
    diagram = build_diagram(EVERY_SHAPE, "Fulfilment")
    assert outline(diagram.nodes) == [
        ("do", "load order", "retries 3 × 1 second, timeout 30 seconds"),
        ("branch", "if", [
            ("if order['express']", [("do", "book courier")]),
            ("elif order['pickup']", [
                ("wait_for_event", "collected", 'type "picked-up", timeout 7 days'),
            ]),
            ("else", []),
        ]),
        ("loop", "for item in order['items']", [
            ("", [("do", "reserve {item}", "rollback self.release")]),
        ]),
        ("parallel", "together(…)", [
            ("", [("loop", "for box in order['boxes']", [("", [("do", "label {box}")])])]),
        ]),
        ("parallel", "asyncio.gather(…)", [
            ("", [("do", "notify customer")]),
            ("", [("call", "self.invoice(…)", [
                ("", [("do", "write invoice"), ("call", "self.invoice_again(…)", [
                    ("", [("call", "self.invoice(…) again", [])]),
                ])]),
            ])]),
        ]),
        ("try", "try", [
            ("try", [("do", "charge")]),
            ("except StepFailedError", [("do", "refund")]),
        ]),
        ("loop", "while not await step.do('check carrier', lambda: True)", [
            ("", [("do", "check carrier"), ("sleep", "wait for carrier", "1 hour")]),
        ]),
        ("sleep_until", "until dispatch", "until order['dispatch_at']"),
        ("branch", "match order['region']", [
            ("case 'eu'", [("do", "customs EU")]),
            ("case _", []),
        ]),
        ("branch", "if", [("if order['quiet']", []), ("else", [("do", "thank")])]),
    ]  # fmt: skip
    assert diagram.line == 9 and diagram.notes == ()
    as_json = diagram.to_dict()
    assert as_json["steps"] == 14
    assert as_json["nodes"][0] == {
        "kind": "step",
        "label": "load order",
        "line": 10,
        "method": "do",
        "detail": "retries 3 × 1 second, timeout 30 seconds",
    }


def test_local_functions_are_drawn_where_called_and_callbacks_hold_their_steps() -> None:
    source = textwrap.dedent("""
        class Local(WorkflowEntrypoint):
            async def run(self, event, step):
                async def ship():
                    await step.do("pack", lambda: 1)
                    await step.do("post", lambda: 2)

                async def race():
                    return await first(step.do("a", lambda: 1), step.do("b", lambda: 2))

                async def never_called():
                    await step.do("unreachable", lambda: 0)

                await step.do("race", race)
                await ship()
    """)
    assert outline(build_diagram(source, "Local").nodes) == [
        ("do", "race", [("do", "a"), ("do", "b")]),
        ("call", "ship(…)", [("", [("do", "pack"), ("do", "post")])]),
    ]


def test_a_branch_or_try_without_steps_is_not_drawn() -> None:
    source = textwrap.dedent("""
        class Plain(WorkflowEntrypoint):
            async def run(self, event, step):
                if event.payload:
                    print("no step here")
                try:
                    total = await step.do("sum", lambda: 1)
                except ValueError:
                    total = 0
                return total
    """)
    assert outline(build_diagram(source, "Plain").nodes) == [("do", "sum")]


def test_a_run_inherited_from_a_base_class_is_drawn_from_the_base() -> None:
    subscription = SHOWCASE_WORKFLOWS["subscription"]
    renamed = type("Renamed", (subscription,), {})
    assert drawn(renamed) == drawn(subscription)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "class Other(WorkflowEntrypoint):\n    async def run(self, e, s): pass",
            "no class Wanted",
        ),
        ("class Wanted(WorkflowEntrypoint):\n    def helper(self): pass", "no class Wanted"),
        ("class Wanted(:\n", "does not parse"),
    ],
    ids=["other-class", "no-run", "syntax-error"],
)
def test_a_source_without_the_class_run_says_so(source: str, message: str) -> None:
    with pytest.raises(DiagramError, match=message):
        build_diagram(source, "Wanted")
