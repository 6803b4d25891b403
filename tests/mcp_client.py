"""The ``mcp`` SDK's client on an outlast server (the MCP face's tests): a session over
streamable HTTP, and its dispatcher for the 2025-11-25 task requests the SDK's session
has no method for."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession, ElicitationFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher


@dataclass
class Peer:
    """An MCP client session, and its dispatcher for what the session has no method for
    (a task-augmented tools/call: the SDK checks tools/call results as CallToolResult)."""

    session: ClientSession
    wire: JSONRPCDispatcher[Any]

    async def call_as_task(self, name: str, arguments: dict[str, Any], **meta: Any) -> str:
        params: dict[str, Any] = {"name": name, "arguments": arguments, "task": {"ttl": 60_000}}
        if meta:
            params["_meta"] = meta
        raw = await self.wire.send_raw_request("tools/call", params)
        return types.CreateTaskResult.model_validate(raw, by_name=False).task.task_id

    async def task(self, task_id: str) -> types.GetTaskResult:
        request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
        return await self.session.send_request(request, types.GetTaskResult)

    async def task_result(self, task_id: str) -> types.CallToolResult:
        params = types.GetTaskPayloadRequestParams(task_id=task_id)
        request = types.GetTaskPayloadRequest(params=params)
        return await self.session.send_request(request, types.CallToolResult)

    async def cancel_task(self, task_id: str) -> types.CancelTaskResult:
        request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
        return await self.session.send_request(request, types.CancelTaskResult)


@contextlib.asynccontextmanager
async def connect(
    url: str, key: str | None = None, elicit: ElicitationFnT | None = None
) -> AsyncIterator[Peer]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
    ):
        wire: JSONRPCDispatcher[Any] = JSONRPCDispatcher(read, write)
        async with ClientSession(dispatcher=wire, elicitation_callback=elicit) as client:
            await client.initialize()
            yield Peer(client, wire)
