"""The LangGraph Store API (``/store``) through LangGraph's own client, on both backends:
items and namespaces behave as LangGraph's stores do, each principal sees only its own,
and a refused request changes nothing."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import UnprocessableEntityError

from outlast.graph.factories import Access
from outlast.graph.registry import GraphRegistry
from outlast.store import Store
from outlast.store.items import for_principal, principal_label
from tests.harness import GRAPHS, Server, make_settings, serve

ALICE = "alice-key-0123456789"
BOB = "bob-key-9876543210xx"
KEYS = f"alice:{ALICE},bob:{BOB}"


@asynccontextmanager
async def lg(srv: Server, key: str | None = None) -> AsyncIterator[LangGraphClient]:
    client = srv.sdk(api_key=key, timeout=30)
    try:
        yield client
    finally:
        await client.aclose()


async def everything(client: LangGraphClient) -> dict[str, Any]:
    """All the caller can see: its namespaces and its items."""
    namespaces = (await client.store.list_namespaces())["namespaces"]
    found = (await client.store.search_items([], limit=100))["items"]
    return {"namespaces": namespaces, "items": {(tuple(i["namespace"]), i["key"]) for i in found}}


async def test_put_get_search_and_delete(store: Store) -> None:
    async with serve(store, with_worker=False) as srv, lg(srv) as client:
        s = client.store
        await s.put_item(["users", "u1"], "prefs", {"theme": "dark", "size": 3})
        await s.put_item(["users", "u1"], "notes", {"theme": "light", "size": 1})
        await s.put_item(["users", "u2"], "prefs", {"theme": "dark", "size": 5})
        await s.put_item(["docs"], "readme", {"theme": "dark", "size": 9})

        item = await s.get_item(["users", "u1"], key="prefs")
        assert item["namespace"] == ["users", "u1"] and item["key"] == "prefs"
        assert item["value"] == {"theme": "dark", "size": 3}
        created = dt.datetime.fromisoformat(item["created_at"])
        assert created.tzinfo is not None
        assert dt.datetime.fromisoformat(item["updated_at"]) >= created
        assert await s.get_item(["users", "u1"], key="missing") is None
        assert await s.get_item(["users", "nobody"], key="prefs") is None

        # An update replaces the value. (Postgres keeps the creation time; LangGraph's
        # SQLite store rewrites the row, INSERT OR REPLACE, and so the time too.)
        await s.put_item(["users", "u1"], "prefs", {"theme": "blue", "size": 3})
        again = await s.get_item(["users", "u1"], key="prefs")
        assert again["value"]["theme"] == "blue"
        if store.backend == "postgres":
            assert again["created_at"] == item["created_at"]

        def keys(found: dict[str, Any]) -> set[tuple[str, ...]]:
            return {(*i["namespace"], i["key"]) for i in found["items"]}

        users = await s.search_items(["users"])
        assert keys(users) == {
            ("users", "u1", "prefs"),
            ("users", "u1", "notes"),
            ("users", "u2", "prefs"),
        }
        assert all(i["score"] is None for i in users["items"])
        dark = await s.search_items(["users"], filter={"theme": "dark"})
        assert keys(dark) == {("users", "u2", "prefs")}
        big = await s.search_items([], filter={"size": {"$gte": 3}})
        assert keys(big) == {("users", "u1", "prefs"), ("users", "u2", "prefs"), ("docs", "readme")}
        # A prefix matches whole labels only.
        assert keys(await s.search_items(["user"])) == set()
        # Pages cover the set once, in order.
        pages = [
            (await s.search_items(["users"], limit=2, offset=offset))["items"]
            for offset in (0, 2, 4)
        ]
        assert [len(p) for p in pages] == [2, 1, 0]
        assert {(*i["namespace"], i["key"]) for p in pages for i in p} == keys(users)

        await s.delete_item(["users", "u1"], key="prefs")
        assert await s.get_item(["users", "u1"], key="prefs") is None
        assert keys(await s.search_items(["users", "u1"])) == {("users", "u1", "notes")}


async def test_list_namespaces_by_prefix_suffix_and_depth(store: Store) -> None:
    async with serve(store, with_worker=False) as srv, lg(srv) as client:
        s = client.store
        for ns in (["a", "b", "c"], ["a", "b", "d"], ["a", "x"], ["z", "b", "c"]):
            await s.put_item(ns, "k", {"n": 1})

        def listed(answer: dict[str, Any]) -> list[list[str]]:
            return list(answer["namespaces"])

        assert listed(await s.list_namespaces()) == [
            ["a", "b", "c"],
            ["a", "b", "d"],
            ["a", "x"],
            ["z", "b", "c"],
        ]
        assert listed(await s.list_namespaces(prefix=["a", "b"])) == [
            ["a", "b", "c"],
            ["a", "b", "d"],
        ]
        assert listed(await s.list_namespaces(suffix=["c"])) == [["a", "b", "c"], ["z", "b", "c"]]
        assert listed(await s.list_namespaces(prefix=["*", "b"], suffix=["c"])) == [
            ["a", "b", "c"],
            ["z", "b", "c"],
        ]
        assert listed(await s.list_namespaces(max_depth=1)) == [["a"], ["z"]]
        assert listed(await s.list_namespaces(prefix=["a"], max_depth=2)) == [
            ["a", "b"],
            ["a", "x"],
        ]
        assert listed(await s.list_namespaces(limit=2, offset=1)) == [["a", "b", "d"], ["a", "x"]]


async def test_each_principal_sees_only_its_own_items(store: Store) -> None:
    async with (
        serve(store, make_settings(api_keys=KEYS), with_worker=False) as srv,
        lg(srv, ALICE) as alice,
        lg(srv, BOB) as bob,
    ):
        await alice.store.put_item(["memories", "travel"], "m1", {"text": "Lisbon", "who": "a"})
        await alice.store.put_item(["profile"], "me", {"who": "a"})
        mine = await everything(alice)
        assert mine["namespaces"] == [["memories", "travel"], ["profile"]]

        assert await everything(bob) == {"namespaces": [], "items": set()}
        assert await bob.store.get_item(["memories", "travel"], key="m1") is None
        assert (await bob.store.search_items(["memories"], filter={"who": "a"}))["items"] == []
        assert (await bob.store.list_namespaces(prefix=["profile"]))["namespaces"] == []

        # The same namespace and key are Bob's own item, not an overwrite of Alice's ...
        await bob.store.put_item(["memories", "travel"], "m1", {"text": "Oslo", "who": "b"})
        # ... and his delete removes his, never hers.
        await bob.store.delete_item(["profile"], key="me")
        got = await alice.store.get_item(["memories", "travel"], key="m1")
        assert got["value"] == {"text": "Lisbon", "who": "a"}
        assert await everything(alice) == mine
        assert (await bob.store.get_item(["memories", "travel"], key="m1"))["value"]["who"] == "b"
        await bob.store.delete_item(["memories", "travel"], key="m1")
        assert await everything(bob) == {"namespaces": [], "items": set()}
        assert await everything(alice) == mine


async def test_bad_input_is_refused_and_writes_nothing(store: Store) -> None:
    async with serve(store, with_worker=False) as srv, lg(srv) as client:
        await client.store.put_item(["keep"], "k", {"v": 1})
        before = await everything(client)
        forged = principal_label("")
        http = srv.client  # the SDK refuses dotted labels before sending; a client may not

        async def refused(status: int, method: str, path: str, **kw: Any) -> str:
            if "json" in kw:  # as escaped JSON text, so a lone surrogate can be sent
                kw["content"] = json.dumps(kw.pop("json"))
                kw["headers"] = {"content-type": "application/json"}
            r = await http.request(method, path, **kw)
            assert r.status_code == status, (r.status_code, r.text)
            detail: str = r.json()["detail"]
            assert detail
            return detail

        put = {"namespace": ["ok"], "key": "k", "value": {"v": 2}}
        assert "period" in await refused(
            422, "PUT", "/store/items", json={**put, "namespace": ["a.b"]}
        )
        assert "reserved" in await refused(
            422, "PUT", "/store/items", json={**put, "namespace": [forged, "x"]}
        )
        assert "reserved" in await refused(
            422, "PUT", "/store/items", json={**put, "namespace": ["ok", "outlast~p~bob"]}
        )
        assert "key" in await refused(422, "PUT", "/store/items", json={**put, "key": None})
        no_key = {k: v for k, v in put.items() if k != "key"}
        assert "key" in await refused(422, "PUT", "/store/items", json=no_key)
        assert "value" in await refused(422, "PUT", "/store/items", json={**put, "value": [1]})
        assert "value" in await refused(422, "PUT", "/store/items", json={**put, "value": "x"})
        await refused(422, "PUT", "/store/items", json={**put, "namespace": []})
        await refused(422, "PUT", "/store/items", json={**put, "namespace": ["langgraph"]})
        await refused(422, "PUT", "/store/items", json={**put, "namespace": ["a", ""]})
        await refused(422, "PUT", "/store/items", json={**put, "surprise": 1})
        # What a store would fail on (a 500) or keep unfaithfully.
        for ttl in (-1, 1e-10, 1e12, True):
            await refused(422, "PUT", "/store/items", json={**put, "ttl": ttl})
        for value in ({"n": 2**70}, {"s": "a\x00b"}, {"s": "\ud800"}):
            await refused(422, "PUT", "/store/items", json={**put, "value": value})

        assert "key" in await refused(400, "GET", "/store/items", params={"namespace": "keep"})
        await refused(
            422, "GET", "/store/items", params={"namespace": f"{forged}.keep", "key": "k"}
        )
        await refused(422, "GET", "/store/items", params={"namespace": "keep..x", "key": "k"})

        for bad in (
            {"namespace": ["ke.ep"], "key": "k"},
            {"namespace": [forged, "keep"], "key": "k"},
        ):
            await refused(422, "DELETE", "/store/items", json=bad)

        search = "/store/items/search"
        await refused(422, "POST", search, json={"namespace_prefix": [forged]})
        assert "operator" in await refused(
            422, "POST", search, json={"namespace_prefix": [], "filter": {"v": {"$like": 1}}}
        )
        await refused(422, "POST", search, json={"namespace_prefix": [], "filter": {"v;--": 1}})
        for page in ({"limit": 0}, {"limit": True}, {"offset": "1"}, {"offset": 2**40}):
            await refused(422, "POST", search, json={"namespace_prefix": [], **page})
        await refused(422, "POST", search, json={"namespace_prefix": [], "filter": {"n": 2**70}})
        await refused(422, "POST", "/store/namespaces", json={"prefix": ["a.b"]})
        await refused(422, "POST", "/store/namespaces", json={"suffix": [forged]})
        await refused(422, "POST", "/store/namespaces", json={"max_depth": 0})

        # Through the SDK too: its typed error carries the detail.
        with pytest.raises(UnprocessableEntityError) as caught:
            await client.store.delete_item(["no.pe"], key="k")
        assert "period" in str(caught.value.body)
        assert await everything(client) == before
        assert (await client.store.get_item(["keep"], key="k"))["value"] == {"v": 1}


async def test_ttl_and_index_options_are_accepted(store: Store) -> None:
    async with serve(store, with_worker=False) as srv, lg(srv) as client:
        await client.store.put_item(["t"], "k", {"v": 1}, index=False, ttl=60)
        await client.store.put_item(["t"], "j", {"v": 2}, index=["v"])
        item = await client.store.get_item(["t"], key="k", refresh_ttl=False)
        assert item["value"] == {"v": 1}
        found = await client.store.search_items(["t"], query="anything", refresh_ttl=True)
        assert {i["key"] for i in found["items"]} == {"j", "k"}


async def test_the_principal_store_hides_its_label_and_is_what_a_run_gets(store: Store) -> None:
    alice = for_principal(store.items, "alice")
    dotted = for_principal(store.items, "alice.x")
    await alice.aput(("notes",), "n", {"v": 1})
    await dotted.aput(("notes",), "n", {"v": 2})
    item = await alice.aget(("notes",), "n")
    assert item is not None and item.namespace == ("notes",) and item.value == {"v": 1}
    assert await alice.alist_namespaces() == [("notes",)]
    # Underneath, each principal has a tree of its own, whatever its name.
    labels = {ns[0] for ns in await store.items.alist_namespaces(max_depth=1)}
    assert labels == {principal_label("alice"), principal_label("alice.x")}
    assert all("." not in label for label in labels)
    with pytest.raises(ValueError, match="reserved"):
        await alice.aget((principal_label("alice.x"), "notes"), "n")

    registry = GraphRegistry.from_config(GRAPHS)
    use = Access("threads.create_run", store.checkpointer(), alice)
    async with registry.open("steps", use) as graph:
        assert graph.store is alice
    assert registry.static("steps").store is None  # the parts are the use's, not the graph's
