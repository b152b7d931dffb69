"""Two runners on one message: SQS delivers a message more than once, sometimes at the same
time (the same MessageId, each delivery with its own receipt handle). The lease is fenced by the
delivery, so a copy delivered while the first runner is alive is turned away, and a later
delivery (a higher receive count: the earlier one gave the message back or died) takes over."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.entrypoints import runner
from lambda_workflows.local.embedded import LambdaContext, sqs_event
from tests.aws_faults import Faults

from .workflows_under_test import calls, count

# called once from inside step "one" (while its runner is busy), then cleared
_while_running: list[Callable[[], None]] = []


class Busy(WorkflowEntrypoint):
    """Two counted steps, a sleep, a third; step "one" runs the test's hook first."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        key = event.instance_id

        def work(name: str) -> str:
            if name == "one" and _while_running:
                _while_running.pop()()
            count(f"{key} {name}")
            return f"{name} done"

        a = await step.do("one", lambda: work("one"))
        b = await step.do("two", lambda: work("two"))
        await step.sleep("nap", "1 hour")
        c = await step.do("three", lambda: work("three"))
        return [a, b, c]


def _deliver_meanwhile(env: Any, message: dict[str, Any], answers: list[Any]) -> None:
    """A second RunnerFunction gets ``message`` (another receipt handle) while the first runs."""
    handler = runner.make_handler(env.aws.runtime)
    event = sqs_event([message], env.aws.settings.work_queue_arn)

    def second() -> None:
        answers.append(handler(event, LambdaContext()))

    def hook() -> None:
        thread = threading.Thread(target=second)  # its own event loop, as another Lambda's
        thread.start()
        thread.join()

    _while_running.append(hook)


def test_a_copy_delivered_while_the_first_runner_works_is_turned_away(aws_env: Any) -> None:
    # GIVEN an instance whose work message SQS delivers twice at once: the same MessageId and
    # receive count, two receipt handles; the copy arrives while step "one" runs
    calls.clear()
    env = aws_env({"busy": Busy})
    env.aws.queue_only()  # SQS's duplicate delivery (a direct invoke's: test_direct_creation)
    inst = env.create("busy", id="twice")
    (message,) = env.aws.receive(1)
    copy = {**message, "ReceiptHandle": message["ReceiptHandle"] + "-copy"}
    answers: list[Any] = []
    _deliver_meanwhile(env, copy, answers)
    faults = Faults.on(env.aws.runtime)  # counts the calls (injects nothing)
    # WHEN both runners handle it
    first = env.aws.invoke_runner([message])
    # THEN the copy was done at once (nothing to retry) and did not advance the instance:
    # every step ran once, one invocation took the lease, and the first runner carried on
    assert answers == [{"batchItemFailures": []}]
    assert first == {"batchItemFailures": []}
    assert not _while_running
    assert calls["twice one"] == 1
    assert calls["twice two"] == 1
    record = env.store.get(InstanceRef("busy", "twice"))
    assert record.invocations == 1
    assert record.status == "waiting"
    assert faults.count("dynamodb.PutItem") == len(inst.journal())  # each entry written once
    # AND the instance goes on as if it was delivered once
    env.clock.advance("1 hour")
    env.run_until_idle()
    assert inst.status().output == ["one done", "two done", "three done"]
    assert calls["twice three"] == 1
