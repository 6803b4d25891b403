"""The thread service (``outlast/service/threads.py``) on both backends, without HTTP: whose
thread a caller sees (another principal's is not found, for every verb), a thread made
with its supersteps or not at all, a copy through the saver, a prune, and a delete under
a live run (the run that owes compensations is kept, cancelled, to undo them; the others
go with the thread)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from langgraph.types import StateUpdate

from outlast.errors import (
    SuperstepsRefused,
    ThreadBusy,
    ThreadExists,
    ThreadNotFound,
)
from outlast.graph.registry import GraphRegistry
from outlast.service.threads import ThreadService
from outlast.store import Store
from outlast.store.transitions import THREAD_DELETED
from outlast.vocabulary import RunStatus
from tests.harness import TESTS
from tests.ttl_support import checkpoints
from tests.util import new_run

GRAPHS = {"lg_hitl": "./lg_graphs.py:hitl", "lg_nested": "./lg_graphs.py:nested"}


@pytest.fixture(scope="module")
def registry() -> GraphRegistry:
    return GraphRegistry(GRAPHS, TESTS)


def _as(store: Store, registry: GraphRegistry, principal: str) -> ThreadService:
    return ThreadService(store, registry, principal)


def _steps(*topics: str) -> list[list[StateUpdate]]:
    """One superstep per topic, each ``think`` setting it."""
    return [[StateUpdate({"topic": t}, "think")] for t in topics]


async def _values(threads: ThreadService, thread_id: str) -> Any:
    thread = await threads.get(thread_id)
    async with threads.graph(thread, "threads.read") as graph:
        return (await graph.aget_state({"configurable": {"thread_id": thread_id}})).values


async def _history(threads: ThreadService, thread_id: str) -> int:
    thread = await threads.get(thread_id)
    async with threads.graph(thread, "threads.read") as graph:
        config = {"configurable": {"thread_id": thread_id}}
        return len([s async for s in graph.aget_state_history(config)])


async def test_another_principals_thread_is_not_found(
    store: Store, registry: GraphRegistry
) -> None:
    alice, bob = _as(store, registry, "alice"), _as(store, registry, "bob")
    made = await alice.create("t-alice", {"graph_id": "lg_hitl"}, supersteps=_steps("a", "b"))
    assert made.principal == "alice" and (await alice.get("t-alice")).thread_id == "t-alice"
    assert await bob.find("t-alice") is None
    for refused in (
        bob.get("t-alice"),
        bob.get("t-alice", "update"),
        bob.copy("t-alice"),
        bob.delete("t-alice"),
    ):
        with pytest.raises(ThreadNotFound, match="t-alice"):
            await refused
    # a prune skips it, uncounted; a create with its id is refused, whatever if_exists
    assert await bob.prune(["t-alice"], "delete") == []
    assert await bob.prune(["t-alice"], "keep_latest") == []
    for if_exists in ("raise", "do_nothing"):
        with pytest.raises(ThreadExists, match="t-alice"):
            await bob.create("t-alice", {}, if_exists=if_exists)
    # all of it left alice's thread as it was
    assert await _values(alice, "t-alice") == {"topic": "b"}
    assert await _history(alice, "t-alice") == 2
    assert (await alice.get("t-alice")).principal == "alice"


async def test_a_thread_is_made_with_its_supersteps_or_not_at_all(
    store: Store, registry: GraphRegistry
) -> None:
    alice = _as(store, registry, "alice")
    made = await alice.create(None, {"graph_id": "lg_hitl"}, supersteps=_steps("x", "y"))
    assert await _values(alice, made.thread_id) == {"topic": "y"}
    assert await _history(alice, made.thread_id) == 2
    # do_nothing returns the caller's own thread as it is; raise refuses
    again = await alice.create(made.thread_id, {"other": 1}, if_exists="do_nothing")
    assert again.thread_id == made.thread_id and "other" not in again.metadata
    with pytest.raises(ThreadExists):
        await alice.create(made.thread_id, {})
    bad = [[StateUpdate({"topic": "z"}, "no_such_node")]]
    with pytest.raises(SuperstepsRefused, match="supersteps"):
        await alice.create("refused", {"graph_id": "lg_hitl"}, supersteps=_steps("ok") + bad)
    assert await alice.find("refused") is None
    assert await checkpoints(store, "refused") == {}  # the first superstep went too


async def test_a_copy_is_the_callers_new_thread_with_the_originals_checkpoints(
    store: Store, registry: GraphRegistry
) -> None:
    alice = _as(store, registry, "alice")
    source = await alice.create("source", {"graph_id": "lg_hitl", "k": "v"})
    async with alice.graph(source, "threads.update") as graph:
        config: Any = {"configurable": {"thread_id": "source"}}
        for topic in ("a", "b", "c"):
            config = await graph.aupdate_state(config, {"topic": topic}, "think")
    copied = await alice.copy("source")
    assert copied.thread_id != "source" and copied.principal == "alice"
    assert copied.metadata == source.metadata and copied.run_graph == "lg_hitl"
    assert copied.run_id is None  # the runs and their logs stay with the original
    assert await checkpoints(store, copied.thread_id) == await checkpoints(store, "source")
    assert await _values(alice, copied.thread_id) == await _values(alice, "source")
    assert await _history(alice, copied.thread_id) == 3
    # each goes on alone
    async with alice.graph(copied, "threads.update") as graph:
        config = {"configurable": {"thread_id": copied.thread_id}}
        await graph.aupdate_state(config, {"topic": "copy only"}, "think")
    assert (await _values(alice, "source"))["topic"] == "c"
    assert (await _values(alice, copied.thread_id))["topic"] == "copy only"


async def test_a_prune_keeps_the_latest_or_deletes_and_refuses_a_busy_thread(
    store: Store, registry: GraphRegistry
) -> None:
    alice = _as(store, registry, "alice")
    for thread_id in ("kept", "gone"):
        await alice.create(thread_id, {"graph_id": "lg_hitl"}, supersteps=_steps("a", "b", "c"))
    busy = dataclasses.replace(new_run(graph="lg_hitl", thread_id="busy"), principal="alice")
    await store.create_run(busy)  # stays queued
    with pytest.raises(ThreadBusy):
        await alice.prune(["kept", "busy"], "keep_latest")
    assert await _history(alice, "kept") == 3  # all or nothing
    assert await alice.prune(["kept", "kept", "nowhere"], "keep_latest") == ["kept"]
    assert await _history(alice, "kept") == 1
    assert await _values(alice, "kept") == {"topic": "c"}
    assert await alice.prune(["gone"], "delete") == ["gone"]
    assert await alice.find("gone") is None and await checkpoints(store, "gone") == {}
    assert await alice.find("kept") is not None


async def test_a_delete_under_a_live_run_keeps_the_run_that_owes_until_it_undid_it(
    store: Store, registry: GraphRegistry
) -> None:
    alice = _as(store, registry, "alice")
    await alice.create("t", {"graph_id": "lg_hitl"}, supersteps=_steps("a"))
    booked = dataclasses.replace(new_run(graph="lg_hitl", thread_id="t"), principal="alice")
    await store.create_run(booked)
    (running,) = await store.claim("w", 30, 1)
    assert running.id == booked.id
    await store.effect_begin(booked.id, "k", "book", "h", {}, True, compensate="m:unbook")
    await store.effect_finish(booked.id, "k", "done", result={"booking": 7})
    queued = dataclasses.replace(new_run(graph="lg_hitl", thread_id="t"), principal="alice")
    await store.create_run(queued)  # behind it, owing nothing
    await alice.delete("t")
    assert await alice.find("t") is None
    assert await checkpoints(store, "t") == {}
    kept = await store.get_run(booked.id)
    assert kept is not None and kept.status == RunStatus.CANCELLING  # its worker undoes
    assert (kept.error or {}).get("reason") == THREAD_DELETED
    assert await store.get_run(queued.id) is None  # gone with its thread
    with pytest.raises(ThreadNotFound):
        await alice.delete("t")
