"""Rules of Workflows: "Make your steps granular".

One step per unrelated API or binding call.

✅ ``GranularStepsWorkflow``: KV and http.cat in two steps, so a failure of http.cat retries
(or re-runs after a crash) only the http.cat step, under its own retry policy.
🔴 ``BadGranularStepsWorkflow``: both in one step, so a failure of http.cat repeats the KV
read every time.
"""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.examples._fakes import DEFAULT_KV, HttpCat, example_env
from lambda_workflows.examples.granular_steps import BadGranularStepsWorkflow, GranularStepsWorkflow
from lambda_workflows.testing import Crash, WorkflowTestEnv

from ._support import inject, run_one, step_rows

KV_STEP = "get cutest cat from KV"
CAT_STEP = "fetch cat image from http.cat"


def _run(workflow: type[WorkflowEntrypoint], fakes: dict[str, Any]) -> tuple[WorkflowTestEnv, Any]:
    return run_one(workflow, fakes, "cats", "cats-1")


def _down() -> ConnectionError:
    return ConnectionError("http.cat is down")


def test_an_http_cat_failure_retries_only_the_http_cat_step() -> None:
    # GIVEN http.cat fails twice before it answers
    fakes = example_env()
    outage = inject(fakes["HTTP_CAT"], "fetch", _down, times=2, commit=False)
    # WHEN the granular workflow runs
    _, inst = _run(GranularStepsWorkflow, fakes)
    # THEN only the http.cat step was retried; the KV read happened once
    assert outage.fired == 2
    assert inst.status().status == "complete"
    assert inst.status().output == HttpCat().fetch(DEFAULT_KV["cutest-http-cat"])
    assert fakes["KV"].reads["cutest-http-cat"] == 1
    assert step_rows(inst) == [
        (KV_STEP, 1, "do", "complete", 1),
        (CAT_STEP, 1, "do", "complete", 3),
    ]


def test_a_crash_during_the_http_cat_fetch_reruns_only_that_step() -> None:
    # GIVEN the invocation dies while http.cat is being fetched
    fakes = example_env()
    crash = inject(fakes["HTTP_CAT"], "fetch", Crash, commit=False)
    # WHEN the work is redelivered and replayed
    env, inst = _run(GranularStepsWorkflow, fakes)
    # THEN the KV step came back from the journal: KV was read once in all
    assert crash.fired == 1 and env.crashes == 1
    assert inst.status().status == "complete"
    assert fakes["KV"].reads["cutest-http-cat"] == 1
    assert crash.calls == 2
    assert [row[4] for row in step_rows(inst)] == [1, 1]


def test_the_http_cat_step_has_its_own_retry_policy() -> None:
    # GIVEN http.cat is down for good
    fakes = example_env()
    inject(fakes["HTTP_CAT"], "fetch", _down, times=1_000, commit=False)
    # WHEN the workflow runs
    _, inst = _run(GranularStepsWorkflow, fakes)
    # THEN the http.cat step gave up after its own limit (3 retries = 4 attempts), with the
    # original error, and KV was still read only once
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None and status.error.name == "ConnectionError"
    assert step_rows(inst) == [
        (KV_STEP, 1, "do", "complete", 1),
        (CAT_STEP, 1, "do", "errored", 4),
    ]
    assert fakes["KV"].reads["cutest-http-cat"] == 1


def test_bad_two_services_in_one_step_repeat_the_kv_read_when_http_cat_fails() -> None:
    # GIVEN http.cat fails twice, with KV and http.cat in one step
    fakes = example_env()
    inject(fakes["HTTP_CAT"], "fetch", _down, times=2, commit=False)
    # WHEN the bad workflow runs
    _, inst = _run(BadGranularStepsWorkflow, fakes)
    # THEN every retry of the single step read KV again: 3 reads for one value
    assert inst.status().status == "complete"
    assert fakes["KV"].reads["cutest-http-cat"] == 3
    assert step_rows(inst) == [(KV_STEP, 1, "do", "complete", 3)]


def test_bad_two_services_in_one_step_repeat_the_kv_read_after_a_crash() -> None:
    # GIVEN the invocation dies while http.cat is being fetched, inside the combined step
    fakes = example_env()
    inject(fakes["HTTP_CAT"], "fetch", Crash, commit=False)
    # WHEN it is replayed
    env, inst = _run(BadGranularStepsWorkflow, fakes)
    # THEN the KV read ran again with the step
    assert env.crashes == 1
    assert inst.status().status == "complete"
    assert fakes["KV"].reads["cutest-http-cat"] == 2
