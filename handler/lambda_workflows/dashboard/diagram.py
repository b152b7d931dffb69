"""A workflow's diagram: the steps ``run()`` takes, in the shape of its code.

A static picture, drawn from the source (never by running it): which steps come one after the
other, which depend on a branch, repeat in a loop, run together in an ``asyncio.gather``, race,
or sit in a ``try`` whose ``except`` takes steps of its own; sleeps and event waits; the steps a
helper takes where it is called; a step's rollback. :mod:`.diagram_builder` builds it with the
linter's model of ``run()``; the dashboard draws it as SVG.

The model is a tree of :class:`Node`. A *step* node is one ``step.do`` / ``sleep`` /
``sleep_until`` / ``wait_for_event`` call; every other kind is a container whose ``paths`` hold
the nodes in it, each path a sequence (a branch's arms side by side, a loop's body once).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["Diagram", "Node", "NodeKind", "Path"]


class NodeKind(StrEnum):
    """What a node of the diagram stands for."""

    STEP = "step"  # a step call: its name, its method, what it waits for
    BRANCH = "branch"  # if / elif / else, match, a conditional expression: one path per arm
    LOOP = "loop"  # for, while, a comprehension: its one path runs again and again
    PARALLEL = "parallel"  # asyncio.gather: its paths run at the same time
    RACE = "race"  # asyncio.wait(FIRST_COMPLETED), as_completed, a helper racing awaitables
    TRY = "try"  # try / except / finally with steps outside its try path
    CALL = "call"  # a function called in run() (a local one, or a helper taking the step)


@dataclass(frozen=True)
class Path:
    """One way through a container: a label (the arm's condition, ``except X``) and its nodes.

    An arm that takes no step is kept, empty: the diagram shows that it skips them.
    """

    label: str
    nodes: tuple[Node, ...]

    def to_dict(self) -> dict[str, Any]:
        """The path as JSON."""
        return {"label": self.label, "nodes": [node.to_dict() for node in self.nodes]}


@dataclass(frozen=True)
class Node:
    """A step, or a container of paths.

    Attributes:
        kind: what it stands for.
        label: a step's name as written (an f-string keeps its ``{placeholders}``); a
            container's header, in the source's words (``for name in names``).
        line: its line in the source file.
        method: a step's method: ``do``, ``sleep``, ``sleep_until`` or ``wait_for_event``.
        detail: a step's settings in short: its retries and timeout, how long it sleeps, the
            event type it awaits and for how long.
        rollback: the function a ``do`` step's ``rollback=`` names, if any.
        paths: a container's paths; a step's own path holds the steps its callback takes.
    """

    kind: NodeKind
    label: str
    line: int
    method: str | None = None
    detail: str = ""
    rollback: str | None = None
    paths: tuple[Path, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The node as JSON (keys without a value left out)."""
        shown: dict[str, Any] = {"kind": self.kind.value, "label": self.label, "line": self.line}
        if self.method is not None:
            shown["method"] = self.method
        if self.detail:
            shown["detail"] = self.detail
        if self.rollback is not None:
            shown["rollback"] = self.rollback
        if self.paths:
            shown["paths"] = [path.to_dict() for path in self.paths]
        return shown

    def steps(self) -> list[Node]:
        """This node if it is a step, then every step in its paths, in source order."""
        found = [self] if self.kind is NodeKind.STEP else []
        for path in self.paths:
            for node in path.nodes:
                found += node.steps()
        return found


@dataclass(frozen=True)
class Diagram:
    """The diagram of one workflow class's ``run()``.

    Attributes:
        class_name: the class whose ``run()`` it is.
        line: the line of ``run()`` in its file.
        nodes: what ``run()`` does, in order.
        workflow: the name the workflow is registered under (set by whoever serves it).
        module: the module the class is defined in.
        notes: what the reader should know about the drawing (step calls it could not place).
    """

    class_name: str
    line: int
    nodes: tuple[Node, ...]
    workflow: str = ""
    module: str = ""
    notes: tuple[str, ...] = ()

    def steps(self) -> list[Node]:
        """Every step node, in source order."""
        return [step for node in self.nodes for step in node.steps()]

    def to_dict(self) -> dict[str, Any]:
        """The diagram as JSON: what ``GET /_dashboard/workflows/{name}/diagram`` answers."""
        return {
            "workflow": self.workflow,
            "class_name": self.class_name,
            "module": self.module,
            "line": self.line,
            "steps": len(self.steps()),
            "nodes": [node.to_dict() for node in self.nodes],
            "notes": list(self.notes),
        }
