"""WF103: I/O and instance creation in run() outside a step."""

from __future__ import annotations

import pytest

from .snippets import body_line, lint_module, lint_run, rules, run_rules


def test_creating_an_instance_outside_a_step_is_wf103() -> None:
    # Cloudflare's 🔴: `await this.env.ANOTHER_WORKFLOW.create()` in run().
    findings = lint_run('bad = self.env.workflow("another").create()')
    assert rules(findings) == ["WF103"]
    assert "creates workflow instances" in findings[0].message


@pytest.mark.parametrize(
    "statement",
    [
        "self.env.ANOTHER_WORKFLOW.create()",
        'self.env.workflow("x").create_batch([{"id": "a"}])',
        'other = self.env.workflow("x")\nother.create(id="a")',
        'instance = self.env.workflow("x").get("a")\ninstance.terminate()',
    ],
)
def test_workflow_clients_outside_a_step_are_wf103(statement: str) -> None:
    assert run_rules(statement)[-1:] == ["WF103"]


def test_creating_an_instance_inside_a_step_is_fine() -> None:
    assert (
        run_rules(
            """
            def create_instance():
                return self.env.workflow("another").create().id

            good = await step.do("good step that returns state", create_instance)
            """
        )
        == []
    )


@pytest.mark.parametrize(
    "statement",
    [
        'requests.get("https://example.com")',
        'httpx.post("https://example.com", json={})',
        's3 = boto3.client("s3")',
        'table = boto3.resource("dynamodb").Table("t")',
    ],
)
def test_aws_and_http_calls_outside_a_step_are_wf103(statement: str) -> None:
    assert "WF103" in run_rules(statement)


def test_calls_on_a_boto3_client_made_elsewhere_are_wf103() -> None:
    source = """
        import boto3
        from lambda_workflows import WorkflowEntrypoint

        S3 = boto3.client("s3")

        class W(WorkflowEntrypoint):
            def __init__(self, env=None):
                super().__init__(env)
                self.queue = boto3.client("sqs")

            async def run(self, event, step):
                S3.put_object(Bucket="b", Key="k", Body=b"")
                self.queue.send_message(QueueUrl="q", MessageBody="m")
                await step.do("upload", lambda: S3.put_object(Bucket="b", Key="k", Body=b""))
        """
    assert rules(lint_module(source)) == ["WF103", "WF103"]


def test_an_http_client_used_outside_a_step_is_wf103() -> None:
    findings = lint_run(
        """
        async with httpx.AsyncClient() as client:
            answer = await client.get("/status")
        """
    )
    assert rules(findings) == ["WF103"]
    assert body_line(findings) == 2


def test_a_pure_constructor_outside_a_step_is_fine() -> None:
    # Cloudflare's ✅: `const db = createDBConnection(this.env.DB_URL, this.env.DB_TOKEN)`.
    assert (
        run_rules(
            """
            db = create_db_connection(self.env.DB_URL, self.env.DB_TOKEN)
            session = requests.Session()
            limit = self.env.get("LIMIT", 10)
            """
        )
        == []
    )


def test_io_inside_a_step_is_fine() -> None:
    assert (
        run_rules(
            """
            async def fetch():
                return requests.get("https://example.com").status_code

            await step.do("fetch", fetch)
            """
        )
        == []
    )
