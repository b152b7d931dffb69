"""Child workflows: ``step.run_workflow`` returns the child's output or raises its error, the
child names its parent, the parent's timeline links the child, the child's end wakes the
parent (no polling), and terminating the parent terminates its children; on every backend."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lambda_workflows import NonRetryableError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.errors import InvalidStepError, StepFailedError
from lambda_workflows.engine.limits import ID_PATTERN, MAX_ID
from lambda_workflows.engine.model import InstanceRef
from lambda_workflows.engine.replay.child_steps import child_id
from lambda_workflows.testing import Replayer

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")


class Charge(WorkflowEntrypoint):
    """Charges ``amount``; declines when ``decline`` is set; waits for a capture if asked."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        if event.payload.get("hold"):
            await step.wait_for_event("capture", type="capture", timeout="1 hour")

        def charge() -> dict[str, Any]:
            if event.payload.get("decline"):
                raise NonRetryableError(f"card declined for {event.payload['amount']}")
            return {"charged": event.payload["amount"]}

        return await step.do("charge", charge)


class Order(WorkflowEntrypoint):
    """Runs a charge as a child; reports the child's failure instead of raising it."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        try:
            receipt = await step.run_workflow(
                "pay", workflow="charge", params=event.payload, id=event.payload.get("child_id")
            )
        except StepFailedError as exc:
            return {"failed": exc.error_name, "message": exc.message, "step": exc.step_name}
        return {"receipt": receipt}


def test_the_child_output_is_the_step_result_and_the_wake_up_is_the_childs_end(
    make_env: EnvFactory,
) -> None:
    env = make_env({"order": Order, "charge": Charge})
    order = env.create("order", id="order-1", params={"amount": 12})
    env.run_until_idle()
    status = order.status()
    assert status.status == "complete", status.error
    assert status.output == {"receipt": {"charged": 12}}
    # three invocations in all: the parent's start, the child's run, the parent's wake-up by
    # the child's end; nothing polled the child, and the parent has no wake-up pending but
    # its step's deadline, a year away
    assert env.invocations == 3
    # the parent's timeline row links the child; the child names its parent and step
    (row,) = status.steps
    assert (row.type, row.status, row.output) == ("runWorkflow", "complete", {"charged": 12})
    assert row.child is not None and row.child["workflow"] == "charge"
    child = env.get("charge", row.child["id"]).status()
    assert child.status == "complete"
    assert child.parent == {"workflow": "order", "id": "order-1", "step": "pay"}
    assert child.parent is not None and (child.parent.workflow, child.parent.step) == (
        "order",
        "pay",
    )
    assert child.to_dict()["parent"] == {"workflow": "order", "id": "order-1", "step": "pay"}
    assert status.to_dict()["steps"][0]["child"] == {"workflow": "charge", "id": child.id}


def test_the_childs_error_fails_the_step_with_its_name_and_message(make_env: EnvFactory) -> None:
    env = make_env({"order": Order, "charge": Charge})
    order = env.create("order", id="order-2", params={"amount": 7, "decline": True})
    env.run_until_idle()
    status = order.status()
    assert status.status == "complete", status.error
    assert status.output == {
        "failed": "NonRetryableError",
        "message": "card declined for 7",
        "step": "pay",
    }
    (row,) = status.steps
    assert row.status == "errored"
    assert row.error is not None and row.error.message == "card declined for 7"


def test_a_terminated_child_fails_the_step_as_terminated(make_env: EnvFactory) -> None:
    env = make_env({"order": Order, "charge": Charge})
    order = env.create("order", id="order-3", params={"amount": 1, "hold": True})
    env.run_until_idle()
    child_ref = order.status().steps[0].child
    assert child_ref is not None
    child = env.get("charge", child_ref["id"])
    assert child.status().status == "waiting"
    child.terminate()
    env.run_until_idle()
    assert order.status().output == {
        "failed": "Terminated",
        "message": f"child workflow charge instance {child.id!r} was terminated",
        "step": "pay",
    }


def test_terminating_the_parent_terminates_its_running_children(make_env: EnvFactory) -> None:
    env = make_env({"order": Order, "charge": Charge})
    order = env.create("order", id="order-4", params={"amount": 1, "hold": True})
    env.run_until_idle()
    child_ref = order.status().steps[0].child
    assert child_ref is not None
    child = env.get("charge", child_ref["id"])
    order.terminate()
    env.run_until_idle()
    assert order.status().status == "terminated"
    assert child.status().status == "terminated"


def test_deleting_a_waiting_child_fails_its_parents_step(make_env: EnvFactory) -> None:
    env = make_env({"order": Order, "charge": Charge})
    order = env.create("order", id="order-7", params={"amount": 1, "hold": True})
    env.run_until_idle()
    child_ref = order.status().steps[0].child
    assert child_ref is not None
    env.get("charge", child_ref["id"]).delete()
    env.run_until_idle()
    assert order.status().output["failed"] == "Terminated"


def test_a_child_that_ends_while_the_parent_is_paused_wakes_it_on_resume(
    make_env: EnvFactory,
) -> None:
    env = make_env({"order": Order, "charge": Charge})
    order = env.create("order", id="order-5", params={"amount": 3, "hold": True})
    env.run_until_idle()
    child_ref = order.status().steps[0].child
    assert child_ref is not None
    order.pause()
    env.get("charge", child_ref["id"]).send_event(type="capture")
    env.run_until_idle()
    assert order.status().status == "paused"  # the answer waits in its mailbox
    order.resume()
    env.run_until_idle()
    assert order.status().output == {"receipt": {"charged": 3}}


def test_an_id_given_to_another_instance_fails_the_step(make_env: EnvFactory) -> None:
    env = make_env({"order": Order, "charge": Charge})
    env.create("charge", id="taken", params={"amount": 2})
    order = env.create("order", id="order-6", params={"amount": 2, "child_id": "taken"})
    env.run_until_idle()
    output = order.status().output
    assert output["failed"] == "InstanceAlreadyExists"
    assert (
        "'taken' of 'charge' already exists and was not started by this step" in (output["message"])
    )


def test_a_restarted_parent_with_an_explicit_id_gets_its_finished_childs_output_again(
    make_env: EnvFactory,
) -> None:
    # GIVEN a parent whose child (an explicit id) completed
    env = make_env({"order": Order, "charge": Charge})
    order = env.create("order", id="order-8", params={"amount": 4, "child_id": "c-8"})
    env.run_until_idle()
    child = env.get("charge", "c-8")
    ran = child.status().steps[0].start
    # WHEN the parent restarts and its step reaches the same id
    order.restart()
    env.run_until_idle()
    # THEN it waits for that child again, which answers at once: no second child, no rerun
    assert order.status().output == {"receipt": {"charged": 4}}
    assert [r.id for r in env.workflow("charge").list().records] == ["c-8"]
    assert child.status().steps[0].start == ran


def test_the_id_of_a_deleted_child_starts_a_new_child(make_env: EnvFactory) -> None:
    # GIVEN a parent's child (an explicit id) that completed and was deleted
    env = make_env({"order": Order, "charge": Charge})
    order = env.create("order", id="order-9", params={"amount": 5, "child_id": "c-9"})
    env.run_until_idle()
    env.get("charge", "c-9").delete()
    # WHEN the parent restarts and its step reaches that id again
    order.restart()
    env.run_until_idle()
    # THEN the id is free: a new child runs under it and answers
    assert order.status().output == {"receipt": {"charged": 5}}
    assert env.get("charge", "c-9").status().status == "complete"


class Unknown(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.run_workflow("pay", workflow="nowhere")


def test_an_unregistered_child_workflow_fails_the_step_naming_the_registered_ones(
    make_env: EnvFactory,
) -> None:
    env = make_env({"unknown": Unknown, "charge": Charge})
    inst = env.create("unknown", id="u-1")
    env.run_until_idle()
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None
    assert "no workflow is registered as 'nowhere' (registered: charge, unknown)" in (
        status.error.message
    )


def test_the_derived_child_id_is_deterministic_valid_and_short() -> None:
    parent = InstanceRef("order", "o" * 100)
    made = child_id(parent, 7, "pay\x1f1", "pay for it!")
    assert made == child_id(parent, 7, "pay\x1f1", "pay for it!")
    assert ID_PATTERN.fullmatch(made) and len(made) <= MAX_ID
    assert made != child_id(parent, 8, "pay\x1f1", "pay for it!")  # a restart: a new child
    assert made != child_id(parent, 7, "pay\x1f2", "pay for it!")  # the second call
    assert child_id(InstanceRef("order", "o-1"), 1, "pay\x1f1", "pay").startswith("o-1-pay-")


class BadCall(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        try:
            step.run_workflow("pay", workflow="no/slash")
        except InvalidStepError as exc:
            return str(exc)
        return "accepted"


def test_a_bad_workflow_name_is_refused_where_it_is_written(make_env: EnvFactory) -> None:
    env = make_env({"bad": BadCall})
    inst = env.create("bad", id="b-1")
    env.run_until_idle()
    assert "step.run_workflow('pay')" in inst.status().output
    assert "workflow name 'no/slash'" in inst.status().output


class OrderRenamed(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.run_workflow("charge it", workflow="charge", params=event.payload)


def test_histories_with_a_child_step_replay_and_a_renamed_one_diverges(
    make_env: EnvFactory,
) -> None:
    env = make_env({"order": Order, "charge": Charge})
    waiting = env.create("order", id="order-8", params={"amount": 1, "hold": True})
    done = env.create("order", id="order-9", params={"amount": 2})
    env.run_until_idle()
    for inst in (waiting, done):
        history = env.service.history(InstanceRef("order", inst.id))
        assert Replayer({"order": Order}).replay(history).compatible
        renamed = Replayer({"order": OrderRenamed}).replay(history)
        assert not renamed.compatible
        assert "run_workflow" in renamed.message


class Split(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        first, second = await asyncio.gather(
            step.run_workflow("pay a", workflow="charge", params={"amount": 1}),
            step.run_workflow("pay b", workflow="charge", params={"amount": 2}),
        )
        return [first, second]


def test_children_run_side_by_side_and_each_answers_its_own_step(make_env: EnvFactory) -> None:
    env = make_env({"split": Split, "charge": Charge})
    inst = env.create("split", id="s-1")
    env.run_until_idle()
    status = inst.status()
    assert status.output == [{"charged": 1}, {"charged": 2}]
    assert len({row.child["id"] for row in status.steps if row.child}) == 2
    # the parent's start, each child, and the parent once per child's end (the second one
    # finds it complete): 5, and no more
    assert env.invocations == 5


class OneAtATime(WorkflowEntrypoint):
    concurrency = 1

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await step.do("charge", lambda: event.payload["n"])


class Fanout(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        return await asyncio.gather(
            *(step.run_workflow(f"part {n}", workflow="solo", params={"n": n}) for n in range(3))
        )


def test_children_of_a_workflow_with_a_concurrency_limit_get_in_line_for_a_slot(
    make_env: EnvFactory,
) -> None:
    env = make_env({"fanout": Fanout, "solo": OneAtATime})
    env.create("fanout", id="f-1")
    env.run_once("fanout", "f-1")  # the parent's first pass creates its three children
    parent = env.get("fanout", "f-1")
    children = [env.get("solo", row.child["id"]) for row in parent.status().steps if row.child]
    assert len(children) == 3
    for child in children:  # created as the API creates them: in line, waiting for a slot
        status = child.status()
        assert status.status == "queued"
        assert status.status_reason is not None and "slot" in status.status_reason
    env.run_until_idle()
    assert parent.status().output == [0, 1, 2]


class OrderThenShip(WorkflowEntrypoint):
    """Runs a charge as a child, then sleeps (so a replay reads the step back), then ships."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        try:
            receipt = await step.run_workflow("pay", workflow="charge", params={"amount": 5})
        except StepFailedError as exc:
            receipt = {"failed": exc.error_name, "message": exc.message}
        await step.sleep("settle", "1 hour")
        return {"receipt": receipt}


