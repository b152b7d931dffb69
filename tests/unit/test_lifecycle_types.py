"""Which lifecycle event each move of an instance publishes
(lambda_workflows.engine.instances.lifecycle),
and how events are grouped into PutEvents calls (lambda_workflows.aws.eventbridge)."""

from __future__ import annotations

import json

import pytest

from lambda_workflows.aws.eventbridge import MAX_ENTRIES, _rounds
from lambda_workflows.engine.instances.lifecycle import (
    TEXT_LIMIT,
    LifecycleEvent,
    LifecycleType,
    instance_changed,
    instance_changes,
    instance_event_type,
    step_recorded,
)
from lambda_workflows.engine.model import (
    EntryKind,
    ErrorInfo,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    JournalEntry,
    ParentRef,
)

S = InstanceStatus
T = LifecycleType


@pytest.mark.parametrize(
    ("before", "after", "published"),
    [
        (None, S.QUEUED, T.QUEUED),  # created
        (S.QUEUED, S.RUNNING, T.STARTED),
        (S.RUNNING, S.WAITING, T.WAITING),
        (S.WAITING, S.RUNNING, T.STARTED),  # woken: starts again (Cloudflare's "started")
        (S.WAITING, S.PAUSED, T.PAUSED),
        (S.QUEUED, S.PAUSED, T.PAUSED),
        (S.RUNNING, S.WAITING_FOR_PAUSE, None),  # asked, not yet in effect
        (S.WAITING_FOR_PAUSE, S.PAUSED, T.PAUSED),  # the runner stopped
        (S.WAITING_FOR_PAUSE, S.RUNNING, T.RESUMED),  # resumed before it stopped
        (S.PAUSED, S.QUEUED, T.RESUMED),
        (S.RUNNING, S.QUEUED, T.QUEUED),  # back in line for a concurrency slot
        (S.RUNNING, S.COMPLETE, T.COMPLETE),
        (S.RUNNING, S.ERRORED, T.ERRORED),
        (S.WAITING, S.TERMINATED, T.TERMINATED),
        (S.PAUSED, S.TERMINATED, T.TERMINATED),
        (S.RUNNING, S.RUNNING, None),  # a lease taken over, a yield
        (S.WAITING, S.WAITING, None),  # an event buffered
    ],
)
def test_each_move_publishes_the_event_named_after_what_it_means(
    before: InstanceStatus | None, after: InstanceStatus, published: LifecycleType | None
) -> None:
    assert instance_event_type(before, after) is published


@pytest.mark.parametrize("before", [S.COMPLETE, S.ERRORED, S.PAUSED, S.QUEUED, S.RUNNING])
def test_a_restart_is_queued_again_whatever_it_was(before: InstanceStatus) -> None:
    assert instance_event_type(before, S.QUEUED, restarted=True) is T.QUEUED


def record(status: InstanceStatus, version: int, **changes: object) -> InstanceRecord:
    fields: dict[str, object] = {"created_at": 1_700_000_000.25, "updated_at": 1_700_000_100.5}
    fields |= changes
    return InstanceRecord("orders", "o-1", status, "{}", version=version, **fields)  # type: ignore[arg-type]


def test_the_id_names_the_write_and_the_instances_creation() -> None:
    # GIVEN the same write seen twice, and the same version of a later instance with the id
    event = instance_changed(record(S.QUEUED, 2), record(S.RUNNING, 3))
    again = instance_changed(record(S.QUEUED, 2), record(S.RUNNING, 3))
    reborn = instance_changed(
        record(S.QUEUED, 2, created_at=1_800_000_000.0),
        record(S.RUNNING, 3, created_at=1_800_000_000.0),
    )
    assert event is not None and again is not None and reborn is not None
    # THEN the first two share an id, the third has its own
    assert event.id == again.id == "orders/o-1/1700000000250/v3"
    assert reborn.id != event.id
    assert event.detail["timestamp"] == "2023-11-14T22:15:00.500Z"


def test_an_errored_event_carries_the_error_cut_to_a_few_kb() -> None:
    error = ErrorInfo("ValueError", "x" * (TEXT_LIMIT * 10), "Traceback ...")
    event = instance_changed(record(S.RUNNING, 4), record(S.ERRORED, 5, error=error))
    assert event is not None
    assert event.detail["error"]["name"] == "ValueError"
    assert len(event.detail["error"]["message"]) == TEXT_LIMIT
    assert "traceback" not in event.detail["error"]
    assert len(json.dumps(event.detail)) < 2 * TEXT_LIMIT


def test_a_child_says_whose_it_is() -> None:
    parent = ParentRef("billing", "b-1", "charge child")
    event = instance_changed(None, record(S.QUEUED, 1, parent=parent))
    assert event is not None
    assert event.detail["parent"] == {"workflow": "billing", "id": "b-1", "step": "charge child"}
    assert event.detail["previous_status"] is None


