"""Rules of Workflows: "Keep step return values under 1 MiB".

Keep what a step returns small (at most 1 MiB).

A step's result is stored, and one over 1 MiB fails the step. Large data (an API's whole
answer, a file) belongs in an object store: write it there inside the step and return a
small reference; a later step reads it back when it needs it.
"""

from __future__ import annotations

import json
from typing import Any

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep

DATASET_URL = "https://api.example.com/large-dataset"


def process_data(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A small summary of the dataset."""
    return {"rows": len(rows), "top_score": max((row["score"] for row in rows), default=None)}


class LargeResultsWorkflow(WorkflowEntrypoint):
    """Fetch a large dataset, keep it in the object store, pass a reference along."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # ✅ Good: store the large data in the object store and return a reference to it.
        async def fetch_and_store() -> dict[str, str]:
            response = self.env.DATASET_API.get(DATASET_URL)
            data = response.json()
            self.env.BUCKET.put("dataset-123", json.dumps(data))
            return {"key": "dataset-123"}

        data_ref = await step.do("fetch and store large dataset", fetch_and_store)

        # Read the data back in the step that needs it, and return only what is needed.
        async def process_dataset() -> dict[str, Any]:
            stored = self.env.BUCKET.get(data_ref["key"])
            return process_data(json.loads(stored))

        return await step.do("process dataset", process_dataset)


class BadLargeResultsWorkflow(WorkflowEntrypoint):
    """🔴 A step returns the whole dataset (a little over 1 MiB)."""

    async def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        # 🔴 Bad: the whole response body becomes the step's result and can exceed 1 MiB.
        async def fetch_large_dataset() -> Any:
            response = self.env.DATASET_API.get(DATASET_URL)
            return response.json()  # lambda-workflows: ignore[WF109]

        return await step.do("fetch large dataset", fetch_large_dataset)
