"""The traceback recorded with a failed step attempt: the user's frames only, capped in size.

A step's error says *what* failed (``{"name", "message"}``); its traceback says *where*. The
frames worth reading are the workflow author's: the library's own frames (the replay driver,
the callback runner) and the event loop's and worker threads' frames around every callback are
the same for every failure, so they are left out. Chained exceptions (``raise ... from``, or an
exception raised while handling another) keep their own user frames.

Each frame shows its file, line, function and source line, never the values of local variables
(a sensitive step's secrets may be in them). The text is capped at :data:`MAX_TRACEBACK_BYTES`
of UTF-8: a journal entry must fit a DynamoDB item (400 KB), and every answer that shows an
attempt must stay small. A longer one keeps its head (the outermost frames, where ``run()``
called in) and its tail (the innermost frames and the exception, where it was raised), with a
line between them saying how many frames were cut.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import threading
import traceback
from collections.abc import Iterable
from pathlib import Path

__all__ = ["MAX_TRACEBACK_BYTES", "is_user_file", "user_traceback"]

MAX_TRACEBACK_BYTES = 8 * 1024
_MAX_LINE = (
    1024  # characters of one frame or exception line (a minified source line, a huge message)
)

# Frames under these are the machinery around every callback, not the user's code.
_LIBRARY_DIRS = tuple(
    str(path) + os.sep
    for path in (
        Path(__file__).resolve().parents[1],  # the lambda_workflows package (not its examples)
        Path(asyncio.__file__).resolve().parent,
        Path(concurrent.futures.__file__).resolve().parent,
    )
)
_LIBRARY_FILES = frozenset({str(Path(threading.__file__).resolve())})
_EXAMPLES = str(Path(__file__).resolve().parents[1] / "examples") + os.sep


def user_traceback(exc: BaseException) -> str:
    """The exception's traceback as text, without library frames, at most 8 KiB.

    Used for every traceback the engine keeps: a failed step attempt's, a rollback's, an
    uncaught ``run()`` error's.

    Args:
        exc: the exception a step attempt raised (its ``__traceback__`` is read).

    Returns:
        The usual ``Traceback (most recent call last): ...`` text, chained exceptions included,
        with only the frames of the user's code; when too long, its head and tail with a
        line between them saying how many frames were cut.
    """
    summary = traceback.TracebackException.from_exception(exc, capture_locals=False)
    _keep_user_frames(summary, set())
    chunks = [_clip(chunk) for chunk in summary.format()]
    return _capped(chunks)


def _keep_user_frames(summary: traceback.TracebackException, seen: set[int]) -> None:
    """Drop library frames from ``summary`` and every exception chained to it."""
    if id(summary) in seen:  # a cycle of contexts: the traceback module stops there too
        return
    seen.add(id(summary))
    frames = [frame for frame in summary.stack if not _is_library(frame.filename)]
    summary.stack = traceback.StackSummary.from_list(frames)
    for chained in (summary.__cause__, summary.__context__, *(summary.exceptions or ())):
        if chained is not None:
            _keep_user_frames(chained, seen)
    context = summary.__context__
    alone = context is not None and context.__context__ is None and context.__cause__ is None
    if context is not None and alone and not context.stack:
        # An exception the library raised and handled itself, that happened to be in flight
        # when the user's code ran (no frame of theirs): not part of their failure.
        summary.__context__ = None


def is_user_file(filename: str) -> bool:
    """True for a file of the workflow author's code (the bundled examples included), False
    for the library's, asyncio's and the thread machinery's."""
    return not _is_library(filename)


@functools.lru_cache(maxsize=4096)
def _is_library(filename: str) -> bool:
    try:
        path = str(Path(filename).resolve())
    except (OSError, RuntimeError, ValueError):
        path = filename
    if path.startswith(_EXAMPLES):  # workflows, as a user's are: their frames are kept
        return False
    return path in _LIBRARY_FILES or path.startswith(_LIBRARY_DIRS)


def _clip(chunk: str) -> str:
    """One formatted chunk (a frame, an exception line) cut to a readable length per line."""
    lines = chunk.splitlines(keepends=True)
    if all(len(line) <= _MAX_LINE for line in lines):
        return chunk
    return "".join(
        line if len(line) <= _MAX_LINE else line[:_MAX_LINE] + " ...(cut)\n" for line in lines
    )


def _is_frame(chunk: str) -> bool:
    return chunk.startswith('  File "')


def _capped(chunks: list[str]) -> str:
    """The chunks joined; past the cap, the head and the tail are kept with a marker between.

    The tail (the innermost frames and the exception itself, where it was raised) gets three
    quarters of the room and the head (the outermost frames: where ``run()`` called in) the
    rest; a line in between says how many frames and bytes were cut. The last chunk (the
    exception line) is always kept, cut to the room if it must be.
    """
    text = "".join(chunks)
    if len(text.encode()) <= MAX_TRACEBACK_BYTES:
        return text
    room = MAX_TRACEBACK_BYTES - _MARKER_ROOM
    last = chunks[-1].encode()[: room * 3 // 4].decode(errors="ignore")
    tail = [*_kept(reversed(chunks[:-1]), room * 3 // 4 - _size(last))[::-1], last]
    head = _kept(chunks[: len(chunks) - len(tail)], room - sum(map(_size, tail)))
    cut = chunks[len(head) : len(chunks) - len(tail)]
    frames = sum(1 for chunk in cut if _is_frame(chunk))
    removed = len(text.encode()) - sum(map(_size, head + tail))
    marker = (
        f"  ... {frames} frame(s) cut here ({removed:,} bytes): a traceback is kept to "
        f"{MAX_TRACEBACK_BYTES // 1024} KiB, its first and last frames\n"
    )
    return "".join(head) + marker + "".join(tail)


_MARKER_ROOM = 200  # bytes kept free for the line that says what was cut


def _size(chunk: str) -> int:
    return len(chunk.encode())


def _kept(chunks: Iterable[str], room: int) -> list[str]:
    """The chunks, in the order given, up to the first that no longer fits ``room`` bytes."""
    kept: list[str] = []
    for chunk in chunks:
        room -= _size(chunk)
        if room < 0:
            break
        kept.append(chunk)
    return kept
