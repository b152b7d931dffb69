"""Rules of Workflows: "Keep step return values under 1 MiB".

Keep what a step returns small (at most 1 MiB).

✅ ``LargeResultsWorkflow``: the dataset goes to the object store and the step returns a small
reference; a later step reads it back, also after a crash between the two.
🔴 ``BadLargeResultsWorkflow``: the step returns the whole dataset (about 1.2 MiB); the step
fails at once with ``ResultTooLarge`` (not retried: it would fail the same way every time).
"""

from __future__ import annotations

import json
from typing import Any

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.engine.codec import MAX_VALUE_BYTES
from lambda_workflows.examples._fakes import DatasetApi, example_env
from lambda_workflows.examples.large_results import (
    DATASET_URL,
    BadLargeResultsWorkflow,
    LargeResultsWorkflow,
    process_data,
)
from lambda_workflows.testing import WorkflowTestEnv

from ._support import crash_after, inject, run_one, step_rows

STORE_STEP = "fetch and store large dataset"


def _run(workflow: type[WorkflowEntrypoint], fakes: dict[str, Any]) -> tuple[WorkflowTestEnv, Any]:
    return run_one(workflow, fakes, "data", "data-1")


def test_a_stored_reference_keeps_the_result_small_and_the_data_retrievable_after_a_crash() -> None:
    # GIVEN the invocation dies right after the dataset was stored and its reference recorded
    fakes = example_env()
    api = inject(fakes["DATASET_API"], "get")  # a spy
    workflow = crash_after(LargeResultsWorkflow, STORE_STEP)
    # WHEN it is replayed
    env, inst = _run(workflow, fakes)
    # THEN the later step read the data back through the recorded reference
    assert workflow.crash_plan.crashed == [STORE_STEP] and env.crashes == 1
    status = inst.status()
    assert status.status == "complete"
    rows = json.loads(DatasetApi().get(DATASET_URL).text)
    assert status.output == process_data(rows)
    assert api.calls == 1  # the dataset was fetched once
    # AND what was recorded for the store step is the small reference, not the data
    stored = {entry.name: entry for entry in inst.journal()}[STORE_STEP]
    assert stored.result is not None and json.loads(stored.result) == {"key": "dataset-123"}
    assert len(stored.result) < 100
    body = fakes["BUCKET"].get("dataset-123")
    assert body is not None and len(body) > MAX_VALUE_BYTES
    assert json.loads(body) == rows


def test_bad_large_result_fails_the_step_with_result_too_large_without_retrying() -> None:
    # GIVEN the bad workflow, whose step returns the whole dataset
    fakes = example_env()
    api = inject(fakes["DATASET_API"], "get")  # a spy
    # WHEN it runs
    _, inst = _run(BadLargeResultsWorkflow, fakes)
    # THEN the step failed once, for good, with a clear error; nothing large was recorded
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None and status.error.name == "ResultTooLarge"
    assert "1 MiB" in status.error.message and "reference" in status.error.message
    assert step_rows(inst) == [("fetch large dataset", 1, "do", "errored", 1)]
    assert api.calls == 1
    assert all(entry.result is None for entry in inst.journal())
