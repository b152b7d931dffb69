"""The installed distribution: its name and version (``lambda-workflows --version``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["DISTRIBUTION", "installed_version"]

DISTRIBUTION = "lambda-workflows"


def installed_version() -> str:
    """The installed package's version; ``"unknown"`` in a source tree never installed."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"
