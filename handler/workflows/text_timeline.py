"""Rendering an instance's status (the HTTP API's JSON) as a readable step timeline."""

from __future__ import annotations

import json
from typing import Any


def render(status: dict[str, Any]) -> str:
    """A few lines: the instance, one line per step, and its output or error."""
    lines = [f"{status.get('workflow', '?')}/{status.get('id', '?')}: {status.get('status')}"]
    for step in status.get("steps", []):
        error = step.get("error")
        detail = f"error {error['name']}: {error['message']}" if error else ""
        if not error and step.get("type") == "do":
            detail = f"-> {json.dumps(step.get('output'))[:80]}"
        lines.append(
            f"  {step.get('type', ''):<12} {step.get('name', '')!r:<34} "
            f"{step.get('status', ''):<9} attempts={step.get('attempts')} "
            f"{step.get('start') or ''} .. {step.get('end') or '…'}  {detail}".rstrip()
        )
    if status.get("error"):
        lines.append(f"  error: {status['error']['name']}: {status['error']['message']}")
    else:
        lines.append(f"  output: {json.dumps(status.get('output'))[:300]}")
    return "\n".join(lines)
