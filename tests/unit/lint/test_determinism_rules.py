"""WF101 (non-deterministic step name) and WF102 (non-determinism outside a step)."""

from __future__ import annotations

import pytest

from .snippets import body_line, lint_module, lint_run, rules, run_rules


@pytest.mark.parametrize(
    "name",
    [
        'f"step #1 running at: {time.time()}"',
        'f"at {time.time_ns()}"',
        'f"t {time.monotonic()}"',
        'f"day {datetime.datetime.now()}"',
        'f"day {datetime.date.today()}"',
        '"pick " + str(random.random())',
        'f"id {uuid.uuid4()}"',
        'f"obj {id(event)}"',
    ],
)
def test_a_step_name_built_from_a_changing_value_is_wf101(name: str) -> None:
    # GIVEN a step whose name reads the clock, randomness, a uuid or an object id
    body = f"await step.do({name}, lambda: 1)"
    # WHEN it is linted THEN WF101 is reported, once, and not also WF102
    assert run_rules(body) == ["WF101"]


@pytest.mark.parametrize("method", ["sleep", "sleep_until", "wait_for_event"])
def test_every_step_method_needs_a_deterministic_name(method: str) -> None:
    assert run_rules(f'await step.{method}(f"nap {{time.time()}}", "1 hour")') == ["WF101"]


def test_a_child_workflow_step_needs_a_deterministic_name_too() -> None:
    body = 'await step.run_workflow(f"pay {time.time()}", workflow="charge")'
    assert run_rules(body) == ["WF101"]


def test_a_step_name_from_a_variable_holding_the_time_is_wf101_and_wf102() -> None:
    findings = lint_run(
        """
        started = time.time()
        await step.do(f"started {started}", lambda: 1)
        """
    )
    assert [(body_line(findings, i), f.rule) for i, f in enumerate(findings)] == [
        (1, "WF102"),
        (2, "WF101"),
    ]


def test_imported_aliases_are_resolved() -> None:
    findings = lint_module(
        """
        from datetime import datetime as dt
        from uuid import uuid4
        from lambda_workflows import WorkflowEntrypoint

        class W(WorkflowEntrypoint):
            async def run(self, event, step):
                await step.do(f"a {dt.now()}", lambda: 1)
                await step.do(f"b {uuid4()}", lambda: 1)
        """
    )
    assert rules(findings) == ["WF101", "WF101"]


def test_names_built_from_step_results_and_the_payload_are_fine() -> None:
    # Cloudflare's ✅: one step per entry of a list returned by a step.
    assert (
        run_rules(
            """
            cats = await step.do("get cat list", lambda: ["a", "b"])
            for cat in cats:
                await step.do(f"get cat: {cat}", functools.partial(str, cat))
            await step.do(f"user {event.payload['user']}", lambda: 1)
            await step.do(f"instance {event.instance_id}", lambda: 1)
            """
        )
        == []
    )


def test_random_outside_a_step_is_wf102() -> None:
    findings = lint_run("bad_random = random.random()")
    assert rules(findings) == ["WF102"]
    assert findings[0].workflow_rule == "side-effects-in-steps"
    assert "step.do" in findings[0].message


def test_a_branch_on_randomness_outside_a_step_is_wf102_from_the_conditional_logic_rule() -> None:
    findings = lint_run(
        """
        if random.random() > 0.5:
            await step.do("maybe do something", lambda: None)
        """
    )
    assert rules(findings) == ["WF102"]
    assert findings[0].workflow_rule == "conditional-logic"
    assert "branch" in findings[0].message


@pytest.mark.parametrize(
    "expression",
    [
        "time.time()",
        "datetime.datetime.utcnow()",
        "uuid.uuid1()",
        "random.choice([1, 2])",
        "time.gmtime()",
        "random.Random()",
    ],
)
def test_clock_randomness_and_uuids_outside_a_step_are_wf102(expression: str) -> None:
    assert run_rules(f"value = {expression}") == ["WF102"]


@pytest.mark.parametrize(
    "expression", ["time.gmtime(0)", "random.Random(42)", "uuid.uuid5(uuid.NAMESPACE_URL, 'x')"]
)
def test_deterministic_variants_are_fine(expression: str) -> None:
    assert run_rules(f"value = {expression}") == []


def test_randomness_inside_a_step_callback_is_fine() -> None:
    assert (
        run_rules(
            """
            good = await step.do("create a random number", lambda: random.random())

            async def decide():
                return random.random() > 0.5

            should = await step.do("decide randomly", decide)
            """
        )
        == []
    )


def test_logging_the_time_inside_a_step_is_fine() -> None:
    assert (
        run_rules(
            """
            async def fetch():
                print(f"fetched at {time.time()}")
                return 1

            await step.do("fetch user data", fetch)
            """
        )
        == []
    )


def test_a_helper_that_reads_randomness_counts_when_called_outside_a_step() -> None:
    source = """
        import random
        from lambda_workflows import WorkflowEntrypoint

        def get_random_int(low, high):
            return random.randrange(low, high)

        class W(WorkflowEntrypoint):
            async def run(self, event, step):
                outside = get_random_int(0, 3)
                inside = await step.do("pick", lambda: get_random_int(0, 3))
        """
    findings = lint_module(source)
    assert rules(findings) == ["WF102"]
    assert "get_random_int()" in findings[0].message


def test_a_local_helper_only_called_inside_steps_is_inside() -> None:
    assert (
        run_rules(
            """
            def pick(items):
                return random.choice(items)

            cat = await step.do("pick a cat", lambda: pick(["a", "b"]))
            """
        )
        == []
    )


def test_a_local_helper_called_from_run_itself_is_outside() -> None:
    findings = lint_run(
        """
        def pick(items):
            return random.choice(items)

        cat = pick(["a", "b"])
        """
    )
    assert rules(findings) == ["WF102"]
    assert body_line(findings) == 2
