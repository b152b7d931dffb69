"""The distribution as a user gets it: the wheel built from this checkout, installed by pip (its
dependencies from the package index) into a fresh virtualenv that cannot see the checkout.

What is tested: the wheel's contents (one import package, ``lambda_workflows``, with the SAM
template and the project starter as package data); that ``lambda-workflows init`` writes a
project whose own tests, ``lint``, ``doctor``, ``cfn-lint`` and ``dev`` all work from the
installed package; that ``init`` never writes into a non-empty folder; that ``sam build`` of the
generated project puts the engine in EngineLayer and only the user's code in the functions; and
that the package installs and imports beside LlamaIndex's ``llama-index-workflows`` (whose
import package is ``workflows``, this project's former name).

Every command runs as a separate process of the fresh virtualenv, from a temporary folder, with
no ``PYTHONPATH`` and no ``WORKFLOWS``: nothing of the checkout is on its path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.local.devserver import stop

ROOT = Path(__file__).resolve().parents[2]
SAM = Path(os.environ.get("SAM_CLI") or ROOT / ".venv-sam" / "bin" / "sam")
CFN_LINT = SAM.parent / "cfn-lint"
INSTALL_SAM = "`make sam` installs the SAM CLI and cfn-lint into .venv-sam (or set SAM_CLI)"
FUNCTIONS = (
    "ApiFunction",
    "RunnerFunction",
    "TriggerFunction",
    "SweepFunction",
    "LifecycleEventsFunction",
)
PROJECT = "my-app"
PACKAGE = "my_app"
PIP_TIMEOUT = 900


@dataclass(frozen=True)
class Venv:
    """A fresh virtualenv: its folder and its site-packages."""

    root: Path
    site: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    @property
    def cli(self) -> Path:
        return self.bin / "lambda-workflows"

    def env(self, **extra: str) -> dict[str, str]:
        """This machine's environment as the venv, activated, sees it: no PYTHON* variables
        (PYTHONPATH above all), no WORKFLOWS* (the project's template registers the
        workflows), the venv's bin/ first on PATH."""
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PYTHON", "WORKFLOWS", "VIRTUAL_ENV"))
        }
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', os.defpath)}"
        env["VIRTUAL_ENV"] = str(self.root)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["NO_COLOR"] = "1"
        env.update(extra)
        return env


@dataclass(frozen=True)
class Project:
    """A project written by ``lambda-workflows init``, and what init printed and wrote."""

    path: Path
    printed: str
    written: frozenset[str]


