"""Each answer shape is declared once, by its model: the direct path's dumps are generated from it.

The direct path (``entrypoints/_api_wire.py``) dumps answers without pydantic, from a table of
the answer models' fields (``_api_wire_fields.py``) that ``_api_wire_gen.py`` generates from the
models. Here: the table in the repository is the one the models generate (so a field added to a
model, or changed, fails until it is generated anew), the dump of every answer model is its
model's dump for generated answers, and what the table cannot say is refused when generating.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, computed_field, field_serializer
from pydantic_core import PydanticUndefined

from lambda_workflows.entrypoints import _api_answers
from lambda_workflows.entrypoints import _api_wire as wire
from lambda_workflows.entrypoints import _api_wire_gen as gen
from lambda_workflows.entrypoints._api_answers import StepView
from lambda_workflows.entrypoints._api_routes import ROUTES
from lambda_workflows.entrypoints._api_wire import absent_when_none
from lambda_workflows.entrypoints._api_wire_fields import FIELDS


def test_the_table_is_the_one_the_answer_models_generate() -> None:
    generated = gen.render(*gen.derive(gen.answer_models()))
    assert gen.TARGET.read_text() == generated, (
        f"an answer model changed: run `.venv/bin/{gen.COMMAND}` and commit the table"
    )


def test_each_route_answers_with_a_shape_of_the_table() -> None:
    assert set(wire.SHAPES) == {route.answer for route in ROUTES}
    assert set(wire.SHAPES) <= set(FIELDS)


def test_a_field_added_to_a_model_is_in_its_generated_rows() -> None:
    class Wider(StepView):
        queue: str | None = Field(default=None, exclude_if=absent_when_none)

    fields, _ = gen.derive([Wider])
    assert fields["Wider"][:-1] == FIELDS["StepView"]
    assert fields["Wider"][-1] == ("queue", None, "", "none")
    assert fields != gen.derive([StepView])[0]


# --- every dump is its model's dump ---------------------------------------------------------

# JSON as the engine stores it: no NaN or Infinity (its codec refuses them)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | FINITE | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


def answers(annotation: Any) -> st.SearchStrategy[Any]:
    """Values of ``annotation``, as the service's dicts hold them (a float may be an int)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([answers(arg) for arg in args])
    if origin is list:
        return st.lists(answers(args[0]), max_size=2)
    if origin is dict:
        return st.dictionaries(st.text(max_size=3), answers(args[1]), max_size=2)
    if origin is Literal:
        return st.sampled_from(args)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_answers(annotation)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return st.sampled_from([str(member) for member in annotation])
    simple: dict[Any, st.SearchStrategy[Any]] = {
        type(None): st.none(),
        str: st.text(max_size=4),
        int: st.integers(),
        bool: st.booleans(),
        float: st.integers() | FINITE,
        Any: JSON,
    }
    return simple[annotation]


def model_answers(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    """A dict the model validates: its required fields, any of the others, and (when it keeps
    them) keys it does not declare, in any order."""
    required = {name: answers(f.annotation) for name, f in model.model_fields.items() if _needs(f)}
    optional = {n: answers(f.annotation) for n, f in model.model_fields.items() if not _needs(f)}
    found = st.fixed_dictionaries(required, optional=optional)
    if model.model_config.get("extra") == "allow":
        undeclared = st.dictionaries(st.sampled_from(["zz", "aa", "step"]), JSON, max_size=2)
        found = st.builds(lambda a, b: {**b, **a}, found, undeclared)
    return found.flatmap(lambda d: st.permutations(list(d.items())).map(dict))


def _needs(field: Any) -> bool:
    return field.default is PydanticUndefined and field.default_factory is None


def dumped_by_model(model: type[BaseModel], answer: dict[str, Any]) -> str:
    return json.dumps(model.model_validate(answer).model_dump(mode="json"))


MODELS = gen.answer_models()


@pytest.mark.parametrize("model", MODELS, ids=[m.__name__ for m in MODELS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_answer_dumps_as_its_model_dumps_it(model: type[BaseModel], data: Any) -> None:
    answer = data.draw(model_answers(model))
    assert json.dumps(wire.SHAPES[model.__name__](answer)) == dumped_by_model(model, answer)


# --- what the table cannot say is refused ---------------------------------------------------


class Aliased(BaseModel):
    step_name: str = Field(alias="stepName")


class Serialized(BaseModel):
    at: str

    @field_serializer("at")
    def _at(self, at: str) -> str:
        return at.upper()


class Computed(BaseModel):
    a: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def b(self) -> int:
        return self.a + 1


class OwnRule(BaseModel):
    cursor: str | None = Field(default=None, exclude_if=lambda cursor: cursor == "")


class Unknown(BaseModel):
    at: bytes


class Configured(BaseModel):
    model_config = ConfigDict(serialize_by_alias=True)
    a: int


@pytest.mark.parametrize(
    ("model", "says"),
    [
        (Aliased, "alias"),
        (Serialized, "serializer"),
        (Computed, "computed field"),
        (OwnRule, "OMITTED_WHEN"),
        (Unknown, "does not know"),
        (Configured, "serialize_by_alias"),
    ],
)
def test_what_the_direct_path_cannot_dump_is_refused(model: type[BaseModel], says: str) -> None:
    with pytest.raises(gen.Unsupported, match=says):
        gen.derive([model])


def test_the_direct_path_omits_a_field_by_the_very_rule_its_model_declares() -> None:
    rules = {
        f"{model}.{name}": wire.OMITTED_WHEN[omitted]
        for model, rows in FIELDS.items()
        for name, _, _, omitted in rows
        if omitted
    }
    declared = {
        f"{model}.{name}": field.exclude_if
        for model in FIELDS
        for name, field in getattr(_api_answers, model).model_fields.items()
        if field.exclude_if is not None
    }
    assert rules == declared
    assert "StepView.attempts_omitted" in rules and "InstanceDetails.steps_cursor" in rules
