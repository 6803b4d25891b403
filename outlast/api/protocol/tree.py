"""``agent.getTree``: the agent tree of a run, read from its durable log.

The root is the run's graph, with the run's status (the one mapping,
``service/standing.py:agent_status``). Below it, every subgraph namespace the run's log
has events from (a node's update, a custom event), nested by namespace: a namespace is
LangGraph's checkpoint namespace split at ``|`` (``["inner:<task id>"]``), the same the
thread stream's events carry. A subgraph is ``completed`` once the log has a later event
of its parent; until then it has its parent's status (running, interrupted, failed).
"""

from __future__ import annotations

from typing import Any

from outlast.api.context import AppContext
from outlast.api.lg.access import lg_run_or_404
from outlast.errors import RunNotFound
from outlast.service.standing import agent_status, standing
from outlast.store import Run
from outlast.vocabulary import EventType

_PAGE = 1000
_MAX_EVENTS = 50_000  # a tree is a summary: a very long log is read this far
_WITH_NAMESPACE = (EventType.NODE_UPDATED, EventType.CUSTOM)


async def run_of(ctx: AppContext, thread_id: str, run_id: str | None) -> Run | None:
    """The run a ``run_id`` names on the thread (a LangGraph run id: a stretch names its
    outlast run), else the thread's latest run."""
    if run_id is not None:
        try:
            return (await lg_run_or_404(ctx, thread_id, run_id)).run
        except RunNotFound:
            return None
    return await ctx.store.latest_run(thread_id)


async def of(ctx: AppContext, run: Run) -> dict[str, Any]:
    status = agent_status(run, standing(run, await ctx.runs.open_waits(run)))
    last_seen = await _namespaces(ctx, run)
    return _node((), run.graph, status, last_seen)


async def _namespaces(ctx: AppContext, run: Run) -> dict[tuple[str, ...], int]:
    """Each namespace of the log, with the seq of the last event in it or below it."""
    seen: dict[tuple[str, ...], int] = {}
    after = 0
    while after < min(run.last_seq, _MAX_EVENTS):
        events = await ctx.store.read_events(run.id, after, _PAGE)
        if not events:
            break
        for e in events:
            if e.type in _WITH_NAMESPACE:
                ns = str(e.data.get("ns") or "")
                parts = tuple(ns.split("|")) if ns else ()
                for depth in range(len(parts) + 1):  # an event of a subgraph is its parents' too
                    seen[parts[:depth]] = e.seq
        after = events[-1].seq
    return seen


def _node(
    namespace: tuple[str, ...], graph: str, status: str, last_seen: dict[tuple[str, ...], int]
) -> dict[str, Any]:
    node: dict[str, Any] = {"namespace": list(namespace), "status": status, "graph_name": graph}
    depth = len(namespace)
    children = [ns for ns in last_seen if len(ns) == depth + 1 and ns[:depth] == namespace]
    if children:
        mine = last_seen.get(namespace, 0)
        node["children"] = [
            _node(ns, ns[-1].split(":")[0], _child_status(status, last_seen[ns], mine), last_seen)
            for ns in sorted(children, key=lambda ns: last_seen[ns])
        ]
    return node


def _child_status(parent: str, child_last: int, parent_last: int) -> str:
    if parent == "completed" or parent_last > child_last:
        return "completed"
    return parent
