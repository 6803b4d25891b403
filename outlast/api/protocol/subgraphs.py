"""The ``lifecycle`` of a run's subgraphs, derived from its log at read time.

The log has no event of its own for a subgraph starting or ending: LangGraph streams a
subgraph's parts under its namespace (``["inner:<task id>"]``) and, when it returns, the
parent's ``node.updated`` of the task that ran it (node ``inner``, task ``<task id>``).
So a subgraph ``started`` just before the first part under its namespace, ``completed``
with its task's update in the parent, ``interrupted`` when the run parks while it is
open, ``running`` again at its next part after that, and ``failed`` with the run. The
same log gives the same lifecycle, wherever a reader starts (the translator is primed
from the run's first event), so these parts have durable ids like every other.
"""

from __future__ import annotations

from typing import Any

Namespace = tuple[str, ...]
# (status, namespace, extra data): turned into a ``lifecycle`` part by the translator
Change = tuple[str, Namespace, dict[str, Any]]


def graph_name(namespace: Namespace) -> str:
    """A subgraph's name: the node that runs it (LangGraph's namespace segment is
    ``<node>:<task id>``)."""
    return namespace[-1].split(":")[0]


class Subgraphs:
    """The subgraphs of one run that the log has opened, in the order they opened."""

    def __init__(self) -> None:
        self._open: list[Namespace] = []
        self._paused: set[Namespace] = set()

    def entering(self, namespace: Namespace) -> list[Change]:
        """Before a part under ``namespace``: each enclosing subgraph not yet open starts,
        outermost first, and each one parked by an interrupt runs again."""
        out: list[Change] = []
        for depth in range(1, len(namespace) + 1):
            ns = namespace[:depth]
            if ns not in self._open:
                self._open.append(ns)
                out.append(("started", ns, {}))
            elif ns in self._paused:
                self._paused.discard(ns)
                out.append(("running", ns, {}))
        return out

    def would_change(self, namespace: Namespace) -> bool:
        """A part under ``namespace`` would start or resume a subgraph first."""
        return any(
            namespace[:depth] not in self._open or namespace[:depth] in self._paused
            for depth in range(1, len(namespace) + 1)
        )

    def task_done(self, parent: Namespace, node: Any, task: Any) -> list[Change]:
        """The parent's update of the task that ran a subgraph: it and what it still
        had open completed, innermost first."""
        if not node or not task:
            return []
        return self._close((*parent, f"{node}:{task}"))

    def parked(self) -> list[Change]:
        """The run waits: every open subgraph is interrupted (the one that asked, and
        the ones around it), innermost first."""
        changed = [ns for ns in reversed(self._open) if ns not in self._paused]
        self._paused.update(changed)
        return [("interrupted", ns, {}) for ns in changed]

    def ended(self, status: str, **extra: Any) -> list[Change]:
        """The run ended: what is still open ends with it, innermost first."""
        closing = list(reversed(self._open))
        self._open.clear()
        self._paused.clear()
        return [(status, ns, dict(extra)) for ns in closing]

    def _close(self, root: Namespace) -> list[Change]:
        if root not in self._open:
            return []
        inside = [ns for ns in self._open if ns[: len(root)] == root]
        for ns in inside:
            self._open.remove(ns)
            self._paused.discard(ns)
        return [("completed", ns, {}) for ns in reversed(inside)]
