"""``@immutable`` (lambda_workflows.engine.immutable): the engine's records behave as the frozen,
slotted dataclasses they replaced, for every use the engine makes of them."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass

import pytest

from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.instances.transitions import KEEP, Change
from lambda_workflows.engine.model import (
    EntryKind,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    JournalEntry,
)


@immutable
class Point:
    """A test record."""

    x: int
    y: int = 0
    label: str | None = None


@dataclass(frozen=True, slots=True)
class DataPoint:
    """The dataclass Point stands for."""

    x: int
    y: int = 0
    label: str | None = None


def test_construction_defaults_and_errors_match_a_frozen_dataclass() -> None:
    assert Point(1) == Point(x=1, y=0, label=None)
    assert (Point(1, 2, "a").x, Point(1, 2, "a").y, Point(1, 2, "a").label) == (1, 2, "a")
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]


def test_fields_cannot_be_assigned_or_deleted_and_there_is_no_dict() -> None:
    point = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="'x'"):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="'y'"):
        del point.y  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.other = 1  # type: ignore[attr-defined]
    assert not hasattr(point, "__dict__")
    assert Point.__slots__ == ("x", "y", "label")


def test_equality_hash_and_repr_match_the_dataclass() -> None:
    assert Point(1, 2) == Point(1, 2)
    assert Point(1, 2) != Point(1, 3)
    assert Point(1, 2) != DataPoint(1, 2)  # another class is never equal
    assert hash(Point(1, 2, "a")) == hash(Point(1, 2, "a"))
    assert {Point(1): "a"}[Point(1)] == "a"
    assert repr(Point(1, 2, "a")) == repr(DataPoint(1, 2, "a")).replace("DataPoint", "Point")


def test_dataclass_functions_and_match_work() -> None:
    point = Point(1, 2)
    assert dataclasses.is_dataclass(point)
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y", "label"]
    assert dataclasses.replace(point, y=5) == Point(1, 5)
    assert dataclasses.asdict(point) == {"x": 1, "y": 2, "label": None}
    assert Point.__match_args__ == ("x", "y", "label")
    match point:
        case Point(1, y):
            assert y == 2
        case _:
            pytest.fail("a positional class pattern did not match")


def test_copy_deepcopy_and_pickle_give_equal_records() -> None:
    entry = JournalEntry("k", EntryKind.STEP, "s", 1, 1.0, result="1")
    for value in (Point(1, 2, "a"), InstanceRef("w", "i"), entry):
        assert copy.copy(value) == value
        assert copy.deepcopy(value) == value
        assert pickle.loads(pickle.dumps(value)) == value


def test_keyword_only_records_take_keywords_only() -> None:
    assert Change(status=InstanceStatus.RUNNING).status is InstanceStatus.RUNNING
    assert Change().output is KEEP
    with pytest.raises(TypeError, match="positional"):
        Change(InstanceStatus.RUNNING)  # type: ignore[misc]


def test_a_class_s_own_methods_are_kept() -> None:
    entry = JournalEntry("k", EntryKind.STEP, "s", 1, 1.0, result='"x"', sensitive=True)
    assert "[REDACTED]" in repr(entry)  # JournalEntry writes its own __repr__
    assert str(InstanceRef("w", "i")) == "w/i"


def test_replace_on_the_instance_record_builds_a_new_frozen_record() -> None:
    record = InstanceRecord("w", "i", InstanceStatus.QUEUED, "{}", 1.0)
    moved = dataclasses.replace(record, status=InstanceStatus.RUNNING, version=2)
    assert (moved.status, moved.version, record.status) == ("running", 2, "queued")


@pytest.mark.parametrize(
    "body",
    [
        "items: list[int] = dataclasses.field(default_factory=list)",
        "hidden: int = dataclasses.field(default=0, compare=False)",
        "x: int\n    def __post_init__(self) -> None: pass",
        "x: int\n    def __setattr__(self, name: str, value: object) -> None: pass",
    ],
)
def test_what_it_does_not_implement_is_refused_when_the_class_is_defined(body: str) -> None:
    source = f"class Refused:\n    {body}\n"
    namespace: dict[str, object] = {"dataclasses": dataclasses}
    exec(source, namespace)
    with pytest.raises(TypeError, match="@immutable Refused"):
        immutable(namespace["Refused"])  # type: ignore[call-overload]
