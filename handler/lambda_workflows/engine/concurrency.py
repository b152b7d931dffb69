"""A workflow's ``concurrency`` limit: how many of its instances may run at once.

Declared on the class (``concurrency = 5``) and checked when the class is defined; enforced by the
runner through the workflow's slots (see :mod:`lambda_workflows.engine.instances.slots`).
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidWorkflowError

MAX_CONCURRENCY = 10_000


def check_concurrency(cls: type) -> None:
    """Raise InvalidWorkflowError when the class's ``concurrency`` is not 1 to 10,000."""
    limit = cls.__dict__["concurrency"]
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_CONCURRENCY:
        raise InvalidWorkflowError(
            f"workflow class {cls.__module__}.{cls.__qualname__}: concurrency must be a whole "
            f"number from 1 to {MAX_CONCURRENCY:,} (at most that many instances run at once), "
            f"or None for no limit; got {limit!r}"
        )


def limit_of(cls: Any) -> int | None:
    """The ``concurrency`` a workflow class declares, or None (no limit)."""
    limit = getattr(cls, "concurrency", None)
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else None
