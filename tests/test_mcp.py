"""The MCP face through the ``mcp`` SDK's own client (streamable HTTP, ``ClientSession``):
every graph a tool, every call a durable run, on both backends."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext, ClientSession, ElicitationFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from outlast.store import Store
from tests.harness import ALICE, BOB, KEYS, Server, eventually, make_settings, serve


@contextlib.asynccontextmanager
async def session(
    url: str, key: str | None = None, elicit: ElicitationFnT | None = None
) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) as client,
    ):
        await client.initialize()
        yield client


@pytest.fixture
async def srv(store: Store, tmp_path: Path) -> AsyncIterator[Server]:
    async with serve(store, make_settings(data_dir=tmp_path)) as server:
        yield server


async def test_every_graph_is_a_tool_with_its_input_schema(srv: Server) -> None:
    async with session(srv.url) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert {"lg_chat", "lg_hitl", "lg_slow", "outlast_answer", "outlast_result"} <= set(listed)
    hitl = listed["lg_hitl"].input_schema
    assert hitl["type"] == "object" and "topic" in hitl["properties"]
    assert "messages" in listed["lg_chat"].input_schema["properties"]


async def test_a_call_is_a_run_and_returns_its_output(srv: Server, store: Store) -> None:
    async with session(srv.url) as client:
        got = await client.call_tool("lg_chat", {"messages": [{"role": "user", "content": "hi"}]})
    assert not got.is_error
    run_id = got.meta["outlast/run_id"]  # type: ignore[index]
    assert got.structured_content["messages"][-1]["content"].startswith("echo(hi)")
    run = await store.get_run(run_id)
    assert run is not None and run.status == "completed" and run.graph == "lg_chat"
