"""TTLs and semantic search through LangGraph's own client (``langgraph_sdk``), on both
backends: ``client.store`` with a default TTL, a per-item ``ttl``, ``refresh_ttl`` and a
``query``; ``client.threads.create(ttl=…)`` and the retention pass that deletes a thread
past its TTL but not one whose run is still queued; ``keep_latest``, ``include=["ttl"]``
and ``client.threads.prune``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError

from outlast.runtime.retention import retain
from tests.harness import serve
from tests.ttl_support import age_items, age_threads, expiry, opened, thread_ttl

MINUTE = 60.0


def _time(value: str | dt.datetime) -> dt.datetime:
    return value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(value)


async def test_store_items_expire_refresh_and_rank_through_the_sdk(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with opened(backend, request, tmp_path) as store, serve(store, with_worker=False) as srv:
        client = srv.sdk()
        await client.store.put_item(["docs"], "k", {"text": "aab"})  # default: 10 minutes
        await client.store.put_item(["docs"], "a", {"text": "aaa"}, ttl=1)
        await client.store.put_item(["docs"], "b", {"text": "bbb"}, index=False)
        assert (await expiry(store, "k"))[1] == 10  # type: ignore[index]
        assert (await expiry(store, "a"))[1] == 1  # type: ignore[index]
        found = (await client.store.search_items(["docs"], query="a"))["items"]
        assert [i["key"] for i in found] == ["a", "k"]  # "b" is not indexed
        assert found[0]["score"] == pytest.approx(1.0)
        assert found[0]["score"] > found[1]["score"] > 0
        await age_items(store, 5 * MINUTE)
        aged = (await expiry(store, "k"))[0]  # type: ignore[index]
        assert await client.store.get_item(["docs"], "a") is None  # expired: not read
        await client.store.get_item(["docs"], "k", refresh_ttl=False)
        assert (await expiry(store, "k"))[0] == aged  # type: ignore[index]
        await client.store.get_item(["docs"], "k")  # refresh_on_read
        assert (await expiry(store, "k"))[0] - aged > 4 * MINUTE  # type: ignore[index,operator]
        await retain(store, srv.settings, force=True)
        assert await expiry(store, "a") is None  # swept
        keys = [i["key"] for i in (await client.store.search_items(["docs"]))["items"]]
        assert sorted(keys) == ["b", "k"]


async def test_a_thread_past_its_ttl_is_deleted_unless_its_run_is_active(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with opened(backend, request, tmp_path) as store, serve(store, with_worker=False) as srv:
        client = srv.sdk()
        short = await client.threads.create(ttl={"strategy": "delete", "ttl": 5})
        bare = await client.threads.create(ttl=5)  # the SDK sends {"ttl": 5, ...}
        usual = await client.threads.create()  # the deployment's default, 60 minutes
        busy = await client.threads.create(ttl=5)
        await client.runs.create(busy["thread_id"], "steps", input={"n": 1})  # stays queued
        assert await thread_ttl(store, short["thread_id"]) == 5
        assert await thread_ttl(store, bare["thread_id"]) == 5
        assert await thread_ttl(store, usual["thread_id"]) == 60
        response = await srv.client.post("/threads", json={"ttl": {"ttl": 5, "strategy": "x"}})
        assert response.status_code == 422
        await age_threads(store, 10 * MINUTE)
        await retain(store, srv.settings, force=True)
        for gone in (short, bare):
            with pytest.raises(NotFoundError):
                await client.threads.get(gone["thread_id"])
        assert (await client.threads.get(usual["thread_id"]))["thread_id"] == usual["thread_id"]
        assert (await client.threads.get(busy["thread_id"]))["status"] == "busy"
        # a PATCH gives a thread a new TTL, from now
        await client.threads.update(usual["thread_id"], metadata={}, ttl=5)
        assert await thread_ttl(store, usual["thread_id"]) == 5
        await age_threads(store, 10 * MINUTE)
        await retain(store, srv.settings, force=True)
        with pytest.raises(NotFoundError):
            await client.threads.get(usual["thread_id"])


async def test_keep_latest_prune_and_include_ttl_through_the_sdk(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with opened(backend, request, tmp_path) as store, serve(store) as srv:
        client = srv.sdk()
        kept = (await client.threads.create(ttl={"strategy": "keep_latest", "ttl": 5}))["thread_id"]
        await client.runs.wait(kept, "lg_hitl", input={"topic": "t"})  # waiting: it asks
        read = await client.threads.get(kept, include=["ttl"])
        ttl = read["ttl"]
        assert ttl["strategy"] == "keep_latest" and ttl["ttl_minutes"] == 5
        # from the last update: the thread's, or its run's (later)
        left = dt.datetime.fromisoformat(ttl["expires_at"]) - _time(read["updated_at"])
        assert dt.timedelta(minutes=5) <= left < dt.timedelta(minutes=6)
        assert "ttl" not in await client.threads.get(kept)
        usual = (await client.threads.create())["thread_id"]
        assert (await client.threads.get(usual, include=["ttl"]))["ttl"]["strategy"] == "delete"
        # a run waiting for its answer holds the thread's history, past the TTL or not
        await age_threads(store, 10 * MINUTE)
        await retain(store, srv.settings, force=True)
        assert len(await client.threads.get_history(kept)) > 1
        with pytest.raises(ConflictError):
            await client.threads.prune([kept, usual], strategy="keep_latest")
        await client.threads.update_state(kept, {"answer": "yes"}, as_node="ask")
        await client.runs.wait(kept, "lg_hitl", input=None)
        state = await client.threads.get_state(kept)
        assert state["values"]["done"] == "acted on 'yes'"
        await age_threads(store, 10 * MINUTE)
        await retain(store, srv.settings, force=True)
        history = await client.threads.get_history(kept)
        assert [h["values"] for h in history] == [state["values"]]
        assert (await client.threads.get_state(kept))["values"] == state["values"]
        # prune now: keep_latest, then delete; a thread not found is not counted
        pruned = (await client.threads.create(graph_id="lg_hitl"))["thread_id"]
        for answer in ("a", "b", "c"):
            await client.threads.update_state(pruned, {"answer": answer}, as_node="ask")
        assert len(await client.threads.get_history(pruned)) == 3
        result = await client.threads.prune([pruned, "nowhere"], strategy="keep_latest")
        assert result == {"pruned_count": 1}
        history = await client.threads.get_history(pruned)
        assert [h["values"] for h in history] == [{"answer": "c"}]
        assert await client.threads.prune([pruned, usual]) == {"pruned_count": 2}
        for gone in (pruned, usual):
            with pytest.raises(NotFoundError):
                await client.threads.get(gone)
        assert (await client.threads.get(kept))["status"] == "idle"
