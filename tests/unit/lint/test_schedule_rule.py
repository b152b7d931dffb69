"""WF112: a workflow's schedules literal that EventBridge Scheduler would refuse."""

from __future__ import annotations

import textwrap

from lambda_workflows.lint import lint_source


def rules(source: str) -> list[tuple[int, str]]:
    found = lint_source(textwrap.dedent(source), "flows.py")
    return [(f.line, f.rule) for f in found]


def test_a_bad_cron_expression_is_reported_with_the_syntax() -> None:
    source = """
        from lambda_workflows import WorkflowEntrypoint

        class Report(WorkflowEntrypoint):
            schedules = ["rate(1 hour)", "cron(0 9 * * MON-FRI *)"]

            async def run(self, event, step):
                return None

        class Hourly(Report):
            schedules = ("rate(1 hours)",)
        """
    found = lint_source(textwrap.dedent(source), "flows.py")
    assert [(f.line, f.rule) for f in found] == [(5, "WF112"), (11, "WF112")]
    assert "day-of-month and day-of-week must be ?" in found[0].message
    assert "cron(minutes hours day-of-month month day-of-week year)" in found[0].message


def test_good_schedules_other_classes_and_computed_values_pass() -> None:
    source = """
        import os
        from lambda_workflows import WorkflowEntrypoint

        class Report(WorkflowEntrypoint):
            schedules = [{"expression": "cron(0 9 ? * MON-FRI *)", "timezone": "Europe/Paris"}]

        class FromEnvironment(WorkflowEntrypoint):
            schedules = [os.environ["REPORT_SCHEDULE"]]

        class NotAWorkflow:
            schedules = ["every monday"]
        """
    assert rules(source) == []
