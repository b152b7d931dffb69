"""A rollback (``step.do(..., rollback=undo)``) is checked by the same rules as a step callback:
it runs as a durable step of its own, so its I/O is fine and changing run()'s state is not."""

from __future__ import annotations

from .snippets import lint_run, rules, run_rules


def test_io_inside_a_rollback_is_fine() -> None:
    body = """
        async def refund(ctx, output, error):
            requests.post("https://bank.example/refund", json=output)

        await step.do("debit", lambda: 1, rollback=refund)
        """
    assert run_rules(body) == []


def test_a_rollback_calling_two_services_is_wf108_as_a_step_would_be() -> None:
    body = """
        async def refund(ctx, output, error):
            requests.post("https://bank.example/refund", json=output)
            self.env.workflow("audit").create(params={"undone": ctx.step.name})

        await step.do("debit", lambda: 1, rollback=refund)
        """
    assert run_rules(body) == ["WF108"]


def test_io_in_a_lambda_passed_as_rollback_is_fine() -> None:
    body = 'await step.do("debit", lambda: 1, rollback=lambda c, o, e: self.env.X.create())'
    assert run_rules(body) == []


def test_a_rollback_changing_state_of_run_is_wf106() -> None:
    findings = lint_run(
        """
        undone = []

        def undo(ctx, output, error):
            undone.append(output)

        await step.do("debit", {"retries": {"limit": 1}}, lambda: 1, rollback=undo)
        """
    )
    assert rules(findings) == ["WF106"]
    assert "undone" in findings[0].message


def test_the_same_io_outside_any_step_is_still_wf103() -> None:
    # the rollback is a callback; the call after the step is not
    body = """
        def undo(ctx, output, error):
            requests.post("https://bank.example/refund")

        await step.do("debit", lambda: 1, rollback=undo)
        requests.post("https://bank.example/notify")
        """
    assert run_rules(body) == ["WF103"]