def entry(kind: EntryKind, error: ErrorInfo | None = None) -> JournalEntry:
    return JournalEntry(key="charge#1", kind=kind, name="charge", count=1, at=5.0, error=error)


def test_only_a_steps_final_outcome_is_a_step_event() -> None:
    ref = InstanceRef("orders", "o-1")
    done = step_recorded(ref, 7, entry(EntryKind.STEP))
    failed = step_recorded(ref, 7, entry(EntryKind.STEP, ErrorInfo("E", "no")))
    assert done is not None and done.type is T.STEP_COMPLETED
    assert done.id == "orders/o-1/g7/charge#1"
    assert failed is not None and failed.type is T.STEP_FAILED
    assert failed.detail["error"] == {"name": "E", "message": "no"}
    for kind in (EntryKind.ATTEMPT, EntryKind.SLEEP, EntryKind.WAIT, EntryKind.ROLLBACK):
        assert step_recorded(ref, 7, entry(kind)) is None


def event(instance: str, n: int) -> LifecycleEvent:
    return LifecycleEvent(T.QUEUED, InstanceRef("w", instance), 0.0, {"id": f"{instance}/{n}"})


def test_a_round_holds_at_most_one_event_of_an_instance_and_keeps_the_order() -> None:
    events = [event("a", 1), event("b", 1), event("a", 2), event("c", 1), event("a", 3)]
    rounds = [(start, [e.id for e in found]) for start, found in _rounds(events)]
    assert rounds == [(0, ["a/1", "b/1"]), (2, ["a/2", "c/1"]), (4, ["a/3"])]


def test_a_round_holds_at_most_what_put_events_takes() -> None:
    events = [event(str(i), 1) for i in range(MAX_ENTRIES * 2 + 1)]
    assert [len(found) for _, found in _rounds(events)] == [MAX_ENTRIES, MAX_ENTRIES, 1]


def stream_record(view: str, status: str = "queued") -> dict[str, object]:
    image = {
        "pk": {"S": "I#orders#o-1"},
        "sk": {"S": "I"},
        "workflow": {"S": "orders"},
        "id": {"S": "o-1"},
        "status": {"S": status},
        "version": {"N": "1"},
        "created_at": {"N": "5"},
    }
    return {
        "eventName": "INSERT",
        "dynamodb": {
            "Keys": {"pk": image["pk"], "sk": image["sk"]},
            "NewImage": image,
            "SequenceNumber": "7",
            "StreamViewType": view,
        },
    }


def test_a_stream_without_both_images_is_a_configuration_error_that_says_what_to_set() -> None:
    from lambda_workflows.aws.table_stream import lifecycle_event
    from lambda_workflows.engine.errors import ConfigurationError

    assert lifecycle_event(stream_record("NEW_AND_OLD_IMAGES"), steps=False) is not None
    with pytest.raises(ConfigurationError, match="StreamViewType to NEW_AND_OLD_IMAGES"):
        lifecycle_event(stream_record("NEW_IMAGE"), steps=False)


def test_a_record_no_instance_wrote_is_skipped_and_the_others_published() -> None:
    from lambda_workflows.entrypoints.lifecycle import _events

    # GIVEN an instance item with a status this engine never writes, between two good ones
    records = [stream_record("NEW_AND_OLD_IMAGES")] * 3
    records[1] = stream_record("NEW_AND_OLD_IMAGES", status="exploded")
    # THEN it is left out, and the others are read
    assert [event.type for _, event in _events(records, steps=False)] == [T.QUEUED, T.QUEUED]


def test_a_pass_without_a_lease_is_started_then_where_it_left_the_instance() -> None:
    # GIVEN writes of a runner that took no lease (engine.lazy_lease): each counts an invocation
    woke = instance_changes(
        record(S.WAITING, 4, invocations=1), record(S.WAITING, 5, invocations=2)
    )
    ended = instance_changes(
        record(S.WAITING, 4, invocations=1), record(S.COMPLETE, 5, invocations=2)
    )
    # THEN each publishes instance.started (status running), then where it left the instance,
    # two ids of the one write
    assert [(e.type.value, e.detail["status"], e.detail["previous_status"]) for e in woke] == [
        ("instance.started", "running", "waiting"),
        ("instance.waiting", "waiting", "running"),
    ]
    assert [e.type.value for e in ended] == ["instance.started", "instance.complete"]
    assert len({e.id for e in woke}) == 2 and all(e.detail["version"] == 5 for e in woke)
    # a write that counted no invocation (an event buffered, a lease renewed) publishes nothing,
    # and a leased pass publishes its own two writes' events, one each
    assert instance_changes(record(S.WAITING, 4), record(S.WAITING, 5)) == []
    leased = instance_changes(
        record(S.WAITING, 4, invocations=1), record(S.RUNNING, 5, invocations=2)
    )
    assert [e.type.value for e in leased] == ["instance.started"]
    assert [e.type.value for e in instance_changes(record(S.RUNNING, 5), record(S.WAITING, 6))] == [
        "instance.waiting"
    ]
