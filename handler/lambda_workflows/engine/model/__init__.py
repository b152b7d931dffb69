"""The engine's records: instances, journal entries, events, and what ``status()`` shows.

These are plain classes with no storage concerns; each adapter maps them to its own format.
The journal is append-only: an entry, once recorded, is never changed. One module per
concept, every name importable from here:

- :mod:`.instances`: the instance item (``InstanceRecord``) and what it carries: its status,
  its ``InstanceRef``, its error, its parent and its rollback;
- :mod:`.entries`: what its journal and event buffer hold (``JournalEntry``, ``EventRecord``,
  and the ``ReceivedEvent`` a wait returns);
- :mod:`.views`: what ``status()`` shows (``InstanceStatusView``, its ``StepInfo`` rows).
"""

from __future__ import annotations

from .entries import (
    ATTEMPT_KINDS,
    CHILD_EVENT_PREFIX,
    REDACTED,
    ROLLBACK_KINDS,
    EntryKind,
    EventRecord,
    JournalEntry,
    ReceivedEvent,
    event_id,
    event_timestamp,
)
from .instances import (
    FINISHED,
    RUNNABLE,
    ErrorInfo,
    FailedStep,
    InstanceRecord,
    InstanceRef,
    InstanceStatus,
    ParentRef,
    RollbackInfo,
    RollbackStatus,
    first_generation,
)
from .views import (
    AttemptInfo,
    InstanceStatusView,
    InstanceUsage,
    StepInfo,
    StepStatus,
)

__all__ = [
    "ATTEMPT_KINDS",
    "CHILD_EVENT_PREFIX",
    "FINISHED",
    "REDACTED",
    "ROLLBACK_KINDS",
    "RUNNABLE",
    "AttemptInfo",
    "EntryKind",
    "ErrorInfo",
    "EventRecord",
    "FailedStep",
    "InstanceRecord",
    "InstanceRef",
    "InstanceStatus",
    "InstanceStatusView",
    "InstanceUsage",
    "JournalEntry",
    "ParentRef",
    "ReceivedEvent",
    "RollbackInfo",
    "RollbackStatus",
    "StepInfo",
    "StepStatus",
    "event_id",
    "event_timestamp",
    "first_generation",
]
