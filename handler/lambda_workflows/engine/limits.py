"""Validation of names, ids and sizes (docs/semantics.md, "Limits"); every message says the fix."""

from __future__ import annotations

import re
from typing import Any

from .errors import InvalidInput, InvalidStepError

MAX_STEP_NAME = 256
MAX_ID = 100
MAX_WORKFLOW_NAME = 64
# Always apply with fullmatch: with match, "$" also matches before a trailing newline, so
# "abc\n" would pass. The anchors stay for pydantic, which searches its field patterns.
ID_PATTERN = re.compile(r"^[a-zA-Z0-9_][a-zA-Z0-9\-_]*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # exactly Unicode category Cc


def check_step_name(name: Any) -> str:
    """A valid step name, or InvalidStepError saying what is wrong."""
    if not isinstance(name, str):
        raise InvalidStepError(
            f"step name must be a string, not {type(name).__name__}; give every step a "
            "deterministic, human-readable name"
        )
    if not name:
        raise InvalidStepError("step name must not be empty")
    if len(name) > MAX_STEP_NAME:
        raise InvalidStepError(
            f"step name is {len(name)} characters, over the {MAX_STEP_NAME}-character limit: "
            f"{name[:40]!r}..."
        )
    if _CONTROL.search(name):
        raise InvalidStepError(f"step name {name!r} contains control characters; remove them")
    return name


def check_id(value: Any, *, what: str = "instance id") -> str:
    """A valid instance id or event type (≤ 100 chars, ``^[a-zA-Z0-9_][a-zA-Z0-9-_]*$``)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, not {type(value).__name__}")
    if not value or len(value) > MAX_ID:
        raise InvalidInput(f"{what} must be 1 to {MAX_ID} characters long, got {len(value)}")
    if not ID_PATTERN.fullmatch(value):
        raise InvalidInput(
            f"{what} {value!r} may only contain letters, digits, '-' and '_', and must not "
            "start with '-'"
        )
    return value


def check_event_type(value: Any) -> str:
    """A valid event type; raised as InvalidStepError when called from a workflow."""
    try:
        return check_id(value, what="event type")
    except InvalidInput as exc:
        raise InvalidStepError(str(exc)) from None


def check_workflow_name(value: Any) -> str:
    """A valid workflow name (≤ 64 chars, letters, digits, '-' and '_')."""
    if not isinstance(value, str) or not value or len(value) > MAX_WORKFLOW_NAME:
        raise InvalidInput(f"workflow name must be a string of 1 to {MAX_WORKFLOW_NAME} characters")
    if not ID_PATTERN.fullmatch(value):
        raise InvalidInput(f"workflow name {value!r} may only contain letters, digits, '-' and '_'")
    return value
