"""TTLs and semantic search through LangGraph's own client (``langgraph_sdk``), on both
backends: ``client.store`` with a default TTL, a per-item ``ttl``, ``refresh_ttl`` and a
``query``; ``client.threads.create(ttl=…)`` and the retention pass that deletes a thread
past its TTL but not one whose run is still queued."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph_sdk.errors import NotFoundError

from outlast.runtime.retention import retain
from tests.harness import serve
from tests.ttl_support import age_items, age_threads, expiry, opened, thread_ttl

MINUTE = 60.0


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
        response = await srv.client.post(
            "/threads", json={"ttl": {"ttl": 5, "strategy": "keep_latest"}}
        )
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
