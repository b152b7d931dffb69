"""Record the histories in this directory: run example workflows in the test kit and export them.

    PYTHONPATH=handler .venv/bin/python tests/histories/record.py

Each ``<workflow>--<id>.json`` is what ``lambda-workflows instances export <workflow> <id>`` writes
for that instance, recorded by the engine (never edited by hand). tests/histories/test_replay
replays them against handler/lambda_workflows/examples: a change to an example that would break an
instance in flight makes that test fail. Run this again after a deliberate, versioned change.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lambda_workflows.engine.instances.history import dumps, history_of
from lambda_workflows.examples import GOOD_WORKFLOWS
from lambda_workflows.examples._fakes import example_env
from lambda_workflows.examples.showcase import SHOWCASE_WORKFLOWS
from lambda_workflows.testing import TestInstance, WorkflowTestEnv

HERE = Path(__file__).parent
ROOT = HERE.parent.parent  # tracebacks name the examples' files relative to the checkout
WORKFLOWS = {**GOOD_WORKFLOWS, **SHOWCASE_WORKFLOWS}


def _approved(inst: TestInstance, env: WorkflowTestEnv) -> None:
    inst.send_event(type="approved", payload={"user": "ana"})
    env.run_until_idle()


def _nothing(inst: TestInstance, env: WorkflowTestEnv) -> None:
    """Left where run_until_idle stops it: an instance still in flight."""


# (workflow, instance id, params, what happens once run_until_idle stops)
RECORDED: list[tuple[str, str, object, Callable[[TestInstance, WorkflowTestEnv], None]]] = [
    ("subscription", "approved", {"customer_id": "cus-1"}, _approved),
    ("subscription", "awaiting-approval", {"customer_id": "cus-2"}, _nothing),
    ("flaky-fetch", "retried", {}, _nothing),
    ("no-state-outside-steps", "cats", {}, _nothing),
    ("idempotent-charge", "monthly", {"customer_id": 42}, _nothing),
    ("granular-steps", "cat", {}, _nothing),
]


def record(directory: Path = HERE) -> list[Path]:
    """Run every recorded instance and write its history to ``directory`` (this one by
    default); return the files written."""
    written = []
    with WorkflowTestEnv(WORKFLOWS, env=example_env()) as env:
        for workflow, id, params, then in RECORDED:
            inst = env.create(workflow, id=id, params=params)
            env.run_until_idle()
            then(inst, env)
            path = directory / f"{workflow}--{id}.json"
            text = dumps(history_of(env.store.load(inst.ref))).replace(f"{ROOT}/", "")
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


if __name__ == "__main__":
    for path in record():
        print(path.name)
