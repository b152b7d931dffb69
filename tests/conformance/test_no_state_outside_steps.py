"""Rules of Workflows: "Don't rely on state outside of a step".

Build state only from step results.

✅ ``NoStateOutsideStepsWorkflow``: ``image_list`` is made of step results, so it is rebuilt
from the journal after the 3-hour sleep ends the invocation (and after a crash after it).
🔴 ``BadNoStateOutsideStepsWorkflow``: the steps append to a local list; after the sleep the
next invocation starts with an empty list and the download step cannot pick a cat.
"""

from __future__ import annotations

from typing import Any

from lambda_workflows import WorkflowEntrypoint
from lambda_workflows.examples._fakes import DEFAULT_KV, HttpCat, example_env
from lambda_workflows.examples.no_state_outside_steps import (
    BadNoStateOutsideStepsWorkflow,
    NoStateOutsideStepsWorkflow,
)
from lambda_workflows.testing import Crash, WorkflowTestEnv

from ._support import inject, step_rows

SLEEP = "💤💤💤💤"
DOWNLOAD = "choose a random cat from the list and download it"
CAT_KEYS = ("cutest-http-cat-1", "cutest-http-cat-2")


def _start(
    workflow: type[WorkflowEntrypoint], fakes: dict[str, Any]
) -> tuple[WorkflowTestEnv, Any]:
    env = WorkflowTestEnv({"cats": workflow}, env=fakes)
    return env, env.create("cats", id="cats-1")


def test_image_list_from_step_results_survives_the_sleep_and_a_crash_after_it() -> None:
    # GIVEN the invocation after the sleep dies while it downloads the chosen cat
    fakes = example_env()
    crash = inject(fakes["HTTP_CAT"], "fetch", Crash, commit=False)
    env, inst = _start(NoStateOutsideStepsWorkflow, fakes)

    # WHEN the first invocation runs, it reads both cats and ends at the sleep
    env.run_once("cats", "cats-1")
    assert inst.status().status == "waiting"
    assert [w.reason for w in env.pending_wake_ups()] == ["sleep"]
    assert crash.calls == 0

    # AND the rest runs (the wake-up, the crash, the redelivery)
    env.run_until_idle()

    # THEN the download step found both cats in image_list and fetched one of them
    assert crash.fired == 1 and env.crashes == 1
    status = inst.status()
    assert status.status == "complete"
    cats = [DEFAULT_KV[key] for key in CAT_KEYS]
    assert status.output in [HttpCat().fetch(cat) for cat in cats]
    assert all(args[0] in cats for args in crash.args)
    # the two KV steps were replayed from their results, never re-run
    assert all(fakes["KV"].reads[key] == 1 for key in CAT_KEYS)
    assert [row[0] for row in step_rows(inst)] == [
        "get first cutest cat from KV",
        "get second cutest cat from KV",
        SLEEP,
        DOWNLOAD,
    ]


def test_a_crash_in_one_of_the_gathered_steps_still_builds_the_full_list_on_replay() -> None:
    # GIVEN the invocation dies inside the first of the two concurrent KV steps
    fakes = example_env()
    crash = inject(fakes["KV"], "get", Crash, commit=True, only=lambda key: key == CAT_KEYS[0])
    env, inst = _start(NoStateOutsideStepsWorkflow, fakes)
    # WHEN the work is redelivered and replayed, past the sleep
    env.run_until_idle()
    # THEN the crashed step ran again, and the list held both cats after the sleep
    assert crash.fired == 1 and env.crashes == 1
    status = inst.status()
    assert status.status == "complete"
    assert status.output in [HttpCat().fetch(DEFAULT_KV[key]) for key in CAT_KEYS]
    assert fakes["KV"].reads[CAT_KEYS[0]] == 2
    # (the other step may or may not have been recorded before the crash: at most 2 reads)
    assert fakes["KV"].reads[CAT_KEYS[1]] in (1, 2)
    assert [row[3:] for row in step_rows(inst)] == [("complete", 1)] * 4


def test_bad_list_built_by_callbacks_is_empty_after_the_sleep_and_the_download_fails() -> None:
    # GIVEN the bad workflow, whose steps append to a list of run()
    fakes = example_env()
    fetches = inject(fakes["HTTP_CAT"], "fetch")  # a spy
    env, inst = _start(BadNoStateOutsideStepsWorkflow, fakes)

    # WHEN the first invocation runs up to the sleep
    env.run_once("cats", "cats-1")
    assert inst.status().status == "waiting"
    # AND the next one, after the sleep, replays both steps (from their None results)
    env.run_until_idle()

    # THEN the list was empty: the download step failed on every attempt and the instance
    # errored, although both cats had been read (once each, never again)
    status = inst.status()
    assert status.status == "errored"
    assert status.error is not None
    assert status.error.name == "ValueError"
    assert "empty range" in status.error.message
    assert fetches.calls == 0
    assert all(fakes["KV"].reads[key] == 1 for key in CAT_KEYS)
    assert step_rows(inst)[-1][:4] == (DOWNLOAD, 1, "do", "errored")
    assert step_rows(inst)[-1][4] == 6  # default: 5 retries, every one on an empty list
