"""Histories in the export format, and the Replayer that checks code against them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from lambda_workflows import NonDeterminismError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from lambda_workflows.engine.instances.history import History, HistoryFormatError, dumps, history_of
from lambda_workflows.testing import ReplayDivergence, Replayer, StepCall, WorkflowTestEnv

calls: Counter[str] = Counter()


def _counted(name: str, value: Any) -> Any:
    def callback() -> Any:
        calls[name] += 1
        return value

    return callback


class Orders(WorkflowEntrypoint):
    """charge, a sleep, an approval wait, ship."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        card = await step.do("charge", {"sensitive": "output"}, _counted("charge", "tok-1"))
        await step.sleep("cool down", "1 hour")
        approval = await step.wait_for_event("approval", type="approved", timeout="1 day")
        shipped = await step.do("ship", _counted("ship", {"parcel": event.payload["order"]}))
        return {"card": card, "by": approval.payload["user"], "shipped": shipped}


class Reordered(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.sleep("cool down", "1 hour")
        await step.do("charge", _counted("charge", "tok-1"))


class Renamed(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("charge", _counted("charge", "tok-1"))
        await step.sleep("cool off", "1 hour")


class Shorter(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        await step.do("charge", _counted("charge", "tok-1"))
        return "done"


class Longer(Orders):
    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        output = await super().run(event, step)
        await step.do("notify", _counted("notify", True))
        return output


def _record(approve: bool) -> History:
    with WorkflowTestEnv({"orders": Orders}) as env:
        inst = env.create("orders", id="o-1", params={"order": 7})
        env.run_until_idle()
        if approve:
            inst.send_event(type="approved", payload={"user": "ana"})
            env.run_until_idle()
        return history_of(env.store.load(inst.ref))


@pytest.fixture(scope="module")
def finished() -> History:
    return _record(approve=True)


@pytest.fixture(scope="module")
def waiting() -> History:
    return _record(approve=False)


def test_export_format_round_trips_and_redacts_sensitive_results(finished: History) -> None:
    shown = json.loads(dumps(finished))
    assert (shown["format"], shown["format_version"]) == ("workflows-history", 1)
    assert (shown["workflow"], shown["id"], shown["workflow_version"]) == ("orders", "o-1", "1")
    assert shown["params"] == {"order": 7} and shown["status"] == "complete"
    by_name = {e["name"]: e for e in shown["entries"] if e["kind"] in ("step", "sleep")}
    assert by_name["charge"]["result"] == "[REDACTED]"
    assert by_name["ship"]["result"] == {"parcel": 7}
    assert [e["payload"] for e in shown["events"]] == [{"user": "ana"}]
    again = History.from_dict(shown)
    assert [(e.key, e.kind, e.position) for e in again.entries] == [
        (e.key, e.kind, e.position) for e in finished.entries
    ]


@pytest.mark.parametrize(
    "shown, says",
    [
        ({"entries": []}, 'expected an object with "format": "workflows-history"'),
        ({"format": "workflows-history", "format_version": 9}, "format_version 9"),
        ({"format": "workflows-history", "format_version": 1}, "malformed"),
    ],
)
def test_what_is_not_a_history_is_refused_clearly(shown: dict[str, Any], says: str) -> None:
    with pytest.raises(HistoryFormatError, match=says):
        History.from_dict(shown)


def test_the_recording_class_replays_clean_without_running_a_callback(
    finished: History, waiting: History
) -> None:
    calls.clear()
    for history in (finished, waiting):
        result = Replayer({"orders": Orders}).replay(history.to_dict())
        assert result.compatible and result.divergence is None, result.message
        assert (result.version, result.replayed_with) == ("1", "1")
    assert calls == Counter()


def test_a_call_past_the_end_of_an_unfinished_history_is_compatible(waiting: History) -> None:
    assert Replayer({"orders": Longer}).replay(waiting).compatible


def test_reordered_steps_diverge_at_the_first_moved_call(finished: History) -> None:
    result = Replayer({"orders": Reordered}).replay(finished)
    assert not result.compatible and result.divergence is not None
    assert result.divergence.position == 1
    assert result.divergence.recorded == StepCall("charge", "do")
    assert result.divergence.replayed == StepCall("cool down", "sleep")
    assert "reordered" in result.divergence.hint and "orders@1" in result.divergence.hint


def test_a_renamed_step_diverges_where_it_is_called(finished: History) -> None:
    divergence = Replayer({"orders": Renamed}).replay(finished).divergence
    assert divergence is not None and divergence.position == 2
    assert (divergence.recorded, divergence.replayed) == (
        StepCall("cool down", "sleep"),
        StepCall("cool off", "sleep"),
    )
    assert "renamed" in divergence.hint


def test_run_ending_before_recorded_steps_diverges(waiting: History) -> None:
    divergence = Replayer({"orders": Shorter}).replay(waiting).divergence
    assert divergence is not None and divergence.position == 2
    assert (divergence.recorded, divergence.replayed) == (StepCall("cool down", "sleep"), None)
    assert "run() returned before it" in divergence.hint


def test_a_call_past_the_end_of_a_finished_history_diverges(finished: History) -> None:
    divergence = Replayer({"orders": Longer}).replay(finished).divergence
    assert divergence is not None and divergence.position == 5
    assert (divergence.recorded, divergence.replayed) == (None, StepCall("notify", "do"))


def test_raise_on_divergence_raises_a_non_determinism_error(finished: History) -> None:
    with pytest.raises(NonDeterminismError, match=r"diverges at call #1") as raised:
        Replayer({"orders": Reordered}).replay(finished, raise_on_divergence=True)
    assert isinstance(raised.value, ReplayDivergence)
    assert raised.value.divergence is not None and raised.value.divergence.position == 1


def test_the_instance_version_class_replays_it(finished: History) -> None:
    class OrdersV2(Reordered):
        version = "2"

    result = Replayer({"orders": OrdersV2, "orders@1": Orders}).replay(finished)
    assert result.compatible and result.replayed_with == "1"
    assert Replayer({"orders": OrdersV2}).replay(finished).replayed_with == "2"


def test_files_and_directories_of_histories(
    tmp_path: Path, finished: History, waiting: History
) -> None:
    (tmp_path / "a.json").write_text(dumps(finished))
    (tmp_path / "b.json").write_text(dumps(waiting))
    one = Replayer({"orders": Orders}).replay(tmp_path / "a.json")
    assert not isinstance(one, list) and one.compatible and one.source == str(tmp_path / "a.json")
    results = Replayer({"orders": Shorter}).replay(str(tmp_path))
    assert isinstance(results, list)
    assert [(Path(r.source or "").name, r.compatible) for r in results] == [
        ("a.json", False),
        ("b.json", False),
    ]
    with pytest.raises(ReplayDivergence, match=r"a\.json"):
        Replayer({"orders": Shorter}).replay(tmp_path, raise_on_divergence=True)


def test_a_history_of_an_unknown_workflow_names_what_to_pass(finished: History) -> None:
    with pytest.raises(ValueError, match=r"Replayer\(\{'orders': Class\}\)"):
        Replayer({"billing": Orders}).replay(finished)
