"""What a tool name calls: a graph (its system assistant), or one of the caller's own
assistants (made through the LangGraph face), as LangGraph's server makes every
assistant a tool.

A graph's tool is named after the graph. An assistant's is named after the assistant,
made into a valid MCP tool name; where that name is taken (by a graph, by outlast's own
tools, or by another of the caller's assistants) every assistant that wants it gets its
id's first eight characters appended instead, so a name never depends on which assistant
came first, and the same caller sees the same names in every process and session.
Assistants the app's ``assistants.search`` handler leaves out are not tools, as they are
not listed by the LangGraph face; every graph is (a run names a graph without
``assistants.read``, on every face: whether it runs is ``threads.create_run``'s to say).

An assistant's call runs its graph with the assistant's ``config`` and ``context`` under
what the call's ``_meta`` sends, as a LangGraph run on that assistant would.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from outlast.api.context import AppContext
from outlast.runtime.accept import RunRequest
from outlast.service.assistants import kept
from outlast.service.authz import Uncovered
from outlast.store.base import Assistant

OWN = ("outlast_answer", "outlast_result")
_MOST = 1000  # a client lists tools to show them to a model: a catalog, not a database
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    graph: str
    assistant: Assistant | None  # None: the graph itself
    description: str


async def targets(ctx: AppContext) -> list[Target]:
    """The caller's tools that run something, graphs first, in a stable order."""
    graphs = [
        Target(name, name, None, _graph_description(name))
        for name in ctx.registry.names
        if name not in OWN  # a graph cannot hide outlast's own tools
    ]
    try:
        wanted = await ctx.assistants.search_filter({"metadata": {}, "limit": _MOST, "offset": 0})
    except Uncovered:  # OUTLAST_AUTH_DEFAULT=deny hides the assistants, not the whole list
        return graphs
    found, _ = await ctx.store.search_assistants(
        principal=ctx.runs.owners.scope, limit=_MOST, sort_by="created_at", sort_order="asc"
    )
    mine = kept(found, wanted)
    taken = {t.name for t in graphs} | set(OWN)
    wants = {a.assistant_id: _UNSAFE.sub("_", a.name)[:56] or "assistant" for a in mine}
    counts = Counter(wants.values())
    return graphs + [
        Target(
            _unique(wants[a.assistant_id], a.assistant_id, taken, counts),
            a.graph_id,
            a,
            a.description or f"Run the assistant {a.name!r} (graph {a.graph_id!r}).",
        )
        for a in mine
    ]


async def target_of(ctx: AppContext, name: str) -> Target:
    """What ``name`` calls, or the MCP error for an unknown tool."""
    if name not in OWN:
        for target in await targets(ctx):
            if target.name == name:
                return target
    raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name!r}")


def with_assistant(request: RunRequest, assistant: Assistant | None) -> RunRequest:
    """The call's run with its assistant's ``config`` and ``context`` under the call's."""
    if assistant is None:
        return request
    sent = request.config or {}
    config: dict[str, Any] = {**assistant.config, **sent}
    config["configurable"] = {
        **(assistant.config.get("configurable") or {}),
        **(sent.get("configurable") or {}),
    }
    options = dict(request.options or {})
    if assistant.context:
        options["context"] = {**assistant.context, **(options.get("context") or {})}
    return dataclasses.replace(request, config=config, options=options or None)


def _unique(wanted: str, assistant_id: str, taken: set[str], counts: Counter[str]) -> str:
    if wanted in taken or counts[wanted] > 1:
        return f"{wanted}_{assistant_id[:8]}"
    return wanted


def _graph_description(graph: str) -> str:
    return (
        f"Run the graph {graph!r} as a durable run: its arguments are the graph's input, "
        "its result the run's output."
    )