def test_a_mocked_result_stands_in_for_the_child_and_no_child_starts(
    make_env: EnvFactory,
) -> None:
    # GIVEN a parent whose run_workflow step a test mocked
    env = make_env({"order": OrderThenShip, "charge": Charge})
    env.mock_step_result("o-1", "pay", {"charged": 99}, workflow="order")
    order = env.create("order", id="o-1")
    # WHEN it runs (and replays the step after its sleep)
    env.run_until_idle()
    # THEN run() got the mocked result on both passes, and no child was created
    status = order.status()
    assert status.status == "complete", status.error
    assert status.output == {"receipt": {"charged": 99}}
    assert env.workflow("charge").list().records == []
    pay = status.steps[0]
    assert (pay.name, pay.type, pay.status, pay.output, pay.child) == (
        "pay",
        "runWorkflow",
        "complete",
        {"charged": 99},
        None,
    )


def test_a_mocked_error_or_timeout_fails_the_step_as_a_childs_failure_would(
    make_env: EnvFactory,
) -> None:
    env = make_env({"order": OrderThenShip, "charge": Charge})
    env.mock_step_error("o-2", "pay", ConnectionError("bank down"), workflow="order")
    env.force_step_timeout("o-3", "pay", workflow="order")
    failed, timed_out = env.create("order", id="o-2"), env.create("order", id="o-3")
    env.run_until_idle()
    assert failed.status().output == {
        "receipt": {"failed": "ConnectionError", "message": "bank down"}
    }
    receipt = timed_out.status().output["receipt"]
    assert receipt["failed"] == "WorkflowTimeoutError" and "'pay'" in receipt["message"]
    assert env.workflow("charge").list().records == []
    assert failed.status().steps[0].status == "errored"


def test_a_run_workflow_step_without_a_mock_still_starts_its_child(make_env: EnvFactory) -> None:
    env = make_env({"order": OrderThenShip, "charge": Charge})
    env.mock_step_result("other", "pay", {"charged": 1}, workflow="order")  # another instance
    order = env.create("order", id="o-4")
    env.run_until_idle()
    assert order.status().output == {"receipt": {"charged": 5}}
    assert len(env.workflow("charge").list().records) == 1
