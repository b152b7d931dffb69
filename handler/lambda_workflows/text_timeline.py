"""Rendering an instance's status (the HTTP API's JSON) as a readable step timeline."""

from __future__ import annotations

import json
from typing import Any

_INDENT = "      "  # under a step's line: its attempts and traceback


def render(status: dict[str, Any]) -> str:
    """A few lines: the instance, one line per step, and its output or error.

    Under a step that failed at least once come its attempts (when each ran, how it failed)
    and, when its last attempt failed, that attempt's traceback. A wait shows the event type
    it awaits and the payload it received; a sleep shows when it wakes up. Rollback rows come
    last, and a last line says how the rollbacks went.
    """
    lines = [f"{status.get('workflow', '?')}/{status.get('id', '?')}: {status.get('status')}"]
    for step in status.get("steps", []):
        lines.append(
            f"  {step.get('type', ''):<12} {step.get('name', '')!r:<34} "
            f"{step.get('status', ''):<9} attempts={step.get('attempts')} "
            f"{step.get('start') or ''} .. {step.get('end') or '…'}  {_detail(step)}".rstrip()
        )
        lines.extend(_attempt_lines(step.get("attempt_history") or []))
    if status.get("error"):
        lines.append(f"  error: {status['error']['name']}: {status['error']['message']}")
    else:
        lines.append(f"  output: {json.dumps(status.get('output'))[:300]}")
    if status.get("rollback"):
        lines.append(_rollback_line(status["rollback"]))
    return "\n".join(lines)


def _rollback_line(rollback: dict[str, Any]) -> str:
    """How the rollbacks went; a failed one is named, and its error (a rollback failure, not
    the forward one above)."""
    line = f"  rollback: {rollback.get('status')}"
    failed, error = rollback.get("failed_step"), rollback.get("error")
    if failed:
        line += f" at the rollback of {failed['name']!r} #{failed['count']}"
    if error:
        line += f": {error['name']}: {error['message']}"
    cause = rollback.get("cause") or {}
    if rollback.get("ends_as") == "terminated" or rollback.get("status") == "running":
        line += f" (cause: {cause.get('name')}: {cause.get('message')})"
    return line


def _detail(step: dict[str, Any]) -> str:
    """What a step's line ends with: its result, its error, what it awaits or when it wakes."""
    error = step.get("error")
    failed = f"error {error['name']}: {error['message']}" if error else ""
    kind = step.get("type")
    if kind == "waitForEvent":
        awaited = f"awaits {step['event_type']!r}" if step.get("event_type") else ""
        if error:
            return f"{awaited}  {failed}".strip()
        if step.get("status") == "complete" and step.get("output_truncated"):
            return f"{awaited} -> (over 64 KiB: lambda-workflows instances step shows it)".strip()
        if step.get("status") == "complete":
            return f"{awaited} -> {json.dumps(step.get('output'))[:80]}".strip()
        return awaited
    if kind == "sleep":
        return f"wakes at {step['wake_at']}" if step.get("wake_at") else ""
    child = step.get("child")
    if kind == "runWorkflow" and child and not error and step.get("status") != "complete":
        return f"runs child {child['workflow']}/{child['id']}"
    if kind == "rollback":
        return failed or ("undone" if step.get("status") == "complete" else "")
    if error:
        return failed
    if step.get("output_truncated"):  # left out of the answer for its size
        return "-> (over 64 KiB: lambda-workflows instances step shows it)"
    return f"-> {json.dumps(step.get('output'))[:80]}"


def _attempt_lines(history: list[dict[str, Any]]) -> list[str]:
    """A step's attempts when any failed, then the last attempt's traceback if it failed."""
    if all(attempt.get("success") for attempt in history):
        return []
    lines = []
    for attempt in history:
        error = attempt.get("error")
        outcome = f"{error['name']}: {error['message']}" if error else "ok"
        lines.append(
            f"{_INDENT}attempt {attempt.get('attempt')}  {attempt.get('start') or '?'} .. "
            f"{attempt.get('end') or '?'}  {outcome}"
        )
    last = history[-1].get("error") or {}
    if last.get("traceback"):
        lines.extend(_INDENT + line for line in str(last["traceback"]).rstrip("\n").splitlines())
    return lines
