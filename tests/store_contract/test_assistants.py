"""User assistants and their versions (store/assistants.py ``AssistantOps``): owned by a
principal, invisible to every other."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from outlast.store import Store
from outlast.store.assistants import AssistantExists, AssistantNotFound
from tests.store_contract.support import Notes


def _id() -> str:
    return str(uuid.uuid4())


async def test_create_get_and_the_owner_only(store: Store, notes: Notes) -> None:
    aid = _id()
    made, created = await store.create_assistant(
        assistant_id=aid,
        graph_id="steps",
        name="Helper",
        description="d",
        config={"configurable": {"x": 1}},
        context={"c": 1},
        metadata={"team": "a"},
        principal="alice",
    )
    assert created and made.version == 1 and made.principal == "alice"
    assert (made.graph_id, made.name, made.description) == ("steps", "Helper", "d")
    assert made.config == {"configurable": {"x": 1}} and made.context == {"c": 1}
    got = await store.get_assistant(aid, "alice")
    assert got == made
    assert await store.get_assistant(aid, "bob") is None
    assert await store.get_assistant(_id(), "alice") is None
    with pytest.raises(AssistantExists):
        await store.create_assistant(
            assistant_id=aid, graph_id="steps", name="x", principal="alice"
        )
    same, created = await store.create_assistant(
        assistant_id=aid, graph_id="other", name="x", if_exists="do_nothing", principal="alice"
    )
    assert not created and same == made
    with pytest.raises(AssistantExists):  # another principal's is never handed out
        await store.create_assistant(
            assistant_id=aid, graph_id="steps", name="x", if_exists="do_nothing", principal="bob"
        )
    assert await notes.take() == set()  # assistants wake nobody


async def test_concurrent_creates_make_one(store: Store) -> None:
    aid = _id()
    results = await asyncio.gather(
        *(
            store.create_assistant(
                assistant_id=aid, graph_id="steps", name="n", if_exists="do_nothing"
            )
            for _ in range(10)
        )
    )
    assert sum(created for _, created in results) == 1
    assert len(await store.list_assistant_versions(aid)) == 1


async def test_search_and_count(store: Store) -> None:
    ids, made_all = [], []
    for i, (graph, team) in enumerate([("g1", "a"), ("g1", "b"), ("g2", "a")]):
        made, _ = await store.create_assistant(
            assistant_id=_id(),
            graph_id=graph,
            name=f"Bot {i}",
            metadata={"team": team},
            principal="p",
        )
        ids.append(made.assistant_id)
        made_all.append(made)
    await store.create_assistant(assistant_id=_id(), graph_id="g1", name="Bot", principal="q")
    # newest first; assistants made in the same instant (the clock's resolution) by id
    by_id = sorted(made_all, key=lambda a: a.assistant_id)
    newest = [a.assistant_id for a in sorted(by_id, key=lambda a: a.created_at, reverse=True)]
    page, total = await store.search_assistants(principal="p", limit=2)
    assert total == 3 and [a.assistant_id for a in page] == newest[:2]
    page, total = await store.search_assistants(principal="p", limit=2, offset=2)
    assert total == 3 and [a.assistant_id for a in page] == newest[2:]
    page, total = await store.search_assistants(principal="p", metadata={"team": "a"})
    assert total == 2 and {a.assistant_id for a in page} == {ids[0], ids[2]}
    page, _ = await store.search_assistants(principal="p", name="BOT 1")
    assert [a.assistant_id for a in page] == [ids[1]]
    page, _ = await store.search_assistants(
        principal="p", graph_id="g1", sort_by="name", sort_order="asc"
    )
    assert [a.name for a in page] == ["Bot 0", "Bot 1"]
    with pytest.raises(ValueError):
        await store.search_assistants(principal="p", sort_by="version; drop")
    assert await store.count_assistants(principal="p") == 3
    assert await store.count_assistants(principal="p", graph_id="g1", metadata={"team": "b"}) == 1
    assert await store.count_assistants(principal="p", name="nothing") == 0
    assert await store.count_assistants(principal="q") == 1


async def test_versions_update_set_latest_and_delete(store: Store) -> None:
    aid = _id()
    await store.create_assistant(
        assistant_id=aid, graph_id="g", name="v1", metadata={"a": 1}, principal="p"
    )
    v2 = await store.update_assistant(aid, {"name": "v2", "metadata": {"b": 2}}, principal="p")
    assert v2.version == 2 and v2.name == "v2" and v2.metadata == {"a": 1, "b": 2}
    assert v2.graph_id == "g"  # absent fields keep their value
    back = await store.set_latest_assistant_version(aid, 1, principal="p")
    assert back.version == 1 and back.name == "v1"
    v3 = await store.update_assistant(aid, {"description": "d"}, principal="p")
    assert v3.version == 3 and v3.name == "v1"  # the highest stored + 1, not current + 1
    versions = await store.list_assistant_versions(aid, principal="p")
    assert [v.version for v in versions] == [3, 2, 1]
    assert all(v.updated_at == v.created_at for v in versions)
    only = await store.list_assistant_versions(aid, principal="p", metadata={"b": 2})
    assert [v.version for v in only] == [2]
    assert [
        v.version
        for v in await store.list_assistant_versions(aid, principal="p", limit=1, offset=1)
    ] == [2]
    with pytest.raises(ValueError):
        await store.update_assistant(aid, {"version": 9}, principal="p")
    for call in (
        store.update_assistant(aid, {"name": "x"}, principal="other"),
        store.set_latest_assistant_version(aid, 1, principal="other"),
        store.set_latest_assistant_version(aid, 99, principal="p"),
        store.list_assistant_versions(aid, principal="other"),
        store.delete_assistant(aid, principal="other"),
    ):
        with pytest.raises(AssistantNotFound):
            await call
    await store.delete_assistant(aid, principal="p")
    assert await store.get_assistant(aid, "p") is None
    with pytest.raises(AssistantNotFound):
        await store.delete_assistant(aid, principal="p")
