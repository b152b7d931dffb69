"""The HTTP API's request models: the bodies its routes take (see :mod:`.api_models`).

Each refuses unknown keys, so a typo ("param") is an error, not a no-op. The rules that need the
registry or the store (is the workflow registered, is the id taken, is the batch free of duplicates)
stay in :class:`~lambda_workflows.engine.instances.service.InstanceService`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from lambda_workflows.engine.instances.batch_forms import MAX_BATCH
from lambda_workflows.engine.instances.deletion import MAX_DELETE_BATCH
from lambda_workflows.engine.limits import ID_PATTERN, MAX_ID, MAX_STEP_NAME

# Any JSON value, spelled out rather than ``Any`` so that the resolver passes a JSON array
# through whole (for a field it does not see as a sequence, it validates the first item only)
JsonValue = list[Any] | dict[str, Any] | str | int | float | bool | None

_ID = ID_PATTERN.pattern
_ID_HELP = f"1 to {MAX_ID} letters, digits, '-' or '_', not starting with '-'"


class WireModel(BaseModel):
    """A wire model whose validator is built on first use, not when this module is imported.

    A request builds the validators of its own route's models only: a cold start that serves
    ``GET …/instances/{id}`` never builds the batch or status-change models (building them all
    was about half of this module's import time).
    """

    model_config = ConfigDict(defer_build=True)


class _Request(WireModel):
    """Request bodies refuse unknown keys, so a typo ("param") is an error, not a no-op."""

    model_config = ConfigDict(extra="forbid")


# --- requests -------------------------------------------------------------------------------


class NewInstanceBody(_Request):
    """One instance to create: an optional id (generated when omitted) and its params."""

    instance_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ID,
        pattern=_ID,
        description=f"Unique forever within the workflow; {_ID_HELP}. Omit to get a UUID.",
    )
    id: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ID,
        pattern=_ID,
        description="Same as instance_id (give one or the other).",
    )
    params: Any = Field(
        default=None,
        description=(
            "Any JSON, at most 1 MiB encoded; the workflow's event.payload ({} when omitted or "
            "null)."
        ),
    )

    @model_validator(mode="after")
    def _one_id(self) -> NewInstanceBody:
        if self.instance_id is not None and self.id is not None:
            raise ValueError("give either instance_id or id, not both")
        return self

    @property
    def requested_id(self) -> str | None:
        """The id asked for, under either key (None: generate one)."""
        return self.instance_id if self.instance_id is not None else self.id


BATCH_LIST: TypeAdapter[list[dict[str, Any]]] = TypeAdapter(
    Annotated[list[dict[str, Any]], Field(max_length=MAX_BATCH)],
    config=ConfigDict(defer_build=True),
)
"""The list form of a batch create's body: at most 100 objects (each checked by the service,
which reports a bad one in ``errors`` rather than refusing the batch)."""

_NEW_INSTANCE = {"$ref": "#/components/schemas/NewInstanceBody"}
_BATCH_FORMS: dict[str, Any] = {
    "oneOf": [
        {"type": "array", "maxItems": MAX_BATCH, "items": _NEW_INSTANCE},
        {
            "type": "object",
            "title": "BatchCount",
            "description": "count instances with generated ids, all with params.",
            "properties": {
                "count": {"type": "integer", "minimum": 1, "maximum": MAX_BATCH},
                "params": {"description": "Any JSON, at most 1 MiB encoded; {} when omitted."},
            },
            "required": ["count"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "title": "BatchInstances",
            "description": "The same as the list form.",
            "properties": {
                "instances": {"type": "array", "maxItems": MAX_BATCH, "items": _NEW_INSTANCE}
            },
            "required": ["instances"],
            "additionalProperties": False,
        },
    ]
}


def batch_body_schema(schema: dict[str, Any]) -> None:
    """The batch body's schema in the document: its three forms (Cloudflare's createBatch)."""
    description = schema.get("description")
    schema.clear()
    schema.update(_BATCH_FORMS)
    if description is not None:
        schema["description"] = description


class FromStep(_Request):
    """Which recorded step a restart starts from."""

    name: str = Field(min_length=1, max_length=MAX_STEP_NAME, description="The step's name.")
    count: int = Field(
        default=1,
        ge=1,
        strict=True,
        description="Its occurrence: 1 for the first call with this name (ctx.step.count).",
    )
    type: Literal["do", "sleep", "waitForEvent", "runWorkflow"] | None = Field(
        default=None, description="Its type; omit to match any."
    )

    def selector(self) -> dict[str, object]:
        """What ``InstanceService.restart`` takes as ``from_step``."""
        return {"name": self.name, "count": self.count, "type": self.type}


class DeleteBatchBody(_Request):
    """The instances to delete."""

    ids: list[str] = Field(
        max_length=MAX_DELETE_BATCH,
        description=(
            "At most 100 instance ids. Each is answered in deleted or in errors; an id given "
            "twice is deleted once and answered at each position."
        ),
    )


class StatusChange(_Request):
    """What to do with an instance."""

    status: Literal["pause", "resume", "terminate", "restart"] = Field(
        description=(
            "pause (at the next step boundary), resume, terminate (for good) or restart "
            "(from the top, same id and params)"
        )
    )
    from_step: FromStep | None = Field(
        default=None,
        description=(
            "With restart only: restart from this recorded step. The results recorded before "
            "it are kept (their callbacks do not run again); it and every step after it run "
            "again. A step that is not recorded is a 400 naming the recorded steps."
        ),
    )
    rollback: bool = Field(
        default=False,
        strict=True,  # true or false: "yes" or 1 is a typo to report, not a terminate
        description=(
            "With terminate only: run the rollbacks of the steps the instance started (newest "
            "first) before it becomes terminated; it is running meanwhile."
        ),
    )

    @model_validator(mode="after")
    def _from_step_with_restart(self) -> StatusChange:
        if self.from_step is not None and self.status != "restart":
            raise ValueError(
                f"from_step applies to restart only; send {{'status': 'restart', 'from_step': "
                f"{{'name': ...}}}}, or leave from_step out to {self.status}"
            )
        return self

    @model_validator(mode="after")
    def _rollback_with_terminate(self) -> StatusChange:
        if self.rollback and self.status != "terminate":
            raise ValueError(
                f"rollback applies to terminate only; send {{'status': 'terminate', "
                f"'rollback': true}}, or leave rollback out to {self.status}"
            )
        return self
