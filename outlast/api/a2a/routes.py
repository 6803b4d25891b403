"""The A2A face: one endpoint and one Agent Card per graph, on the SDK's own routes.

``POST /a2a/{graph}`` is the JSON-RPC endpoint (A2A 1.0: ``SendMessage``,
``SendStreamingMessage``, ``GetTask``, ``ListTasks``, ``CancelTask``, ``SubscribeToTask``;
clients send ``A2A-Version: 1.0``), and ``GET /a2a/{graph}/.well-known/agent-card.json``
its card, where ``A2ACardResolver(client, base_url=".../a2a/{graph}")`` looks. The
routes, request parsing, SSE and error codes are the SDK's (``a2a.server.routes``); the
handler (``handler.py``) answers from the store. The caller's principal is the one the
API key gave the request (``api/auth.py``), as on every other face.
"""

from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from google.protobuf.json_format import MessageToDict
from starlette.requests import Request

from outlast import __version__
from outlast.api.a2a.handler import CTX, GRAPH, OutlastHandler
from outlast.api.edge import ctx_of
from outlast.errors import OutlastError

PREFIX = "/a2a"
CARD_PATH = "/.well-known/agent-card.json"  # where A2ACardResolver looks, under a base URL


class AgentNotFound(OutlastError):
    status = 404
    title = "Agent not found"


class _Context(DefaultServerCallContextBuilder):
    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[CTX] = ctx_of(request)
        context.state[GRAPH] = request.path_params.get("graph_id", "")
        return context


def card(graph: str, base_url: str) -> AgentCard:
    return AgentCard(
        name=graph,
        description=f"The outlast graph {graph!r}: every task is a durable run",
        version=__version__,
        supported_interfaces=[
            AgentInterface(
                url=f"{base_url}{PREFIX}/{graph}",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["application/json", "text/plain"],
        skills=[
            AgentSkill(
                id=graph,
                name=graph,
                description=f"Run {graph}: a text message is its user message, a data part "
                "its input; a follow-up message answers what it asks",
                tags=["outlast", "langgraph"],
            )
        ],
    )


def install(app: FastAPI) -> None:
    handler = OutlastHandler()

    @app.get(
        PREFIX + "/{graph_id}/.well-known/agent-card.json", tags=["a2a"], include_in_schema=False
    )
    async def agent_card(graph_id: str, request: Request) -> JSONResponse:
        """The graph's Agent Card; its endpoint's URL is this server's, as the caller
        reached it."""
        if graph_id not in ctx_of(request).registry.names:
            raise AgentNotFound(f"no graph {graph_id!r} here")
        base = str(request.base_url).rstrip("/")
        return JSONResponse(MessageToDict(card(graph_id, base)))

    # Starlette routes, outside the OpenAPI document: a JSON-RPC endpoint has one path and
    # one body for every method, which an OpenAPI operation cannot describe usefully; the
    # Agent Card is its description.
    app.router.routes.extend(
        create_jsonrpc_routes(
            handler,
            rpc_url=f"{PREFIX}/{{graph_id}}",
            context_builder=_Context(),
            enable_v0_3_compat=True,  # message/send, tasks/resubscribe, ... of A2A 0.3 clients
        )
    )
