"""``lambda-workflows layer DIR``: the engine as a Lambda layer, for a project's ``sam build``.

The layer holds, under ``python/`` (where Lambda puts a layer on the path):

- the installed ``lambda_workflows`` package, without its examples and without the project
  starter (nothing a function imports);
- the engine's runtime dependencies (``aws-lambda-powertools``, ``pydantic``, as the
  distribution declares them), installed by pip for the functions' platform.

Not the local half: ``boto3`` (the Lambda runtime has it), ``moto`` and ``pyyaml`` (the
embedded AWS of ``lambda-workflows dev`` and the test kit). That is why the engine is a layer
built from the installed package rather than a line in ``requirements.txt``: pip would install
every dependency of the distribution, the local tooling included, into every function.
"""

from __future__ import annotations

import compileall
import py_compile
import re
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, requires
from pathlib import Path

from lambda_workflows.distribution import DISTRIBUTION

__all__ = ["LOCAL_ONLY", "LayerError", "build_layer", "runtime_requirements"]

LOCAL_ONLY = frozenset({"boto3", "moto", "pyyaml"})
"""Dependencies the functions do not get: in the runtime already, or for local use only."""
_LEFT_OUT = ("examples", "starter")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_PLATFORMS = {"arm64": "manylinux2014_aarch64", "x86_64": "manylinux2014_x86_64"}


class LayerError(RuntimeError):
    """The layer cannot be built here; the message says why and what to do."""


def runtime_requirements() -> list[str]:
    """The engine's dependencies that a function needs, as the installed distribution
    declares them (its extras and :data:`LOCAL_ONLY` left out)."""
    try:
        declared = requires(DISTRIBUTION) or []
    except PackageNotFoundError:  # a source tree never installed
        raise LayerError(
            f"{DISTRIBUTION} is not installed here, and the layer takes the dependencies its "
            f"distribution declares: pip install {DISTRIBUTION} (pip install -e . in a clone)"
        ) from None
    kept = []
    for line in declared:
        requirement, _, marker = line.partition(";")
        name = _NAME.match(requirement.strip())
        if name is None or "extra" in marker:
            continue
        if name.group(0).lower().replace("_", "-") not in LOCAL_ONLY:
            kept.append(requirement.strip())
    return kept


def build_layer(
    artifacts: Path,
    *,
    architecture: str = "arm64",
    python_version: str = "3.11",
    install_dependencies: bool = True,
) -> Path:
    """Write the layer into ``artifacts`` (SAM's ``ARTIFACTS_DIR``); return its ``python/``.

    Raises:
        ValueError: an architecture Lambda does not have.
        LayerError: the distribution is not installed (its dependencies are unknown).
        subprocess.CalledProcessError: pip could not install the dependencies.
    """
    if architecture not in _PLATFORMS:
        raise ValueError(f"architecture {architecture!r}: Lambda has {sorted(_PLATFORMS)}")
    site = Path(artifacts) / "python"
    package = Path(__file__).resolve().parents[1]
    target = site / package.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(
        package,
        target,
        ignore=lambda folder, names: [
            name
            for name in names
            if name in ("__pycache__",)
            or name.endswith(".pyc")
            or (Path(folder) == package and name in _LEFT_OUT)
        ],
    )
    if install_dependencies:
        _pip_install(site, architecture, python_version)
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == python_version:
        # Bytecode for the functions' Python: a cold start then loads .pyc instead of
        # compiling (hash-based and unchecked: a layer never changes once built).
        compileall.compile_dir(
            site,
            quiet=1,
            workers=0,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
    return site


def _pip_install(site: Path, architecture: str, python_version: str) -> None:
    command = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--target", str(site), "--upgrade",
        "--platform", _PLATFORMS[architecture], "--implementation", "cp",
        "--python-version", python_version, "--only-binary=:all:",
        *runtime_requirements(),
    ]  # fmt: skip
    subprocess.run(command, check=True)
