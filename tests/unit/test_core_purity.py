"""The replay core imports no boto3 and reads no clock directly; the public API is pinned."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import lambda_workflows

ENGINE = Path(lambda_workflows.__file__).parent / "engine"
BANNED_MODULES = {"boto3", "botocore", "aiobotocore", "moto"}
CLOCK_READS = {("time", "time"), ("time", "time_ns"), ("datetime", "now"), ("datetime", "utcnow")}


def engine_files() -> list[Path]:
    files = sorted(ENGINE.rglob("*.py"))
    assert files, "the engine package has no modules?"
    return files


def test_no_module_of_the_engine_imports_boto3() -> None:
    for path in engine_files():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in BANNED_MODULES, f"{path.name} imports {name}"


def test_importing_the_engine_and_test_kit_does_not_load_boto3() -> None:
    code = (
        "import sys, lambda_workflows, lambda_workflows.testing,"
        " lambda_workflows.engine.instances.advance;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3','botocore','moto')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_only_the_clock_module_reads_the_system_clock() -> None:
    for path in engine_files():
        if path.name == "clock.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                if isinstance(owner, ast.Name):
                    assert (owner.id, node.func.attr) not in CLOCK_READS, (
                        f"{path.name}:{node.lineno} reads the clock directly"
                    )


def test_public_api_is_pinned() -> None:
    # Exactly these names: adding or removing one is a change of the public API, made here
    # on purpose, never by accident.
    assert sorted(lambda_workflows.__all__) == [
        "Clock",
        "Env",
        "ErrorInfo",
        "EventMutationError",
        "InstanceAlreadyExists",
        "InstanceFailedError",
        "InstanceNotFound",
        "InstanceStatus",
        "InstanceStatusView",
        "InvalidInput",
        "InvalidStepError",
        "InvalidTransition",
        "NonDeterminismError",
        "NonRetryableError",
        "ReceivedEvent",
        "ResultTooLarge",
        "RetryConfig",
        "StepConfig",
        "StepContext",
        "StepFailedError",
        "StepInfo",
        "StepLimitExceeded",
        "StepNotFound",
        "SuspensionCaughtError",
        "SystemClock",
        "UnawaitedStepError",
        "UnknownWorkflow",
        "Workflow",
        "WorkflowEntrypoint",
        "WorkflowError",
        "WorkflowEvent",
        "WorkflowStep",
        "WorkflowTimeoutError",
    ]
    for name in lambda_workflows.__all__:
        assert hasattr(lambda_workflows, name), name
    from lambda_workflows import testing

    assert {"WorkflowTestEnv", "Crash", "VirtualClock"} <= set(testing.__all__)
    assert issubclass(testing.Crash, BaseException)
    assert not issubclass(testing.Crash, Exception)


def test_the_suspension_signal_is_not_an_exception() -> None:
    from lambda_workflows.engine.errors import Suspend

    assert issubclass(Suspend, BaseException) and not issubclass(Suspend, Exception)
