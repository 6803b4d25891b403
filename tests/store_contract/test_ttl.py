"""TTLs and semantic search as ``langgraph.json`` configures them (``store.ttl``,
``store.index``, ``checkpointer.ttl``), on both backends: items' default TTL, per-item
TTLs, refresh on read, expired items never read and swept, one sweep per interval
across processes; threads past their TTL deleted unless a run of theirs is active;
items ranked by cosine similarity of a deterministic embedding."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from outlast.errors import ThreadBusy
from outlast.store import Store
from outlast.store.items import for_principal
from outlast.store.options import ItemTTL, ThreadTTL
from outlast.vocabulary import RunStatus
from tests.ttl_support import (
    OPTIONS,
    age_items,
    age_threads,
    checkpoints,
    expiry,
    opened,
    thread_ttl,
    vectors,
)
from tests.util import new_run

MINUTE = 60.0


async def test_default_ttl_applies_and_expired_items_are_never_read(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with opened(backend, request, tmp_path) as store:
        items = for_principal(store.items, "alice")
        await items.aput(("docs",), "default", {"text": "a"})
        await items.aput(("docs",), "own", {"text": "b"}, ttl=2)
        await items.aput(("docs",), "never", {"text": "c"}, ttl=None)
        assert (await expiry(store, "default"))[1] == 10  # type: ignore[index]
        assert (await expiry(store, "own"))[1] == 2  # type: ignore[index]
        assert await expiry(store, "never") == (None, None)
        await age_items(store, 5 * MINUTE)  # "own" (2 min) has expired, "default" not
        assert await items.aget(("docs",), "own", refresh_ttl=False) is None
        found = await items.asearch(("docs",), refresh_ttl=False)  # a read would refresh
        assert {i.key for i in found} == {"default", "never"}
        await age_items(store, 6 * MINUTE)
        assert await items.aget(("docs",), "default") is None
        assert [i.key for i in await items.asearch(("docs",), query="a")] == ["never"]
        assert await items.aget(("docs",), "never") is not None
        await store.sweep_items(force=True)
        assert await expiry(store, "default") is None and await expiry(store, "own") is None
        assert await expiry(store, "never") == (None, None)
        assert await vectors(store) == 1  # the swept items' vectors went with them


async def test_reads_refresh_the_ttl_unless_told_not_to(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with opened(backend, request, tmp_path) as store:
        items = for_principal(store.items, "alice")
        await items.aput(("docs",), "k", {"text": "a"}, ttl=10)
        await age_items(store, 5 * MINUTE)
        aged = (await expiry(store, "k"))[0]  # type: ignore[index]
        await items.aget(("docs",), "k", refresh_ttl=False)
        await items.asearch(("docs",), refresh_ttl=False)
        assert (await expiry(store, "k"))[0] == aged
        await items.aget(("docs",), "k")  # refresh_on_read
        refreshed = (await expiry(store, "k"))[0]
        assert refreshed is not None and aged is not None
        assert refreshed - aged > 4 * MINUTE  # back to 10 minutes from now
        await age_items(store, 5 * MINUTE)
        aged = (await expiry(store, "k"))[0]
        await items.asearch(("docs",), query="a")  # a ranked search refreshes too
        assert (await expiry(store, "k"))[0] - aged > 4 * MINUTE  # type: ignore[operator]


async def test_refresh_on_read_off_refreshes_only_when_asked(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    options = dataclasses.replace(
        OPTIONS, item_ttl=ItemTTL(default_minutes=10, refresh_on_read=False)
    )
    async with opened(backend, request, tmp_path, options) as store:
        items = for_principal(store.items, "alice")
        await items.aput(("docs",), "k", {"text": "a"})
        await age_items(store, 5 * MINUTE)
        aged = (await expiry(store, "k"))[0]
        await items.aget(("docs",), "k")
        await items.asearch(("docs",))
        assert (await expiry(store, "k"))[0] == aged
        await items.aget(("docs",), "k", refresh_ttl=True)
        assert (await expiry(store, "k"))[0] - aged > 4 * MINUTE  # type: ignore[operator]


async def test_one_sweep_per_interval_across_processes(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with (
        opened(backend, request, tmp_path) as first,
        opened(backend, request, tmp_path, truncate=False) as second,
    ):
        assert await first.sweep_items() == 0  # due: this process takes it
        assert await second.sweep_items() is None  # the same interval: not again
        assert await first.sweep_items() is None
        assert await second.lg_expire_threads() == []
        assert await first.lg_expire_threads() is None
        assert await first.sweep_items(force=True) == 0


async def test_threads_past_their_ttl_are_deleted_unless_a_run_is_active(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with opened(backend, request, tmp_path) as store:
        await store.lg_create_thread("idle", "alice", {})  # the default: 60 minutes
        await store.lg_create_thread("short", "alice", {}, ttl_minutes=5)
        assert await thread_ttl(store, "idle") == 60
        assert await thread_ttl(store, "short") == 5
        busy, _ = await store.create_run(new_run(thread_id="busy"))  # made by its run
        assert await thread_ttl(store, "busy") == 60
        ended, _ = await store.create_run(new_run(thread_id="ended"))
        await store.request_cancel(ended.id, "test")
        await store.lg_create_thread("kept", "alice", {}, ttl_minutes=5)
        await store.lg_set_thread_ttl("kept", None)
        await age_threads(store, 10 * MINUTE)
        assert sorted(await store.lg_expire_threads(force=True) or []) == ["short"]
        await age_threads(store, 60 * MINUTE)
        assert sorted(await store.lg_expire_threads(force=True) or []) == ["ended", "idle"]
        assert await store.get_run(ended.id) is None  # its runs went with it
        # a queued run holds its thread, however old; so does "kept", without a TTL
        assert {t.thread_id for t in await store.lg_threads()} == {"busy", "kept"}
        run = await store.get_run(busy.id)
        assert run is not None and run.status == RunStatus.QUEUED


async def test_semantic_search_ranks_by_cosine_similarity(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with opened(backend, request, tmp_path) as store:
        items = for_principal(store.items, "alice")
        await items.aput(("docs", "x"), "aaa", {"text": "aaa", "n": 1})
        await items.aput(("docs", "y"), "aab", {"text": "aab", "n": 2})
        await items.aput(("docs",), "bbb", {"text": "bbb", "n": 3})
        await items.aput(("docs",), "cab", {"text": "cab", "n": 4})
        await items.aput(("docs",), "plain", {"text": "aaaa"}, index=False)
        await for_principal(store.items, "bob").aput(("docs",), "bob", {"text": "a"})
        found = await items.asearch(("docs",), query="a")
        assert [i.key for i in found] == ["aaa", "aab", "cab", "bbb"]
        scores = [i.score for i in found]
        assert scores[0] == pytest.approx(1.0)
        assert scores[1] == pytest.approx(2 / math.sqrt(5))
        assert scores[3] == pytest.approx(0.0)
        assert [i.key for i in await items.asearch(("docs",), query="b", limit=2)] == [
            "bbb",
            "cab",  # 1/sqrt(3), before aab's 1/sqrt(5)
        ]
        page = await items.asearch(("docs",), query="a", offset=1, limit=2)
        assert [i.key for i in page] == ["aab", "cab"]
        filtered = await items.asearch(("docs",), query="a", filter={"n": {"$gte": 3}})
        assert [i.key for i in filtered] == ["cab", "bbb"]
        assert [i.key for i in await items.asearch(("docs", "y"), query="a")] == ["aab"]
        # a put embeds anew; index=False and a delete leave no vector behind
        await items.aput(("docs",), "bbb", {"text": "aaaaa", "n": 3})
        assert (await items.asearch(("docs",), query="a", limit=1))[0].key in {"aaa", "bbb"}
        await items.aput(("docs",), "cab", {"text": "cab"}, index=False)
        await items.adelete(("docs", "x"), "aaa")
        assert [i.key for i in await items.asearch(("docs",), query="a")] == ["bbb", "aab"]
        assert await vectors(store) == 3  # bbb, aab and bob's
        # without a query, LangGraph's order (newest first), no score
        assert all(i.score is None for i in await items.asearch(("docs",)))


class Count(TypedDict):
    n: Annotated[int, operator.add]


def _asking(state: Count) -> Count:
    return {"n": interrupt("how many?")}


def _graph(store: Store) -> Any:
    """``inc`` then ``sub``, a subgraph (its calls: namespaces ``sub:<task>``) whose
    ``ask`` waits for a number."""
    sub = StateGraph(Count)
    sub.add_node("one", lambda s: {"n": 1})
    sub.add_node("ask", _asking)
    sub.add_edge(START, "one")
    sub.add_edge("one", "ask")
    root = StateGraph(Count)
    root.add_node("inc", lambda s: {"n": 1})
    root.add_node("sub", sub.compile())
    root.add_edge(START, "inc")
    root.add_edge("inc", "sub")
    return root.compile(checkpointer=store.checkpointer())


async def _turns(graph: Any, thread_id: str, answers: list[int]) -> None:
    """One invocation per answer, each answered; then one left waiting in the subgraph."""
    config = {"configurable": {"thread_id": thread_id}}
    for answer in answers:
        await graph.ainvoke({"n": 0}, config)
        await graph.ainvoke(Command(resume=answer), config)
    await graph.ainvoke({"n": 0}, config)


async def test_keep_latest_keeps_the_thread_and_its_latest_state(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    keep = dataclasses.replace(
        OPTIONS, thread_ttl=ThreadTTL(default_minutes=5, strategy="keep_latest")
    )
    async with opened(backend, request, tmp_path, keep) as store:
        graph = _graph(store)
        config: Any = {"configurable": {"thread_id": "kept"}}
        await store.lg_create_thread("kept", "alice", {})  # the default: keep_latest
        await store.lg_create_thread("gone", "alice", {}, ttl_minutes=5)  # its own: delete
        await _turns(graph, "kept", [10, 20])
        before = await checkpoints(store, "kept")
        assert before[""] > 5 and len(before) == 4  # the root and three subgraph calls
        state = await graph.aget_state(config)
        await age_threads(store, 10 * MINUTE)
        assert await store.lg_expire_threads(force=True) == ["gone"]
        assert [t.thread_id for t in await store.lg_threads()] == ["kept"]
        # the latest root checkpoint, and the call waiting in the subgraph, whole
        after = await checkpoints(store, "kept")
        assert after[""] == 1 and len(after) == 2 and set(after.values()) == {1}
        assert set(after) < set(before)
        assert (await graph.aget_state(config)).values == state.values
        assert len([s async for s in graph.aget_state_history(config)]) == 1
        # the wait goes on where it was: one more, and the answer, reach the root
        resumed = await graph.ainvoke(Command(resume=1000), config)
        assert resumed["n"] > 1000 + state.values["n"]
        # pruned once per update: checkpoints written since are kept until it is updated
        await age_threads(store, 10 * MINUTE)
        assert await store.lg_expire_threads(force=True) == []
        assert (await checkpoints(store, "kept"))[""] > 1
        await store.lg_set_thread_metadata("kept", {"seen": True})
        await age_threads(store, 10 * MINUTE)
        assert await store.lg_expire_threads(force=True) == []
        assert await checkpoints(store, "kept") == {"": 1}  # the call is over: it went


async def test_keep_latest_waits_for_an_active_run_and_prune_refuses_one(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with opened(backend, request, tmp_path) as store:
        graph = _graph(store)
        busy, _ = await store.create_run(new_run(thread_id="busy"))  # stays queued
        await store.lg_set_thread_ttl("busy", 5, "keep_latest")
        await store.lg_create_thread("idle", "alice", {}, 5, "keep_latest")
        await store.lg_create_thread("other", "alice", {})
        for thread_id in ("busy", "idle", "other"):
            await _turns(graph, thread_id, [1])
        expiry = await store.lg_thread_expiry("idle")
        assert expiry is not None and expiry.strategy == "keep_latest"
        assert expiry.ttl_minutes == 5 and expiry.expires_at > dt.datetime.now(dt.UTC)
        await store.lg_set_thread_ttl("other", None)
        assert await store.lg_thread_expiry("other") is None
        await age_threads(store, 10 * MINUTE)
        assert await store.lg_expire_threads(force=True) == []
        assert (await checkpoints(store, "busy"))[""] > 1  # its run is queued: left alone
        assert (await checkpoints(store, "idle"))[""] == 1
        with pytest.raises(ThreadBusy):
            await store.lg_prune_threads(["other", "busy"], "keep_latest")
        assert (await checkpoints(store, "other"))[""] > 1  # all or nothing
        pruned = await store.lg_prune_threads(["other", "nowhere"], "keep_latest")
        assert pruned == ["other"] and len(await checkpoints(store, "other")) == 2
        assert await store.lg_prune_threads(["other"], "delete") == ["other"]
        assert await checkpoints(store, "other") == {}
        assert {t.thread_id for t in await store.lg_threads()} == {"busy", "idle"}
        run = await store.get_run(busy.id)
        assert run is not None and run.status == RunStatus.QUEUED
