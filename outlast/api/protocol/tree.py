"""``agent.getTree``: the agent tree of a run, read from its durable log.

The root is the run's graph, with the run's status (the one mapping,
``service/standing.py:agent_status``). Below it, every subgraph the run's log has opened,
nested by namespace (LangGraph's checkpoint namespace split at ``|``,
``["inner:<task id>"]``, the same the thread stream's events carry), in the order they
opened, each with the status its last ``lifecycle`` on the thread stream gave it: the
translator that writes the stream decides it (``subgraphs.py``), so the tree and the
stream never disagree.
"""

from __future__ import annotations

from typing import Any

from outlast.api.context import AppContext
from outlast.api.protocol.subgraphs import Namespace, graph_name
from outlast.api.protocol.translate import RunTranslator
from outlast.errors import RunNotFound
from outlast.service.standing import agent_status, standing
from outlast.store import Run

_PAGE = 1000
_MAX_EVENTS = 50_000  # a tree is a summary: a very long log is read this far


async def run_of(ctx: AppContext, thread_id: str, run_id: str | None) -> Run | None:
    """The run a ``run_id`` names on the thread (a LangGraph run id: a stretch names its
    outlast run), else the thread's latest run."""
    if run_id is not None:
        try:
            return (await ctx.runs.lg_handle(thread_id, run_id))[1].run
        except RunNotFound:
            return None
    return await ctx.store.latest_run(thread_id)


async def of(ctx: AppContext, run: Run) -> dict[str, Any]:
    status = agent_status(run, standing(run, await ctx.runs.open_waits(run)))
    return _node((), run.graph, status, await _subgraphs(ctx, run))


async def _subgraphs(ctx: AppContext, run: Run) -> dict[Namespace, str]:
    """Each subgraph namespace of the log, with its last lifecycle status."""
    translator = RunTranslator(run)
    statuses: dict[Namespace, str] = {}
    after = 0
    while after < min(run.last_seq, _MAX_EVENTS):
        events = await ctx.store.read_events(run.id, after, _PAGE)
        if not events:
            break
        for event in events:
            for part in translator.parts(event):
                if part.method == "lifecycle" and part.namespace:
                    statuses[tuple(part.namespace)] = part.data["event"]
        after = events[-1].seq
    return statuses


def _node(
    namespace: Namespace, graph: str, status: str, statuses: dict[Namespace, str]
) -> dict[str, Any]:
    node: dict[str, Any] = {"namespace": list(namespace), "status": status, "graph_name": graph}
    depth = len(namespace)
    children = [ns for ns in statuses if len(ns) == depth + 1 and ns[:depth] == namespace]
    if children:
        node["children"] = [_node(ns, graph_name(ns), statuses[ns], statuses) for ns in children]
    return node
