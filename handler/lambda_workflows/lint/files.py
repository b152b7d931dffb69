"""Which files ``lambda-workflows lint`` reads: Python files given, and ``*.py`` under folders
given.

A file given by name that is not Python (a README, a YAML template) is skipped and said so,
never parsed and reported as a syntax error. A file counts as Python when its name ends in
``.py`` or ``.pyi``, or when it has no suffix and its first line is a ``python`` shebang (a
script). In folders only ``*.py`` files are read; hidden folders, ``__pycache__``,
``node_modules`` and virtualenvs are not walked.
"""

from __future__ import annotations

import os
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FileSelection", "is_python_file", "read_source", "select_files"]

PYTHON_SUFFIXES = (".py", ".pyi")
_SKIPPED_DIRECTORIES = frozenset({"__pycache__", "node_modules", "site-packages"})


@dataclass(frozen=True)
class FileSelection:
    """The files to lint, and the files given by name that are skipped as not Python."""

    files: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)


def select_files(paths: Sequence[str | Path]) -> FileSelection:
    """The Python files among ``paths`` (folders walked), and the non-Python files given.

    Raises:
        FileNotFoundError: a path does not exist (checked before any file is read).
    """
    selection = FileSelection()
    for given in paths:
        path = Path(given)
        if path.is_dir():
            selection.files.extend(_walk_directory(path))
        elif not path.exists():
            raise FileNotFoundError(f"no such file or directory: {given}")
        elif is_python_file(path):
            selection.files.append(path)
        else:
            selection.skipped.append(path)
    return selection


def is_python_file(path: Path) -> bool:
    """True for ``*.py`` / ``*.pyi``, and for a suffix-less script with a python shebang."""
    if path.suffix in PYTHON_SUFFIXES:
        return True
    if path.suffix:
        return False
    try:
        with path.open("rb") as handle:
            first = handle.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def _walk_directory(top: Path) -> Iterator[Path]:
    for directory, subdirectories, files in os.walk(top):
        subdirectories[:] = sorted(
            name
            for name in subdirectories
            if not name.startswith(".")
            and name not in _SKIPPED_DIRECTORIES
            and not os.path.exists(os.path.join(directory, name, "pyvenv.cfg"))
        )
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(directory, name)


def read_source(path: Path) -> str:
    """The text of a Python file, decoded as Python does (PEP 263 encoding cookie).

    Raises:
        OSError: the file cannot be read.
        SyntaxError: the bytes cannot be decoded (reported as WF100).
    """
    with tokenize.open(path) as handle:
        return handle.read()
