"""Cold start: what each Lambda handler's module loads when imported in a fresh interpreter.

A cold Lambda imports its handler before the first request; anything a request never needs
is paid for on every cold start (bench/import_bench.py measures the time). These tests pin
what must stay out, by module name: the runner never loads the instance API, the HTTP API's
models, pydantic, the linter, the client's HTTP mode or the dashboard; the API, the trigger
and the sweep never load the replay engine; nothing loads Powertools' batch utility or its
OpenAPI models or Swagger UI at import time, and the API builds none of its wire models
until a request validates one. The runner and the trigger load the schedules' parser only
when a registered workflow declares schedules, and the engine's records are ``@immutable``
classes, not frozen dataclasses (whose generated methods cost over a millisecond each).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Never loaded by any handler's import.
EVERYWHERE = (
    "lambda_workflows.lint",
    "lambda_workflows.client",
    "lambda_workflows.http_service",
    "lambda_workflows.remote",
    "lambda_workflows.dashboard",
    "lambda_workflows.cli",
    "lambda_workflows.local",
    "lambda_workflows.testing",
    "lambda_workflows.demo",
    "lambda_workflows.text_timeline",
    "lambda_workflows._testkit",
    "moto",
    "aws_lambda_powertools.utilities.batch",
    "aws_lambda_powertools.utilities.parser",
    "aws_lambda_powertools.event_handler.openapi.models",
    "aws_lambda_powertools.event_handler.openapi.swagger_ui",
)
# The replay engine: only the runner advances instances.
REPLAY = (
    "lambda_workflows.engine.instances.advance",
    "lambda_workflows.engine.replay.core",
    "lambda_workflows.engine.replay.replay_outcome",
    "lambda_workflows.engine.replay.step_tasks",
    "lambda_workflows.engine.replay.operations",
)
# The instance API, its HTTP models and the validation behind them.
INSTANCE_API = (
    "lambda_workflows.engine.instances.service",
    "lambda_workflows.entrypoints.api_models",
    "aws_lambda_powertools.event_handler",
    "pydantic",
    "pydantic_core",
)
# The instance service's parts: loaded with it (writes: creation, commands; reads: queries).
SERVICE_PARTS = (
    "lambda_workflows.engine.instances.creation",
    "lambda_workflows.engine.instances.commands",
    "lambda_workflows.engine.instances.queries",
)
# Recurring schedules' parser and cron engine: loaded when a registered workflow declares
# schedules (and by the sweep, which reconciles them on every run), not otherwise.
SCHEDULES = (
    "lambda_workflows.engine.instances.schedules",
    "lambda_workflows.engine.instances.cron",
    "zoneinfo",
)
# The Powertools resolver: loaded by the first request the API's direct path leaves to it.
RESOLVER = ("lambda_workflows.entrypoints._api_resolver", "lambda_workflows.engine.instances.cron")
NOT_LOADED = {
    "lambda_workflows.entrypoints.runner": (*EVERYWHERE, *INSTANCE_API, *SERVICE_PARTS, *SCHEDULES),
    "lambda_workflows.entrypoints.sweep": (*EVERYWHERE, *REPLAY, *INSTANCE_API[1:]),
    "lambda_workflows.entrypoints.trigger": (*EVERYWHERE, *REPLAY, *INSTANCE_API[1:], *SCHEDULES),
    "lambda_workflows.entrypoints.api": (*EVERYWHERE, *REPLAY, *INSTANCE_API[1:], *RESOLVER),
    "lambda_workflows": (*EVERYWHERE, *REPLAY, *INSTANCE_API, *SERVICE_PARTS, "boto3"),
}


def loaded_by(statement: str) -> set[str]:
    """The modules loaded after ``statement`` runs in a fresh interpreter (no workflows
    registered: a registered workflow's module loads what it imports)."""
    env = {k: v for k, v in os.environ.items() if k != "WORKFLOWS"}
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def offending(loaded: set[str], forbidden: tuple[str, ...]) -> list[str]:
    """The loaded modules that are, or are inside, a forbidden one."""
    return sorted(m for m in loaded for f in forbidden if m == f or m.startswith(f + "."))


@pytest.mark.parametrize("module", sorted(NOT_LOADED))
def test_a_handler_import_loads_only_what_its_requests_use(module: str) -> None:
    loaded = loaded_by(f"import {module}")
    assert module in loaded
    assert offending(loaded, NOT_LOADED[module]) == []


def test_the_client_is_still_importable_from_the_package_and_loads_on_first_use() -> None:
    loaded = loaded_by(
        "import lambda_workflows\nfrom lambda_workflows import Workflow\nassert Workflow"
    )
    assert {"lambda_workflows.client", "lambda_workflows.http_service"} <= loaded


def test_the_api_builds_its_models_on_first_use_not_at_import() -> None:
    # Building every model's validator cost more than importing pydantic: a request builds
    # its own route's models only. A model that does not derive from api_models.WireModel (or
    # that sets defer_build=False) is built at import and shows here.
    code = """
import lambda_workflows.entrypoints.api
from pydantic import BaseModel
from lambda_workflows.entrypoints import api_models
models = [v for v in vars(api_models).values() if isinstance(v, type) and issubclass(v, BaseModel)]
assert len(models) > 20, models
print("built:", sorted(m.__name__ for m in models if m.__pydantic_complete__))
"""
    env = {k: v for k, v in os.environ.items() if k != "WORKFLOWS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "built: []"


FIRST_REQUESTS = """
import json, sys
from pathlib import Path
from lambda_workflows.entrypoints import api
from lambda_workflows.testing import WorkflowTestEnv
from tests.functional.workflows_under_test import Lifecycle

HEAVY = ("pydantic", "aws_lambda_powertools.event_handler",
"lambda_workflows.entrypoints.api_models",
         "lambda_workflows.entrypoints._api_resolver")

def heavy():
    return sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in HEAVY))

env = WorkflowTestEnv({"orders": Lifecycle}, backend="aws")
env.aws.runtime.service.create("orders", "order-1001", {})
handler = api.make_handler(env.aws.runtime)
before = heavy()
statuses = {}
for name in sorted(Path("tests/events").glob("api_*.json")):
    if name.stem != "api_get_openapi":
        statuses[name.stem] = handler(json.loads(name.read_text()), None)["statusCode"]
after_well_formed = heavy()
bad = json.loads(Path("tests/events/api_list_instances.json").read_text())
bad["queryStringParameters"] = {"limit": "0"}
bad["multiValueQueryStringParameters"] = {"limit": ["0"]}
refused = handler(bad, None)
env.close()
print(json.dumps({
    "before": before, "statuses": statuses, "after_well_formed": after_well_formed,
    "refused": [refused["statusCode"], json.loads(refused["body"])["error"]["code"]],
    "after_refused": heavy(),
}))
"""


def test_well_formed_requests_load_neither_the_resolver_nor_pydantic() -> None:
    # GIVEN a cold API (imported in a fresh interpreter)
    env = {k: v for k, v in os.environ.items() if k != "WORKFLOWS"}
    done = subprocess.run(
        [sys.executable, "-c", FIRST_REQUESTS],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    # WHEN it answers every sample request: create, batch, get, list, status change, event
    # (409 for the sample creating order-1001, which is taken: a domain answer, direct too)
    assert len(seen["statuses"]) >= 8, seen
    assert set(seen["statuses"].values()) <= {200, 201, 202, 409}, seen
    # THEN the direct path answered each: nothing heavy was loaded
    assert seen["before"] == [] and seen["after_well_formed"] == []
    # AND a request it cannot take is answered by the resolver, which is loaded then
    assert seen["refused"] == [422, "validation_error"]
    assert "lambda_workflows.entrypoints._api_resolver" in seen["after_refused"]
    assert "pydantic" in seen["after_refused"]


SCHEDULED = """
import sys, types
from lambda_workflows import WorkflowEntrypoint
module = types.ModuleType("scheduled_app")
class Report(WorkflowEntrypoint):
    schedules = ["cron(0 9 * * ? *)"]
    async def run(self, event, step):
        return None
class Plain(WorkflowEntrypoint):
    async def run(self, event, step):
        return None
module.Report, module.Plain = Report, Plain
sys.modules["scheduled_app"] = module
import os
os.environ["WORKFLOWS"] = {spec!r}
import {handler}
"""


@pytest.mark.parametrize("handler", ["runner", "trigger"])
def test_the_schedules_parser_loads_only_for_a_workflow_that_declares_schedules(
    handler: str,
) -> None:
    module = f"lambda_workflows.entrypoints.{handler}"
    plain = loaded_by(SCHEDULED.format(spec="plain=scheduled_app:Plain", handler=module))
    assert offending(plain, SCHEDULES) == []
    scheduled = loaded_by(SCHEDULED.format(spec="report=scheduled_app:Report", handler=module))
    assert (
        "lambda_workflows.engine.instances.schedules" in scheduled
    )  # its schedules are checked at start


def test_a_bad_schedule_still_fails_the_cold_start() -> None:
    code = (
        SCHEDULED.format(spec="report=scheduled_app:Report", handler="json").replace(
            "cron(0 9 * * ? *)", "cron(every day)"
        )
        + "from lambda_workflows.registry import load_workflows\nload_workflows()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "WORKFLOWS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode != 0
    assert "InvalidSchedule" in done.stderr and "workflow report" in done.stderr


# The frozen dataclasses whose methods dataclasses itself generates, among what a handler
# loads, but those with a default factory (which @immutable does not implement).
FIND_DATACLASSES = """
import dataclasses, json, sys
import {handler}
found = []
for name, module in list(sys.modules.items()):
    if not name.startswith("workflows."):
        continue
    for cls in vars(module).values():
        if (
            isinstance(cls, type) and cls.__module__ == name
            and dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
            and all(f.default_factory is dataclasses.MISSING for f in dataclasses.fields(cls))
        ):
            found.append(f"{{name}}.{{cls.__qualname__}}")
print(json.dumps(sorted(found)))
"""


@pytest.mark.parametrize("handler", ["runner", "trigger", "sweep"])
def test_the_engine_s_records_are_immutable_classes_not_frozen_dataclasses(handler: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "WORKFLOWS"}
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    code = FIND_DATACLASSES.format(handler=f"lambda_workflows.entrypoints.{handler}")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    frozen = json.loads(done.stdout.splitlines()[-1])
    assert frozen == [], "define these with lambda_workflows.engine.immutable's @immutable"
