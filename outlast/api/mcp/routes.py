"""The MCP face: ``/mcp``, the ``mcp`` SDK's streamable HTTP transport on outlast's runs.

The SDK's low-level ``Server`` answers the protocol (sessions, SSE, JSON-RPC, error
codes); its handlers only translate to the run service (``calls.py``, ``tasks.py``),
as the A2A face does. The endpoint sits behind outlast's authentication like every
route: the caller's principal is the one the API key, or the app's ``auth.py``, gave
the request (``caller``, the one place it is looked up, with the request's ``Authz``),
tool calls run as it, and the SDK binds each MCP session to it (a session id presented
by another principal is a session that does not exist). Under an ``auth.py`` a tool
call asks ``threads.create_run`` (a refusal is an MCP error) and runs as the user
(``langgraph_auth_user`` in its config), as a run of the other faces does.

Sessions are kept in the process (the SDK's ``StreamableHTTPSessionManager``, started
with the app); runs are not: after a restart a client opens a new session and finds
its runs again (``tasks/get``, ``tasks/result``, ``outlast_result``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
from fastapi import FastAPI
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from outlast import __version__
from outlast.api.context import AppContext
from outlast.api.edge import ctx_of
from outlast.api.mcp import PATH, calls, tasks
from outlast.api.mcp.targets import target_of
from outlast.api.mcp.tools import ANSWER, RESULT, Catalog, run_id_argument
from outlast.errors import OutlastError
from outlast.service.handle import RunHandle, Verb

_MANAGER = "mcp_sessions"  # app.state: this lifespan's session manager


def caller(mcp: ServerRequestContext[Any, Any]) -> AppContext:
    """The app's context as the request's principal sees it: the one place an MCP
    request's caller is found."""
    request = mcp.request
    if not isinstance(request, Request):
        raise MCPError(types.INTERNAL_ERROR, "the MCP face is served over HTTP only")
    return ctx_of(request)


class _OutlastServer(Server[Any]):
    """The SDK's server, with the task capabilities it cannot derive from handlers."""

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        found = super().get_capabilities(
            notification_options,
            experimental_capabilities,
            extensions,
            protocol_version=protocol_version,
        )
        found.tasks = types.ServerTasksCapability(
            list=types.TasksListCapability(),
            cancel=types.TasksCancelCapability(),
            requests=types.ServerTasksRequestsCapability(
                tools=types.TasksToolsCapability(call=types.TasksCallCapability())
            ),
        )
        return found


class Face:
    """The server and what its handlers share: the tool catalog, the calls in flight."""

    def __init__(self) -> None:
        self.catalog = Catalog()
        self.inflight = calls.Inflight()
        server = _OutlastServer(
            "outlast",
            version=__version__,
            instructions="Each tool runs an outlast graph as a durable run. A run that waits "
            f"for a person asks through elicitation, or says how to answer ({ANSWER}).",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )
        server.middleware.append(self.task_calls)
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, _bound(tasks.get))
        server.add_request_handler(
            "tasks/result", types.GetTaskPayloadRequestParams, _bound(tasks.result)
        )
        server.add_request_handler(
            "tasks/cancel", types.CancelTaskRequestParams, _bound(tasks.cancel)
        )
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, _bound(tasks.listed))
        server.add_notification_handler(
            "notifications/cancelled", types.CancelledNotificationParams, self.cancelled
        )
        self.server = server

    async def list_tools(
        self, mcp: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await self.catalog.tools(caller(mcp)))

    async def call_tool(
        self, mcp: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        ctx = caller(mcp)
        arguments = params.arguments or {}
        if params.name in (ANSWER, RESULT):
            verb: Verb = "answer" if params.name == ANSWER else "read"
            handle = await calls.handle_of(ctx, run_id_argument(arguments), verb)
            key = calls.call_key(mcp)
            if params.name == ANSWER:
                handle = await calls.answer(ctx, handle, arguments, key)
        else:
            target = await target_of(ctx, params.name)
            run, key = await calls.start(ctx, mcp, target, arguments)
            handle = RunHandle(ctx.runs, run)
        session = calls.session_of(mcp)
        self.inflight.add(session, mcp.request_id, handle.id)
        try:
            found = await calls.follow(ctx, mcp, handle, key)
        except Exception:  # not on cancellation (a BaseException): see Inflight
            self.inflight.done(session, mcp.request_id)
            raise
        self.inflight.done(session, mcp.request_id)
        return found

    async def cancelled(
        self, mcp: ServerRequestContext[Any, Any], params: types.CancelledNotificationParams
    ) -> None:
        """The client cancelled a call: its run is cancelled (a dropped connection is not
        a cancellation, and leaves the run going)."""
        run_id = self.inflight.take(calls.session_of(mcp), params.request_id)
        if run_id is None:
            return
        ctx = caller(mcp)
        try:
            handle = await ctx.runs.handle(run_id, "cancel")
        except OutlastError:  # another principal's request id on this session: not its run
            return
        await handle.cancel(params.reason or "cancelled by the MCP client")

    async def task_calls(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """A ``Server.middleware`` (its parameter names are the protocol's)."""
        if tasks.wants_task(ctx):
            return await tasks.task_call(caller(ctx), ctx, call_next)
        return await call_next(ctx)


def _bound(handler: Any) -> Any:
    """A ``tasks/*`` handler given the caller's context."""

    async def handle(mcp: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        found: HandlerResult = await handler(caller(mcp), mcp, params)
        return found

    return handle


class _Endpoint:
    """``/mcp`` as an ASGI app: the caller's principal handed to the SDK (which binds a
    session to the principal that opened it), then the session manager."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = scope.get("state", {}).get("principal", "")
        token = AccessToken(token="", client_id="outlast", scopes=[], subject=principal)
        scope["user"] = AuthenticatedUser(token)
        manager: StreamableHTTPSessionManager = getattr(self.app.state, _MANAGER)
        await manager.handle_request(scope, receive, send)


def install(app: FastAPI) -> None:
    app.state.mcp_face = Face()
    # A Starlette route outside the OpenAPI document, as A2A's: one path for every
    # JSON-RPC method, described by the protocol's own discovery (tools/list).
    app.router.routes.append(Route(PATH, _Endpoint(app), methods=["GET", "POST", "DELETE"]))


@contextlib.asynccontextmanager
async def running(app: FastAPI) -> AsyncIterator[None]:
    """The MCP sessions of one lifespan of the app (a manager runs once)."""
    face: Face = app.state.mcp_face
    manager = StreamableHTTPSessionManager(app=face.server)
    setattr(app.state, _MANAGER, manager)
    async with manager.run():
        yield