def run(
    command: Sequence[str | Path],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def shown(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def listing(folder: Path) -> frozenset[str]:
    return frozenset(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def make_venv(root: Path, cwd: Path, *requirements: str | Path) -> Venv:
    """A new virtualenv at ``root`` of the Python running the tests (its base interpreter,
    not /work/main/.venv's packages), with ``requirements`` installed by pip."""
    created = subprocess.run(
        [sys.executable, "-m", "venv", str(root)], capture_output=True, text=True, timeout=300
    )
    assert created.returncode == 0, shown(created)
    bare = Venv(root, root)
    pip = [bare.python, "-m", "pip", "install", "--quiet", *requirements]
    installed = run(pip, cwd=cwd, env=bare.env(), timeout=PIP_TIMEOUT)
    assert installed.returncode == 0, shown(installed)
    probe = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = run([bare.python, "-c", probe], cwd=cwd, env=bare.env())
    assert purelib.returncode == 0, shown(purelib)
    return Venv(root, Path(purelib.stdout.strip()))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of the checkout as it is now (its tracked and new files), built from a copy:
    a stale build/ in the checkout cannot leak into it, and the build writes nothing there."""
    source = tmp_path_factory.mktemp("source")
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, files.split("\0")):
        origin = ROOT / name
        if origin.is_file():  # a tracked file deleted in the work tree is not listed on disk
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, source / name)
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), source],
        cwd=dist,
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT,
    )
    assert built.returncode == 0, shown(built)
    wheels = sorted(dist.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every command of the fresh virtualenv runs from, outside the checkout."""
    folder = tmp_path_factory.mktemp("work")
    assert not folder.resolve().is_relative_to(ROOT)
    return folder


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path, workdir: Path) -> Venv:
    """One fresh virtualenv with the wheel (its dependencies from the index) and pytest."""
    return make_venv(tmp_path_factory.mktemp("venv") / "venv", workdir, wheel, "pytest")


@pytest.fixture(scope="module")
def project(venv: Venv, workdir: Path) -> Project:
    """``lambda-workflows init my-app`` run in the fresh virtualenv."""
    path = workdir / PROJECT
    result = run([venv.cli, "init", path], cwd=workdir, env=venv.env())
    assert result.returncode == 0, shown(result)
    return Project(path, result.stdout + result.stderr, listing(path))


def test_the_wheel_holds_one_import_package_with_its_template_and_starter(wheel: Path) -> None:
    # GIVEN the wheel built from the checkout
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        # WHEN its entries are sorted by top-level folder
        tops = {name.split("/", 1)[0] for name in names}
        dist_info = {top for top in tops if top.endswith(".dist-info")}
        template = archive.read("lambda_workflows/infra/template.yaml")
        entry_points = archive.read(f"{next(iter(dist_info))}/entry_points.txt").decode()

    # THEN everything is under lambda_workflows/ or the one .dist-info/ folder
    assert len(dist_info) == 1, dist_info
    assert tops == {"lambda_workflows", *dist_info}, sorted(tops)
    assert all("/" in name for name in names), [name for name in names if "/" not in name]
    assert not tops & {"examples", "infra", "workflows", "handler", "tests"}
    # AND the template it provisions from is the repository's, byte for byte
    assert template == (ROOT / "template.yaml").read_bytes()
    # AND every file of the project starter ships as package data
    starter = ROOT / "handler" / "lambda_workflows" / "starter" / "files"
    expected = {
        f"lambda_workflows/starter/files/{path}"
        for path in listing(starter)
        if "__pycache__" not in Path(path).parts
    }
    assert expected, "the checkout has no starter files"
    assert expected <= set(names), sorted(expected - set(names))
    # AND the console script is declared
    assert re.search(r"^lambda-workflows\s*=\s*lambda_workflows\.cli:main$", entry_points, re.M)


def test_the_fresh_virtualenv_imports_the_installed_package_not_the_checkout(
    venv: Venv, workdir: Path
) -> None:
    # GIVEN the fresh virtualenv, run from a temporary folder without PYTHONPATH
    probe = (
        "import json, sys, lambda_workflows; "
        "print(json.dumps({'file': lambda_workflows.__file__, 'path': sys.path}))"
    )
    # WHEN it imports lambda_workflows
    result = run([venv.python, "-c", probe], cwd=workdir, env=venv.env())

    # THEN the package is the one installed in its site-packages
    assert result.returncode == 0, shown(result)
    found = json.loads(result.stdout)
    module = Path(found["file"]).resolve()
    assert module.is_relative_to(venv.site.resolve() / "lambda_workflows"), module
    # AND nothing of the checkout is on its path
    assert not module.is_relative_to(ROOT)
    entries = [Path(entry).resolve() for entry in found["path"] if entry]
    assert [entry for entry in entries if entry.is_relative_to(ROOT)] == []


def test_init_writes_a_project_that_depends_on_the_engine(project: Project) -> None:
    # GIVEN the project init wrote (the fixture ran `lambda-workflows init my-app`)
    pyproject = tomllib.loads((project.path / "pyproject.toml").read_text())
    template = (project.path / "template.yaml").read_text()
    workflows = (project.path / "src" / PACKAGE / "workflows.py").read_text()

    # WHEN its files are read THEN it has the starter's files, and init listed each one it wrote
    for name in (
        "pyproject.toml",
        "README.md",
        "template.yaml",
        "samconfig.toml",
        "engine/Makefile",
        f"src/{PACKAGE}/__init__.py",
        f"src/{PACKAGE}/workflows.py",
        f"tests/test_{PACKAGE}.py",
    ):
        assert name in project.written, sorted(project.written)
    for name in project.written:
        assert str(project.path / name) in project.printed, name
    # AND it depends on lambda-workflows instead of holding a copy of it
    assert pyproject["project"]["name"] == PROJECT
    assert any(dep.startswith("lambda-workflows") for dep in pyproject["project"]["dependencies"])
    assert not any("lambda_workflows" in Path(name).parts for name in project.written)
    # AND its template registers the starter workflow from its own package
    assert f"hello={PACKAGE}.workflows:HelloWorkflow" in template
    assert "class HelloWorkflow(WorkflowEntrypoint)" in workflows


def test_the_generated_projects_own_tests_pass(venv: Venv, project: Project) -> None:
    # GIVEN the generated project (its pyproject puts src/ on pytest's path)
    # WHEN its tests run with the fresh virtualenv's pytest
    result = run(
        [venv.python, "-m", "pytest", "-rA", "-p", "no:cacheprovider"],
        cwd=project.path,
        env=venv.env(),
        timeout=600,
    )

    # THEN they pass, on the in-memory backend and on the embedded AWS
    assert result.returncode == 0, shown(result)
    assert re.search(r"^PASSED \S+\[memory\]$", result.stdout, re.M), result.stdout
    assert re.search(r"^PASSED \S+\[aws\]$", result.stdout, re.M), result.stdout
    assert not re.search(r"^(FAILED|ERROR) ", result.stdout, re.M), result.stdout


def test_lint_checks_the_generated_projects_code_and_finds_nothing(
    venv: Venv, project: Project
) -> None:
    # GIVEN the generated project, whose functions' code is src/
    sources = [path for path in project.written if path.startswith("src/") and path.endswith(".py")]
    # WHEN lambda-workflows lint runs in its folder with no path
    result = run([venv.cli, "lint"], cwd=project.path, env=venv.env())

    # THEN it checked the code under src/ (not the tests) and found no problem
    assert result.returncode == 0, shown(result)
    files = "file" if len(sources) == 1 else "files"
    assert f"checked {len(sources)} {files}, no problems" in result.stdout, shown(result)


def test_doctor_finds_the_generated_project_in_step(venv: Venv, project: Project) -> None:
    # GIVEN the generated project
    # WHEN lambda-workflows doctor runs in its folder
    result = run([venv.cli, "doctor"], cwd=project.path, env=venv.env())

    # THEN every check is ok: the template's version, and the hello workflow imports
    assert result.returncode == 0, shown(result)
    lines = (result.stdout + result.stderr).splitlines()
    assert len(lines) >= 2 and all(line.startswith("ok: ") for line in lines), shown(result)
    assert any("registers hello, and each imports" in line for line in lines), shown(result)


def test_cfn_lint_passes_on_the_generated_template(venv: Venv, project: Project) -> None:
    # GIVEN cfn-lint from .venv-sam
    if not CFN_LINT.exists():
        pytest.skip(f"{CFN_LINT} is missing: {INSTALL_SAM}")
    # WHEN it checks the generated project's template.yaml
    result = run(
        [CFN_LINT, "template.yaml"],
        cwd=project.path,
        env=venv.env(AWS_DEFAULT_REGION="us-east-1"),
    )

    # THEN it finds nothing
    assert result.returncode == 0, shown(result)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def call(url: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def dev_output(log: Path) -> str:
    """The dev server's output, without its log line for each poll."""
    lines = log.read_text().splitlines()
    return "\n".join(line for line in lines if not re.fullmatch(r"GET \S+ -> 200", line))


def wait_listening(url: str, server: subprocess.Popen[str], log: Path) -> Any:
    """The ``GET /workflows`` answer of a dev server, once it answers (the test fails with its
    output if it exits or does not answer within 60 s)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"lambda-workflows dev exited {server.returncode}:\n{dev_output(log)}")
        try:
            status, body = call(f"{url}/workflows")
            if status == 200:
                return body
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(f"lambda-workflows dev did not answer within 60 s:\n{dev_output(log)}")


def until(url: str, done: str, check: Any, log: Path, timeout: float = 60) -> dict[str, Any]:
    """Poll ``GET url`` until ``check(body)`` holds: the last body (the test fails, with the
    dev server's output, if ``timeout`` seconds pass first)."""
    deadline = time.monotonic() + timeout
    while True:
        status, body = call(url)
        assert status == 200, body
        if check(body):
            return dict(body)
        if time.monotonic() > deadline:
            pytest.fail(f"not {done} within {timeout} s: {body}\n{dev_output(log)}")
        time.sleep(0.1)


def step_status(body: dict[str, Any], name: str) -> str | None:
    return next((str(s["status"]) for s in body["steps"] if s["name"] == name), None)


@pytest.fixture
def dev(venv: Venv, project: Project, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``lambda-workflows dev --real-time`` run from the generated project's folder, with
    WORKFLOWS unset: its URL and its output's file. ``--real-time`` keeps the day's sleep
    from being skipped, so only moving the clock gets the instance past it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "dev.log"
    with log.open("w") as output:
        server = subprocess.Popen(
            [str(venv.cli), "dev", "--port", str(port), "--real-time"],
            cwd=project.path,
            env=venv.env(),
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        listed = wait_listening(url, server, log)
        assert listed["workflows"] == ["hello"], listed
        assert listed["versions"]["hello"][0]["module"] == f"{PACKAGE}.workflows", listed
        yield url, log
    finally:
        stop(server)


def test_dev_serves_the_generated_project_through_sleep_and_event(
    venv: Venv, project: Project, dev: tuple[str, Path]
) -> None:
    # GIVEN lambda-workflows dev serving the project's hello workflow (from its template.yaml)
    url, log = dev
    instance = f"{url}/workflows/hello/instances/first"
    # WHEN an instance is created over HTTP
    status, created = call(
        f"{url}/workflows/hello/instances", "POST", {"id": "first", "params": {"name": "Ana"}}
    )
    # THEN it is accepted, and sleeps its day
    assert status == 201, created
    assert created["id"] == "first"
    # (the sleep's entry is written before the park: wait for both, not the first alone)
    asleep = until(
        instance,
        "asleep",
        lambda b: step_status(b, "wait a day") is not None and b["status"] == "waiting",
        log,
    )
    assert asleep["status"] == "waiting", asleep
    assert step_status(asleep, "approval") is None, asleep

    # WHEN the dev server's clock moves a day forward
    moved = run(
        [venv.cli, "dev-clock", "advance", "1 day", "--url", url],
        cwd=project.path,
        env=venv.env(),
    )
    # THEN the sleep is over and the instance waits for its approval
    assert moved.returncode == 0, shown(moved)
    waiting = until(instance, "waiting", lambda b: step_status(b, "approval") == "waiting", log)
    assert step_status(waiting, "wait a day") == "complete", waiting

    # WHEN the approved event is sent
    status, sent = call(f"{instance}/events/approved", "POST", {"user": "lee"})
    # THEN the instance completes with the greeting and the approver
    assert status == 202, sent
    done = until(instance, "complete", lambda b: b["status"] in ("complete", "errored"), log)
    assert done["status"] == "complete", done
    assert done["output"] == {"greeting": "Hello, Ana!", "approved_by": "lee"}


def test_init_refuses_a_folder_that_is_not_empty(venv: Venv, workdir: Path) -> None:
    # GIVEN a folder holding someone's file
    folder = workdir / "taken"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    before = listing(folder)
    # WHEN lambda-workflows init is pointed at it
    result = run([venv.cli, "init", folder], cwd=workdir, env=venv.env())

    # THEN it exits 2 saying the folder is not empty
    assert result.returncode == 2, shown(result)
    assert "not empty" in result.stderr + result.stdout, shown(result)
    # AND it wrote nothing: the folder is as it was
    assert listing(folder) == before
    assert (folder / "notes.txt").read_text() == "mine\n"


# The layer's compiled wheels are for the functions' architecture (arm64): the probe loads the
# compiled dependencies from this machine's environment first, then the engine and the user's
# code from the build.
LAMBDA_PROBE = """
import json, sys
import pydantic, pydantic_core
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import lambda_workflows
assert lambda_workflows.__file__.startswith(sys.argv[2]), lambda_workflows.__file__
from lambda_workflows.registry import load_workflows
print(json.dumps({name: cls.__module__ for name, cls in load_workflows().items()}))
"""


def workdir_of(tmp_path: Path) -> Path:
    folder = tmp_path / "probe"
    folder.mkdir(exist_ok=True)
    return folder


def test_sam_build_puts_the_engine_in_the_layer_and_the_users_code_in_the_functions(
    venv: Venv, project: Project, tmp_path: Path
) -> None:
    # GIVEN the SAM CLI, and a fresh copy of the generated project
    if not SAM.exists():
        pytest.skip(f"{SAM} is missing: {INSTALL_SAM}")
    app = tmp_path / PROJECT
    shutil.copytree(
        project.path, app, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".aws-sam")
    )
    # WHEN sam build runs there with the fresh virtualenv active
    result = run(
        [SAM, "build"],
        cwd=app,
        env=venv.env(
            SAM_CLI_TELEMETRY="0", SAM_CLI_POLL_VERSION="0", AWS_DEFAULT_REGION="us-east-1"
        ),
        timeout=900,
    )

    # THEN it succeeds
    assert result.returncode == 0, shown(result)
    build = app / ".aws-sam" / "build"
    # AND every function holds the user's package, and neither the engine nor its examples
    for function in FUNCTIONS:
        artifact = build / function
        assert (artifact / PACKAGE / "workflows.py").is_file(), listing(artifact)
        assert not (artifact / "lambda_workflows").exists(), function
        assert not (artifact / "examples").exists(), function
    # AND EngineLayer holds the engine and its runtime dependencies, not the local tooling
    site = build / "EngineLayer" / "python"
    assert (site / "lambda_workflows" / "entrypoints" / "api.py").is_file()
    assert (site / "pydantic").is_dir()
    assert (site / "aws_lambda_powertools").is_dir()
    assert not (site / "lambda_workflows" / "examples").exists()
    assert not (site / "moto").exists()
    assert not (site / "boto3").exists()
    # AND a function's code with the layer on its path (as Lambda lays them out: /var/task,
    # then /opt/python) registers the template's workflow from the layer's engine
    probe = run(
        [venv.python, "-c", LAMBDA_PROBE, str(build / "RunnerFunction"), str(site)],
        cwd=workdir_of(tmp_path),
        env=venv.env(WORKFLOWS=f"hello={PACKAGE}.workflows:HelloWorkflow"),
    )
    assert probe.returncode == 0, shown(probe)
    assert json.loads(probe.stdout) == {"hello": f"{PACKAGE}.workflows"}


def test_it_installs_and_imports_beside_llama_index_workflows(
    tmp_path: Path, wheel: Path, workdir: Path
) -> None:
    # GIVEN a second fresh virtualenv with llama-index-workflows and the wheel
    other = make_venv(tmp_path / "venv", workdir, "llama-index-workflows", wheel)
    probe = (
        "import json, workflows, lambda_workflows; "
        "print(json.dumps([workflows.__file__, lambda_workflows.__file__]))"
    )
    # WHEN both packages are imported in one process
    both = run([other.python, "-c", probe], cwd=workdir, env=other.env())

    # THEN each resolves to its own folder of the venv's site-packages
    assert both.returncode == 0, shown(both)
    theirs, ours = (Path(path).resolve() for path in json.loads(both.stdout))
    site = other.site.resolve()
    assert theirs.parent == site / "workflows", theirs
    assert ours.parent == site / "lambda_workflows", ours
    # AND the engine's API and the console script work there
    api = run(
        [other.python, "-c", "from lambda_workflows import WorkflowEntrypoint; print('ok')"],
        cwd=workdir,
        env=other.env(),
    )
    assert api.returncode == 0 and api.stdout.strip() == "ok", shown(api)
    helped = run([other.cli, "--help"], cwd=workdir, env=other.env())
    assert helped.returncode == 0, shown(helped)
    assert "init" in helped.stdout, shown(helped)
