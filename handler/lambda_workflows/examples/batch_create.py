"""Rules of Workflows: "Batch multiple Workflow invocations".

Start many instances with one ``create_batch`` call.

Creating instances one by one makes one request each and runs into the creation rate limit
sooner; ``create_batch`` takes up to 100 at a time (ids that already exist are skipped).

Like :mod:`lambda_workflows.examples.unique_instance_ids`, this is code that starts workflows.
"""

from __future__ import annotations

from typing import Any

from ._fakes import WorkflowClient

INSTANCES: list[dict[str, Any]] = [
    {"id": "user1", "params": {"name": "John"}},
    {"id": "user2", "params": {"name": "Jane"}},
    {"id": "user3", "params": {"name": "Alice"}},
    {"id": "user4", "params": {"name": "Bob"}},
]


def create_all(my_workflow: WorkflowClient) -> Any:
    """✅ One request for all of them."""
    # ✅ Good: one batched call; better throughput, far from the rate limit.
    return my_workflow.create_batch(INSTANCES)


def bad_create_all(my_workflow: WorkflowClient) -> list[str]:
    """🔴 One request per instance."""
    created: list[str] = []
    # 🔴 Bad: one call per instance, which hits the creation rate limit sooner.
    for instance in INSTANCES:
        handle = my_workflow.create(  # lambda-workflows: ignore[WF110]
            id=instance["id"], params=instance["params"]
        )
        created.append(handle.id)
    return created
