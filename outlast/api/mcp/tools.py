"""What ``tools/list`` shows: every graph and every assistant of the caller a tool
(``targets.py``), and the two tools of outlast's own.

A graph's tool takes the graph's input as its arguments: its input schema is the graph's
input JSON schema, computed as the LangGraph face computes it for ``/assistants/{id}/
schemas`` (``api/lg/assistant_graphs.py``), once per graph and process (a graph does not
change while the process lives). MCP wants an object at a tool schema's root; a graph
whose input schema is not one (or cannot be computed) takes any object.

``outlast_answer`` answers what a run waits for when the client could not be asked
through elicitation, and ``outlast_result`` waits for a run's end again (after the
connection that called it was lost). Both name the run by the ``run_id`` a waiting
result gives.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from outlast.api.context import AppContext
from outlast.api.lg.assistant_graphs import schemas
from outlast.api.mcp.targets import OWN, targets
from outlast.graph.factories import Access
from outlast.store.items import for_principal

ANSWER, RESULT = OWN
_ANY_OBJECT: dict[str, Any] = {"type": "object"}
_RUN_ID = {"type": "string", "format": "uuid", "description": "the run's id (a result's run_id)"}


def _own_tools() -> list[types.Tool]:
    return [
        types.Tool(
            name=ANSWER,
            description="Answer what a run waits for (the question a waiting result gave), "
            "then wait for the run as its call did: its output, or its next question.",
            input_schema={
                "type": "object",
                "properties": {
                    "run_id": _RUN_ID,
                    "answer": {"description": "the answer, of the shape the question asks"},
                    "wait_id": {
                        "type": "string",
                        "description": "which question, when the run asks several at once",
                    },
                },
                "required": ["run_id", "answer"],
            },
        ),
        types.Tool(
            name=RESULT,
            description="Wait for a run started by an earlier call (its connection lost): "
            "its output, or the question it waits on.",
            input_schema={
                "type": "object",
                "properties": {"run_id": _RUN_ID},
                "required": ["run_id"],
            },
        ),
    ]


class Catalog:
    """The tools of this process's graphs; each graph's schema computed once."""

    def __init__(self) -> None:
        self._schemas: dict[str, dict[str, Any]] = {}
        self._lock = asyncio.Lock()

    async def tools(self, ctx: AppContext) -> list[types.Tool]:
        listed = [
            types.Tool(
                name=target.name,
                description=target.description,
                input_schema=await self.input_schema(ctx, target.graph),
                execution=types.ToolExecution(task_support="optional"),
            )
            for target in await targets(ctx)
        ]
        return listed + _own_tools()

    async def input_schema(self, ctx: AppContext, name: str) -> dict[str, Any]:
        async with self._lock:
            if name not in self._schemas:
                self._schemas[name] = await _input_schema(ctx, name)
            return self._schemas[name]


async def _input_schema(ctx: AppContext, name: str) -> dict[str, Any]:
    use = Access(
        "assistants.read",
        ctx.store.checkpointer(),
        for_principal(ctx.store.items, ctx.principal, shared=ctx.authz.shared),
        {"configurable": {"graph_id": name}},
        ctx.principal,
    )
    try:
        async with ctx.registry.open(name, use) as graph:
            found = schemas(name, graph)["input_schema"]
    except Exception:  # a factory that cannot be built to be looked at: any object
        return dict(_ANY_OBJECT)
    if isinstance(found, dict) and found.get("type") == "object":
        return found
    return dict(_ANY_OBJECT)


def run_id_argument(arguments: dict[str, Any] | None) -> str:
    run_id = (arguments or {}).get("run_id")
    if not isinstance(run_id, str) or not run_id:
        raise MCPError(types.INVALID_PARAMS, "run_id: a run's id (a string) is required")
    return run_id
