"""Assistants on the LangGraph face, driven by LangGraph's own client (``langgraph_sdk``),
``RemoteGraph`` and Studio's raw requests, against a real server on both backends."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langgraph.pregel.remote import RemoteGraph
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from outlast.api.lg.assistants import InvalidAssistant, resolve_assistant, system_assistant_id
from outlast.graph.registry import GraphRegistry
from outlast.store import Store
from outlast.store.assistants import AssistantExists, AssistantNotFound
from tests.harness import GRAPHS, Server, make_settings, serve

GRAPH_NAMES = GraphRegistry.from_config(GRAPHS).names
NS = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
ALICE = "key-a-0123456789abcdef"
BOB = "key-b-0123456789abcdef"
STUDIO_SEARCH = {"limit": 10, "offset": 0, "metadata": {"created_by": "system"}}


@pytest.fixture
async def srv(store: Store) -> AsyncIterator[Server]:
    async with serve(store, with_worker=False) as server:
        yield server


@pytest.fixture
async def client(srv: Server) -> AsyncIterator[LangGraphClient]:
    async with srv.sdk(api_key=None) as c:
        yield c


async def _everything(client: LangGraphClient, **query: Any) -> list[dict[str, Any]]:
    """Every search result, page by page, following X-Pagination-Next."""
    found: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = await client.assistants.search(
            limit=7, offset=offset, response_format="object", **query
        )
        found.extend(page["assistants"])
        offset = int(page["next"]) if page["next"] is not None else None
    return found


# -- system assistants ---------------------------------------------------------------------


async def test_search_has_one_system_assistant_per_graph(client: LangGraphClient) -> None:
    found = await _everything(client, metadata={"created_by": "system"})
    assert {a["graph_id"]: a["assistant_id"] for a in found} == {
        g: str(uuid.uuid5(NS, g)) for g in GRAPH_NAMES
    }
    assert len(found) == len(GRAPH_NAMES)
    agent = next(a for a in found if a["graph_id"] == "agent")
    assert agent["assistant_id"] == "fe096781-5601-53d2-b2f6-0d3403f7e9ca"
    assert system_assistant_id("agent") == agent["assistant_id"]
    assert agent | {"created_at": None, "updated_at": None} == {
        "assistant_id": agent["assistant_id"],
        "graph_id": "agent",
        "name": "agent",
        "description": None,
        "metadata": {"created_by": "system"},
        "version": 1,
        "config": {},
        "context": {},
        "created_at": None,
        "updated_at": None,
    }
    assert await client.assistants.count(metadata={"created_by": "system"}) == len(GRAPH_NAMES)
    assert [a["graph_id"] for a in await client.assistants.search(graph_id="lg_hitl")] == [
        "lg_hitl"
    ]
    named = await client.assistants.search(name="LG_N", limit=100)
    assert [a["graph_id"] for a in named] == ["lg_nested"]


async def test_studio_search_as_text_plain_with_pagination_headers(srv: Server) -> None:
    response = await srv.client.post(
        "/assistants/search",
        content=json.dumps(STUDIO_SEARCH),
        headers={"Content-Type": "text/plain;charset=UTF-8"},
    )
    assert response.status_code == 200, response.text
    assert len(response.json()) == 10
    assert all(a["metadata"] == {"created_by": "system"} for a in response.json())
    assert response.headers["x-pagination-total"] == str(len(GRAPH_NAMES))
    assert response.headers["x-pagination-next"] == "10"
    last = await srv.client.post(
        "/assistants/search", json={**STUDIO_SEARCH, "offset": len(GRAPH_NAMES) - 3}
    )
    assert len(last.json()) == 3
    assert last.headers["x-pagination-total"] == str(len(GRAPH_NAMES))
    assert "x-pagination-next" not in last.headers


async def test_get_by_id_or_graph_name(client: LangGraphClient) -> None:
    by_id = await client.assistants.get(system_assistant_id("lg_chat"))
    by_name = await client.assistants.get("lg_chat")
    assert by_id == by_name and by_id["graph_id"] == "lg_chat"
    with pytest.raises(NotFoundError):
        await client.assistants.get(str(uuid.uuid4()))
    with pytest.raises(NotFoundError):
        await client.assistants.get("no_such_graph")


async def test_system_assistants_cannot_change(client: LangGraphClient, srv: Server) -> None:
    system = system_assistant_id("lg_hitl")
    for attempt in (
        client.assistants.update(system, metadata={"x": 1}),
        client.assistants.update("lg_hitl", name="renamed"),
        client.assistants.delete(system),
        client.assistants.set_latest(system, 1),
    ):
        with pytest.raises(ConflictError):
            await attempt
    with pytest.raises(ConflictError):
        await client.assistants.create("lg_hitl", assistant_id=system)
    kept = await client.assistants.create("lg_hitl", assistant_id=system, if_exists="do_nothing")
    assert kept == await client.assistants.get(system)
    assert [v["version"] for v in await client.assistants.get_versions(system)] == [1]
    assert await srv.store.count_assistants() == 0


# -- user assistants -----------------------------------------------------------------------


async def test_create_update_versions_latest_delete(client: LangGraphClient, srv: Server) -> None:
    made = await client.assistants.create(
        "lg_hitl",
        config={"configurable": {"tone": "dry"}},
        context={"user": "u1"},
        metadata={"team": "red", "tier": 1},
        name="Reviewer",
        description="checks plans",
    )
    aid = made["assistant_id"]
    assert uuid.UUID(aid) and made["version"] == 1 and made["graph_id"] == "lg_hitl"
    assert made["config"] == {"configurable": {"tone": "dry"}} and made["context"] == {"user": "u1"}
    assert await client.assistants.get(aid) == made
    assert (await client.assistants.create("lg_chat"))["name"] == "Untitled"

    updated = await client.assistants.update(
        aid, metadata={"tier": 2, "owner": "ops"}, name="Reviewer 2"
    )
    assert updated["version"] == 2
    assert updated["metadata"] == {"team": "red", "tier": 2, "owner": "ops"}  # merged
    assert updated["name"] == "Reviewer 2" and updated["description"] == "checks plans"
    assert updated["config"] == made["config"] and updated["created_at"] == made["created_at"]
    assert updated["updated_at"] > made["updated_at"]
    assert await client.assistants.get(aid) == updated

    versions = await client.assistants.get_versions(aid)
    assert [(v["version"], v["name"]) for v in versions] == [(2, "Reviewer 2"), (1, "Reviewer")]
    assert all("updated_at" not in v for v in versions)
    old = await client.assistants.get_versions(aid, metadata={"tier": 1})
    assert [v["version"] for v in old] == [1]

    back = await client.assistants.set_latest(aid, 1)
    assert (back["version"], back["name"], back["metadata"]) == (1, "Reviewer", made["metadata"])
    assert await client.assistants.get(aid) == back
    with pytest.raises(NotFoundError):
        await client.assistants.set_latest(aid, 9)
    # The next update is version 3: version 2 stays as it was. (The SDK leaves a None
    # description out; Studio's editor sends null to clear it.)
    cleared = await srv.client.patch(f"/assistants/{aid}", json={"description": None})
    third = cleared.json()
    assert third["version"] == 3 and third["description"] is None and third["name"] == "Reviewer"
    assert [v["version"] for v in await client.assistants.get_versions(aid)] == [3, 2, 1]

    await client.assistants.delete(aid, delete_threads=True)
    for gone in (
        client.assistants.get(aid),
        client.assistants.get_versions(aid),
        client.assistants.update(aid, name="x"),
        client.assistants.delete(aid),
    ):
        with pytest.raises(NotFoundError):
            await gone


async def test_delete_answers_204(srv: Server, client: LangGraphClient) -> None:
    aid = (await client.assistants.create("lg_chat"))["assistant_id"]
    response = await srv.client.delete(f"/assistants/{aid}")
    assert response.status_code == 204 and response.content == b""
    again = await srv.client.delete(f"/assistants/{aid}")
    assert again.status_code == 404 and "not found" in again.json()["detail"]


async def test_if_exists_and_bad_input_write_nothing(client: LangGraphClient, srv: Server) -> None:
    aid = str(uuid.uuid4())
    first = await client.assistants.create("lg_chat", assistant_id=aid, name="one")
    with pytest.raises(ConflictError) as taken:
        await client.assistants.create("lg_hitl", assistant_id=aid, name="two")
    assert aid in str(taken.value)
    same = await client.assistants.create(
        "lg_hitl", assistant_id=aid, name="two", if_exists="do_nothing"
    )
    assert same == first
    with pytest.raises(UnprocessableEntityError) as unknown:
        await client.assistants.create("no_such_graph", name="x")
    assert "no_such_graph" in str(unknown.value)
    with pytest.raises(UnprocessableEntityError):
        await client.assistants.update(aid, graph_id="no_such_graph")
    with pytest.raises(UnprocessableEntityError):
        await client.assistants.create("lg_chat", assistant_id="not-a-uuid")
    bad = await srv.client.post("/assistants", json={"graph_id": "lg_chat", "if_exists": "maybe"})
    assert bad.status_code == 422 and "if_exists" in bad.json()["detail"]
    assert await srv.store.count_assistants() == 1
    assert await client.assistants.get(aid) == first
    assert [v["version"] for v in await client.assistants.get_versions(aid)] == [1]


async def test_search_pages_merge_user_and_system_assistants(client: LangGraphClient) -> None:
    mine = [
        (await client.assistants.create("lg_nested", name=f"mine {i}", metadata={"i": i}))[
            "assistant_id"
        ]
        for i in range(5)
    ]
    every = [*mine, *(system_assistant_id(g) for g in GRAPH_NAMES)]
    by_id = await _everything(client, sort_by="assistant_id", sort_order="asc")
    assert [a["assistant_id"] for a in by_id] == sorted(every)
    by_name = await _everything(client, sort_by="name", sort_order="desc")
    assert [a["name"] for a in by_name] == sorted([*(f"mine {i}" for i in range(5)), *GRAPH_NAMES])[
        ::-1
    ]
    newest = await client.assistants.search(limit=5)  # default: created_at, newest first
    assert {a["assistant_id"] for a in newest} == set(mine)
    assert await client.assistants.count() == len(every)
    assert await client.assistants.count(graph_id="lg_nested") == 6
    assert await client.assistants.count(metadata={"i": 3}) == 1
    trimmed = await client.assistants.search(graph_id="lg_nested", select=["assistant_id", "name"])
    assert all(set(a) == {"assistant_id", "name"} for a in trimmed) and len(trimmed) == 6


async def test_principals_isolate_user_assistants(store: Store) -> None:
    settings = make_settings(api_keys=f"alice:{ALICE},bob:{BOB}")
    async with (
        serve(store, settings, with_worker=False) as srv,
        srv.sdk(api_key=ALICE) as alice,
        srv.sdk(api_key=BOB) as bob,
    ):
        aid = (await alice.assistants.create("lg_chat", name="alice's"))["assistant_id"]
        for who in (alice, bob):  # system assistants are everyone's
            got = await who.assistants.get(system_assistant_id("lg_chat"))
            assert got["metadata"] == {"created_by": "system"}
            assert await who.assistants.count(metadata={"created_by": "system"}) == len(GRAPH_NAMES)
        assert await alice.assistants.count() == len(GRAPH_NAMES) + 1
        assert await bob.assistants.count() == len(GRAPH_NAMES)
        assert aid not in {a["assistant_id"] for a in await _everything(bob)}
        for attempt in (
            bob.assistants.get(aid),
            bob.assistants.update(aid, name="bob's now"),
            bob.assistants.get_versions(aid),
            bob.assistants.set_latest(aid, 1),
            bob.assistants.delete(aid),
            bob.assistants.get_graph(aid),
        ):
            with pytest.raises(NotFoundError):
                await attempt
        # Bob cannot take Alice's id either, even asking for what exists.
        with pytest.raises(ConflictError):
            await bob.assistants.create("lg_chat", assistant_id=aid, if_exists="do_nothing")
        assert (await alice.assistants.get(aid))["name"] == "alice's"
        ctx = srv.app.state.ctx
        assert (await resolve_assistant(dataclasses.replace(ctx, principal="alice"), aid)).name
        with pytest.raises(InvalidAssistant):
            await resolve_assistant(dataclasses.replace(ctx, principal="bob"), aid)


async def test_resolve_assistant(srv: Server, client: LangGraphClient) -> None:
    ctx = srv.app.state.ctx
    by_name = await resolve_assistant(ctx, "lg_hitl")
    assert by_name.assistant_id == system_assistant_id("lg_hitl")
    assert await resolve_assistant(ctx, system_assistant_id("lg_hitl")) == by_name
    made = await client.assistants.create("lg_chat", config={"configurable": {"words": 2}})
    mine = await resolve_assistant(ctx, made["assistant_id"].upper())
    assert (mine.graph_id, mine.config) == ("lg_chat", {"configurable": {"words": 2}})
    for unknown in ("nope", str(uuid.uuid4())):
        with pytest.raises(InvalidAssistant) as refused:
            await resolve_assistant(ctx, unknown)
        assert refused.value.status == 422
        assert str(refused.value) == (
            f"Invalid assistant: '{unknown}'. Must be either a valid assistant UUID or one "
            f"of the registered graphs: {', '.join(GRAPH_NAMES)}"
        )


# -- the graph, its schemas and subgraphs ----------------------------------------------------


async def test_graph_with_and_without_xray(client: LangGraphClient, srv: Server) -> None:
    flat = await client.assistants.get_graph("lg_nested")
    assert {n["id"] for n in flat["nodes"]} == {"__start__", "first", "inner", "last", "__end__"}
    xray = await client.assistants.get_graph(system_assistant_id("lg_nested"), xray=True)
    ids = {n["id"] for n in xray["nodes"]}
    assert {"inner:inner_a", "inner:inner_b", "first", "last"} <= ids and "inner" not in ids
    edges = {(e["source"], e["target"]) for e in xray["edges"]}
    assert ("first", "inner:inner_a") in edges and ("inner:inner_b", "last") in edges
    assert await client.assistants.get_graph("lg_nested", xray=1) == xray
    bad = await srv.client.get("/assistants/lg_nested/graph", params={"xray": "deep"})
    assert bad.status_code == 422 and "xray" in bad.json()["detail"]
    # A user assistant draws its graph.
    made = await client.assistants.create("lg_nested")
    assert await client.assistants.get_graph(made["assistant_id"], xray=True) == xray


async def test_remote_graph_reads_the_graph(client: LangGraphClient) -> None:
    remote = RemoteGraph("lg_nested", client=client)
    drawn = await remote.aget_graph(xray=True)
    assert {"inner:inner_a", "inner:inner_b"} <= set(drawn.nodes)
    assert drawn.nodes["inner:inner_a"].name == "inner:inner_a"
    assert ("inner:inner_a", "inner:inner_b") in {(e.source, e.target) for e in drawn.edges}
    plain = await remote.aget_graph()
    assert "inner" in plain.nodes and "inner:inner_a" not in plain.nodes


async def test_schemas(client: LangGraphClient) -> None:
    hitl = await client.assistants.get_schemas("lg_hitl")
    assert hitl["graph_id"] == "lg_hitl"
    for key in ("input_schema", "output_schema", "state_schema"):
        assert set(hitl[key]["properties"]) == {"topic", "plan", "answer", "done"}, key
    assert hitl["state_schema"]["properties"]["topic"]["type"] == "string"
    assert hitl["config_schema"]["type"] == "object" and hitl["context_schema"] is None
    chat = await client.assistants.get_schemas(system_assistant_id("lg_chat"))
    assert "messages" in chat["state_schema"]["properties"]
    assert "messages" in chat["input_schema"]["properties"]


async def test_subgraphs(client: LangGraphClient) -> None:
    found = await client.assistants.get_subgraphs("lg_nested")
    assert list(found) == ["inner"]
    assert found["inner"]["state_schema"]["properties"]["trail"]["type"] == "array"
    assert await client.assistants.get_subgraphs("lg_nested", recurse=True) == found
    assert await client.assistants.get_subgraphs("lg_nested", namespace="inner") == found
    assert await client.assistants.get_subgraphs("lg_nested", namespace="first") == {}
    assert await client.assistants.get_subgraphs("lg_hitl") == {}


# -- the store -----------------------------------------------------------------------------


async def test_store_concurrent_creates_of_one_id_make_one(store: Store) -> None:
    aid = str(uuid.uuid4())

    async def make(i: int, if_exists: str) -> Any:
        try:
            return await store.create_assistant(
                assistant_id=aid, graph_id="g", name=f"n{i}", if_exists=if_exists, principal="p"
            )
        except AssistantExists as exc:
            return exc

    results = await asyncio.gather(*(make(i, "raise") for i in range(8)))
    made = [r for r in results if isinstance(r, tuple)]
    assert len(made) == 1 and made[0][1] is True
    assert sum(isinstance(r, AssistantExists) for r in results) == 7
    again = await asyncio.gather(*(make(i, "do_nothing") for i in range(4)))
    assert all(r == (made[0][0], False) for r in again)
    assert await store.count_assistants(principal="p") == 1
    assert len(await store.list_assistant_versions(aid, principal="p")) == 1


async def test_store_concurrent_updates_get_distinct_versions(store: Store) -> None:
    a, _ = await store.create_assistant(assistant_id=str(uuid.uuid4()), graph_id="g", name="n")
    done = await asyncio.gather(
        *(store.update_assistant(a.assistant_id, {"metadata": {f"k{i}": i}}) for i in range(6))
    )
    assert sorted(u.version for u in done) == [2, 3, 4, 5, 6, 7]
    final = await store.get_assistant(a.assistant_id)
    assert final is not None and final.version == 7
    assert final.metadata == {f"k{i}": i for i in range(6)}  # every merge kept
    versions = await store.list_assistant_versions(a.assistant_id, limit=3, offset=1)
    assert [v.version for v in versions] == [6, 5, 4]


async def test_store_filters_sorting_and_principals(store: Store) -> None:
    ids = sorted(str(uuid.uuid4()) for _ in range(3))
    specs = [("beta", {"team": "x", "o": {"n": [1]}}), ("Alpha", {"team": "y"}), ("gamma", {})]
    for aid, (name, meta) in zip(ids, specs, strict=True):
        await store.create_assistant(
            assistant_id=aid, graph_id="g", name=name, metadata=meta, principal="p"
        )
    await store.create_assistant(
        assistant_id=str(uuid.uuid4()), graph_id="g", name="b", principal="q"
    )
    rows, total = await store.search_assistants(principal="p", sort_by="name", sort_order="asc")
    assert [a.name for a in rows] == ["Alpha", "beta", "gamma"] and total == 3  # code points
    page, total = await store.search_assistants(
        principal="p", sort_by="assistant_id", sort_order="desc", limit=2, offset=1
    )
    assert [a.assistant_id for a in page] == ids[::-1][1:3] and total == 3
    nested, _ = await store.search_assistants(principal="p", metadata={"o": {"n": [1]}})
    assert [a.name for a in nested] == ["beta"]
    assert await store.count_assistants(principal="p", metadata={"team": "x"}) == 1
    assert await store.count_assistants(principal="p", metadata={"team": "z"}) == 0
    assert await store.count_assistants(principal="p", metadata={"o": {"n": 1}}) == 0
    assert await store.count_assistants(principal="p", name="A") == 3  # alpha, beta, gamma
    assert await store.count_assistants(principal="p", name="alp") == 1
    assert await store.count_assistants(principal="q") == 1
    assert await store.get_assistant(ids[0], principal="q") is None
    with pytest.raises(AssistantNotFound):
        await store.delete_assistant(ids[0], principal="q")
    assert await store.get_assistant(ids[0], principal="p") is not None
