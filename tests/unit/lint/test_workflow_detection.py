"""What counts as workflow code, and what counts as inside a step."""

from __future__ import annotations

from .snippets import lint_module, rules


def test_only_workflow_classes_are_checked() -> None:
    source = """
        import random

        class NotAWorkflow:
            async def run(self, event, step):
                if random.random() > 0.5:
                    step.do("x", lambda: 1)
        """
    assert rules(lint_module(source)) == []


def test_any_base_named_like_workflow_entrypoint_makes_a_workflow() -> None:
    source = """
        import random
        import lambda_workflows

        class A(workflows.WorkflowEntrypoint):
            async def run(self, event, step):
                random.random()

        class B(MyWorkflowEntrypoint[dict]):
            async def run(self, event, step):
                random.random()
        """
    assert rules(lint_module(source)) == ["WF102", "WF102"]


def test_parameter_names_are_taken_by_position() -> None:
    source = """
        import time
        from lambda_workflows import WorkflowEntrypoint

        class W(WorkflowEntrypoint):
            async def run(self, ev, s):
                ev.payload["x"] = 1
                s.do(f"at {time.time()}", lambda: 1)
        """
    assert sorted(rules(lint_module(source))) == ["WF101", "WF104", "WF105"]


def test_helpers_taking_the_step_are_checked_like_run() -> None:
    source = """
        import random
        from lambda_workflows import WorkflowEntrypoint, WorkflowStep

        async def charge(step: WorkflowStep, customer):
            if random.random() > 0.5:
                await step.do("charge", lambda: customer)

        class W(WorkflowEntrypoint):
            async def notify(self, step: "WorkflowStep"):
                step.do("notify", lambda: 1)
        """
    assert rules(lint_module(source)) == ["WF102", "WF104"]


def test_callbacks_given_by_name_or_through_partial_are_inside_a_step() -> None:
    source = """
        import functools
        import random
        from lambda_workflows import WorkflowEntrypoint

        class W(WorkflowEntrypoint):
            async def run(self, event, step):
                def roll():
                    return random.random()

                def roll_between(low, high):
                    return random.uniform(low, high)

                a = await step.do("roll", roll)
                b = await step.do("roll between", {"retries": {"limit": 1}}, roll)
                c = await step.do("partial", functools.partial(roll_between, 1, 2))
        """
    assert rules(lint_module(source)) == []


def test_a_local_def_that_is_never_called_is_not_checked() -> None:
    source = """
        import random
        from lambda_workflows import WorkflowEntrypoint

        class W(WorkflowEntrypoint):
            async def run(self, event, step):
                def unused():
                    return random.random()
        """
    assert rules(lint_module(source)) == []


def test_files_without_workflows_have_no_findings() -> None:
    assert lint_module("import random\nx = random.random()\n") == []


def test_a_syntax_error_is_wf100() -> None:
    findings = lint_module("class W(WorkflowEntrypoint):\n    def run(self\n")
    assert rules(findings) == ["WF100"]
    assert findings[0].severity == "error"
