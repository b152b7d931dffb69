"""Rules of Workflows: "Instance IDs are unique".

An instance id must never be needed again.

An id names one instance for good: creating a second instance with a taken id fails. A user
or customer id is a poor choice, since the same user will start more instances later. Use a
transaction, order or task id, or a composite of the user id and a random suffix (recorded
somewhere, so you can list a user's instances).

These are the functions that *start* workflows (an HTTP handler in Cloudflare's example),
not workflows.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from ._fakes import InMemoryKV, WorkflowClient


@dataclass(frozen=True)
class SignupRequest:
    """What the handler receives: who is asking, and the workflow's parameters."""

    user_id: str
    params: dict[str, Any] = field(default_factory=dict)


def get_user_id(request: SignupRequest) -> str:
    """The id of the user who made the request."""
    return request.user_id


def start_for_user(
    request: SignupRequest,
    my_workflow: WorkflowClient,
    instances_db: InMemoryKV,
    transaction_id: str | None = None,
) -> dict[str, Any]:
    """✅ Start an instance under an id that no later instance will want."""
    # ✅ Good: an id that is unique by construction. A transaction, order or task id is one;
    # otherwise compose one from the user id and a random suffix, and record it so that the
    # user's instances can be found later.
    user_id = get_user_id(request)
    instance_id = transaction_id or f"{user_id}-{uuid.uuid4().hex[:6]}"
    instances_db.put(instance_id, user_id)
    good_instance = my_workflow.create(id=instance_id, params=request.params)
    return {"id": good_instance.id, "details": good_instance.status()}


def bad_start_for_user(request: SignupRequest, my_workflow: WorkflowClient) -> dict[str, Any]:
    """🔴 Start an instance under the user's id."""
    # 🔴 Bad: the user id is taken as soon as the user's first instance exists, so the
    # user's next request cannot start one.
    user_id = get_user_id(request)
    bad_instance = my_workflow.create(
        id=user_id,  # lambda-workflows: ignore[WF111]
        params=request.params,
    )
    return {"id": bad_instance.id, "details": bad_instance.status()}
