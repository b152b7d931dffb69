"""An instance's recorded history in the export format, and back.

A history is what replay reads: the instance's params and version, every journal entry of its
current generation and every event sent to it. ``GET /workflows/{name}/instances/{id}/history``
and ``lambda-workflows instances export`` write it; :class:`lambda_workflows.testing.Replayer` reads
it. The format (a JSON object, ``"format": "workflows-history"``, ``"format_version": 1``) is
documented in docs/semantics.md. Values (params, step results, event payloads) are JSON
values; times are epoch seconds.

A sensitive step's result (``{"sensitive": "output"}``) is exported as ``"[REDACTED]"``:
replaying a history checks the names, kinds and order of the steps ``run()`` calls, which need
no result, so nothing secret leaves the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import REDACTED, EntryKind, ErrorInfo, EventRecord, JournalEntry

from .ports import InstanceState

FORMAT = "workflows-history"
FORMAT_VERSION = 1
_VALUE_FIELDS = ("result",)  # encoded JSON text in the journal, a JSON value in a history
_ERROR_FIELDS = ("error",)


class HistoryFormatError(ValueError):
    """A file or object that is not a history this version of the engine can read."""


@immutable
class History:
    """One instance's history: what a replay of it reads.

    ``status`` is the instance's status when it was exported: a ``complete`` or ``errored``
    history is finished (``run()`` made no call after the recorded ones).
    """

    workflow: str
    id: str
    workflow_version: str
    params: Any
    generation: int
    status: str
    created_at: float
    entries: tuple[JournalEntry, ...]
    events: tuple[EventRecord, ...]

    @property
    def finished(self) -> bool:
        """True when ``run()`` returned or raised: it calls nothing after the recorded steps."""
        return self.status in ("complete", "errored")

    def to_dict(self) -> dict[str, Any]:
        """The export format (sensitive results as ``"[REDACTED]"``)."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "workflow": self.workflow,
            "id": self.id,
            "workflow_version": self.workflow_version,
            "status": self.status,
            "created_at": self.created_at,
            "params": self.params,
            "generation": self.generation,
            "entries": [entry_to_dict(entry) for entry in self.entries],
            "events": [event_to_dict(event) for event in self.events],
        }

    @classmethod
    def from_dict(cls, shown: Mapping[str, Any]) -> History:
        """Read the export format.

        Raises:
            HistoryFormatError: not a history, or one of a newer format version.
        """
        if not isinstance(shown, Mapping) or shown.get("format") != FORMAT:
            raise HistoryFormatError(
                f'not a workflow history: expected an object with "format": "{FORMAT}" (as '
                "lambda-workflows instances export NAME ID writes)"
            )
        if shown.get("format_version") != FORMAT_VERSION:
            raise HistoryFormatError(
                f"history format_version {shown.get('format_version')!r} is not supported; "
                f"this engine reads format_version {FORMAT_VERSION}"
            )
        try:
            return cls(
                workflow=str(shown["workflow"]),
                id=str(shown["id"]),
                workflow_version=str(shown.get("workflow_version") or "1"),
                params=shown.get("params"),
                generation=int(shown.get("generation") or 1),
                status=str(shown.get("status") or "unknown"),
                created_at=float(shown.get("created_at") or 0.0),
                entries=tuple(_entry(e) for e in shown.get("entries") or ()),
                events=tuple(_event(e) for e in shown.get("events") or ()),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise HistoryFormatError(
                f"history of {shown.get('id')!r} is malformed: {exc}"
            ) from None


def history_of(state: InstanceState) -> History:
    """The history of a loaded instance (its store's ``load()``)."""
    record = state.record
    return History(
        workflow=record.workflow,
        id=record.id,
        workflow_version=record.workflow_version,
        params=json.loads(record.params) if record.params else None,
        generation=record.generation,
        status=str(record.status),
        created_at=record.created_at,
        entries=tuple(sorted(state.entries, key=lambda e: (e.at, e.key))),
        events=tuple(sorted(state.events, key=lambda e: e.id)),
    )


def load(path: str | Path) -> History:
    """Read a history file (JSON in the export format)."""
    try:
        shown = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise HistoryFormatError(f"{path} is not JSON: {exc}") from None
    return History.from_dict(shown)


def dumps(history: History) -> str:
    """The export format as JSON text (indented, keys in a stable order)."""
    return json.dumps(history.to_dict(), indent=2) + "\n"


def entry_to_dict(entry: JournalEntry) -> dict[str, Any]:
    """One entry as the export format shows it (a sensitive result as ``"[REDACTED]"``)."""
    shown: dict[str, Any] = {}
    for f in fields(entry):
        value = getattr(entry, f.name)
        if f.name == "kind":
            value = str(value)
        elif f.name in _VALUE_FIELDS and value is not None:
            value = REDACTED if entry.sensitive else json.loads(value)
        elif f.name in _ERROR_FIELDS and value is not None:
            value = value.with_traceback()
        shown[f.name] = value
    return shown


def _entry(shown: Mapping[str, Any]) -> JournalEntry:
    values = dict(shown)
    values["kind"] = EntryKind(values["kind"])
    if values.get("result") is not None:
        values["result"] = json.dumps(values["result"])
    values["error"] = ErrorInfo.from_dict(values.get("error"))
    known = {f.name for f in fields(JournalEntry)}
    return JournalEntry(**{k: v for k, v in values.items() if k in known})


def event_to_dict(event: EventRecord) -> dict[str, Any]:
    """One event as the export format shows it (its payload a JSON value)."""
    shown = {f.name: getattr(event, f.name) for f in fields(event)}
    shown["payload"] = json.loads(event.payload) if event.payload else None
    return shown


def _event(shown: Mapping[str, Any]) -> EventRecord:
    values = dict(shown)
    values["payload"] = json.dumps(values.get("payload"))
    known = {f.name for f in fields(EventRecord)}
    return EventRecord(**{k: v for k, v in values.items() if k in known})
