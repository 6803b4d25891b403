"""The MCP face through the ``mcp`` SDK's own client (streamable HTTP, ``ClientSession``):
every graph a tool, every call a durable run, on both backends."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from outlast.store import Run, Store
from tests.harness import ALICE, BOB, KEYS, Server, eventually, make_settings, serve
from tests.mcp_client import connect

CHAT = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
async def srv(store: Store, tmp_path: Path) -> AsyncIterator[Server]:
    async with serve(store, make_settings(data_dir=tmp_path, result_wait_max=20)) as server:
        yield server


def run_id_of(result: types.CallToolResult) -> str:
    assert result.meta is not None
    return str(result.meta["outlast/run_id"])


async def only_run(store: Store, graph: str, status: str | None = None) -> Run:
    async def probe() -> Run | None:
        runs = await store.list_runs(
            principal="", thread_id=None, status=None, limit=10, before=None
        )
        mine = [r for r in runs if r.graph == graph]
        assert len(mine) <= 1, mine
        if mine and (status is None or mine[0].status == status):
            return mine[0]
        return None

    return await eventually(probe, what=f"the {graph} run {status or ''}")


async def test_every_graph_is_a_tool_with_its_input_schema(srv: Server) -> None:
    async with connect(srv.url) as peer:
        listed = {t.name: t for t in (await peer.session.list_tools()).tools}
        caps = peer.session.server_capabilities
    assert {"lg_chat", "lg_hitl", "lg_slow", "outlast_answer", "outlast_result"} <= set(listed)
    hitl = listed["lg_hitl"].input_schema
    assert hitl["type"] == "object" and "topic" in hitl["properties"]
    assert "messages" in listed["lg_chat"].input_schema["properties"]
    assert listed["lg_slow"].execution is not None
    assert listed["lg_slow"].execution.task_support == "optional"
    assert caps is not None and caps.tasks is not None and caps.tasks.requests is not None


async def test_a_call_is_a_run_and_returns_its_output_once(srv: Server, store: Store) -> None:
    key = {"outlast/idempotency_key": f"k-{uuid.uuid4()}"}
    async with connect(srv.url) as peer:
        got = await peer.session.call_tool("lg_chat", CHAT, meta=key)  # type: ignore[arg-type]
        again = await peer.session.call_tool("lg_chat", CHAT, meta=key)  # type: ignore[arg-type]
    assert not got.is_error
    assert got.structured_content["messages"][-1]["content"].startswith("echo(hi)")
    assert run_id_of(again) == run_id_of(got)  # the retried call started nothing
    run = await only_run(store, "lg_chat")
    assert run.id == run_id_of(got) and run.status == "completed"


async def test_every_assistant_of_the_caller_is_a_tool_with_its_context(srv: Server) -> None:
    client = srv.sdk()
    made = [
        await client.assistants.create("lg_context", context={"user": user}, name=name)
        for user, name in (("ana", "greeter"), ("bo", "greeter"), ("cy", "lg chat"))
    ]
    async with connect(srv.url) as peer:
        listed = {t.name: t for t in (await peer.session.list_tools()).tools}
        # a name two assistants want goes to neither: each gets its id's start appended
        ana, bo = (f"greeter_{a['assistant_id'][:8]}" for a in made[:2])
        assert {ana, bo} <= set(listed) and "greeter" not in listed
        # "lg chat" wants "lg_chat", a graph's name: the graph keeps it
        assert f"lg_chat_{made[2]['assistant_id'][:8]}" in listed
        assert listed["lg_chat"].description.startswith("Run the graph")
        assert listed[ana].input_schema == listed["lg_context"].input_schema
        got = await peer.session.call_tool(ana, {})
        with pytest.raises(MCPError, match="Unknown tool"):
            await peer.session.call_tool("greeter", {})
    # the assistant's context reaches its graph, as a LangGraph run on it would
    assert got.structured_content == {"greeting": "hello ana"}


async def test_bad_input_gets_mcp_errors(srv: Server) -> None:
    async with connect(srv.url) as peer:
        with pytest.raises(MCPError) as unknown:
            await peer.session.call_tool("no_such_graph", {})
        with pytest.raises(MCPError) as no_run:
            await peer.session.call_tool("outlast_result", {"run_id": str(uuid.uuid4())})
        with pytest.raises(MCPError) as bad_thread:
            meta: Any = {"outlast/thread_id": "not a thread id!"}
            await peer.session.call_tool("lg_chat", CHAT, meta=meta)
        with pytest.raises(MCPError) as no_task:
            await peer.task(str(uuid.uuid4()))
    for raised in (unknown, no_run, bad_thread, no_task):
        assert raised.value.code == types.INVALID_PARAMS
    assert "no_such_graph" in unknown.value.message


async def test_a_run_that_asks_is_answered_through_elicitation(srv: Server) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def elicit(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"answer": "ship it"})

    async with connect(srv.url, elicit=elicit) as peer:
        got = await peer.session.call_tool("lg_hitl", {"topic": "mcp"})
    assert not got.is_error, got
    assert got.structured_content["done"] == "acted on 'ship it'"
    assert len(asked) == 1 and asked[0].message == "Approve the plan?"


async def test_without_elicitation_the_call_says_how_to_answer(srv: Server) -> None:
    async with connect(srv.url) as peer:
        waiting = await peer.session.call_tool("lg_hitl", {"topic": "mcp"})
        run_id = run_id_of(waiting)
        assert waiting.structured_content["status"] == "waiting"
        assert waiting.structured_content["questions"][0]["question"] == "Approve the plan?"
        assert "outlast_answer" in waiting.content[0].text  # type: ignore[union-attr]
        done = await peer.session.call_tool("outlast_answer", {"run_id": run_id, "answer": "no"})
        with pytest.raises(MCPError) as twice:
            await peer.session.call_tool("outlast_answer", {"run_id": run_id, "answer": "x"})
        again = await peer.session.call_tool("outlast_result", {"run_id": run_id})
    assert done.structured_content["done"] == "acted on 'no'"
    assert again.structured_content == done.structured_content
    assert twice.value.code == types.INVALID_PARAMS


async def test_progress_follows_the_runs_nodes(srv: Server) -> None:
    seen: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, message))

    config: Any = {"outlast/config": {"configurable": {"steps": 3, "delay": 0.01}}}
    async with connect(srv.url) as peer:
        got = await peer.session.call_tool("lg_slow", {}, progress_callback=progress, meta=config)
    assert got.structured_content["done"] == [0, 1, 2]
    assert [m for _, m in seen] == ["tick finished"] * 3
    values = [v for v, _ in seen]
    assert values == sorted(set(values))


async def test_a_cancelled_call_cancels_its_run(srv: Server, store: Store) -> None:
    config: Any = {"outlast/config": {"configurable": {"steps": 10_000, "delay": 0.05}}}
    async with connect(srv.url) as peer:
        call = asyncio.create_task(peer.session.call_tool("lg_slow", {}, meta=config))
        run = await only_run(store, "lg_slow", "running")
        call.cancel()  # the client sends notifications/cancelled for it
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await only_run(store, "lg_slow", "cancelled")
    assert run.status == "running"


async def test_a_long_call_is_a_task_whose_id_is_its_run(srv: Server, store: Store) -> None:
    config = {"outlast/config": {"configurable": {"steps": 3, "delay": 0.05}}}
    async with connect(srv.url) as peer:
        task_id = await peer.call_as_task("lg_slow", {}, **config)
        run = await store.get_run(task_id)
        assert run is not None and run.graph == "lg_slow"
        assert (await peer.task(task_id)).status in ("working", "completed")
        got = await peer.task_result(task_id)
        assert (await peer.task(task_id)).status == "completed"
        with pytest.raises(MCPError) as finished:
            await peer.cancel_task(task_id)
        long = await peer.call_as_task(
            "lg_slow", {}, **{"outlast/config": {"configurable": {"steps": 10_000}}}
        )
        cancelled = await peer.cancel_task(long)
    assert got.structured_content["done"] == [0, 1, 2]
    assert got.meta is not None
    assert got.meta["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert finished.value.code == types.INVALID_PARAMS
    assert cancelled.status == "cancelled"


async def test_a_task_that_asks_is_input_required_then_answered(srv: Server) -> None:
    async def elicit(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"answer": "later"})

    async with connect(srv.url, elicit=elicit) as peer:
        task_id = await peer.call_as_task("lg_hitl", {"topic": "tasks"})

        async def asks() -> bool:
            return (await peer.task(task_id)).status == "input_required"

        await eventually(asks, what="the task asking")
        assert (await peer.task(task_id)).status_message == "Approve the plan?"
        got = await peer.task_result(task_id)  # asks through elicitation, then waits
    assert got.structured_content["done"] == "acted on 'later'"


async def test_a_principal_sees_only_its_own_tasks(store: Store, tmp_path: Path) -> None:
    settings = make_settings(data_dir=tmp_path, api_keys=KEYS)
    async with serve(store, settings) as server:
        async with connect(server.url, ALICE) as alice:
            task_id = await alice.call_as_task("lg_chat", CHAT)
            assert (await alice.task_result(task_id)).structured_content is not None
        async with connect(server.url, BOB) as bob:
            with pytest.raises(MCPError) as hidden:
                await bob.task(task_id)
        assert hidden.value.code == types.INVALID_PARAMS
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        nobody = await server.client.post("/mcp", json=initialize)
        assert nobody.status_code == 401
