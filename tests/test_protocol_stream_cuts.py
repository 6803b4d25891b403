"""The protocol v2 event stream across what breaks connections: a connection cut mid-stream
(a TCP reset through a proxy) and a SIGKILL of the whole server. LangGraph's own client
reconnects with its ``since`` cursor; what it ends up with is exactly the translation of
the run's log, nothing lost and nothing sent twice (its dedup by ``event_id`` is counted,
not relied on)."""

from __future__ import annotations

import asyncio
import functools
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from outlast.store import Store
from tests.browser import CutProxy
from tests.harness import eventually, make_settings, serve
from tests.lg_util import ended, protocol_frames, same_events
from tests.procs import kill, start_server

CHANNELS = ["values", "updates", "messages", "lifecycle"]


def _count_repeats(stream: Any) -> dict[str, int]:
    """Events the server sent again (the client's dedup drops them): counted here."""
    counter = {"repeats": 0}
    original = stream._dedup_iter

    @functools.wraps(original)
    async def counted(source: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        async for event in source:
            if event.get("event_id") in stream._seen_event_ids:
                counter["repeats"] += 1
                continue
            stream._seen_event_ids.add(event["event_id"])
            yield event

    stream._dedup_iter = counted
    return counter


async def test_a_connection_cut_mid_message_resumes_exactly(store: Store) -> None:
    settings = make_settings(message_flush_interval=0.01)
    async with serve(store, settings) as srv:
        proxy = CutProxy(int(srv.url.rsplit(":", 1)[1]))
        await proxy.start()
        client = get_client(url=f"http://127.0.0.1:{proxy.port}")
        try:
            thread = (await client.threads.create())["thread_id"]
            config = {"configurable": {"words": 30, "delay": 0.04}}
            await client.runs.create(
                thread,
                "lg_chat",
                input={"messages": [{"role": "user", "content": "hi"}]},
                config=config,
            )
            seen: list[dict[str, Any]] = []
            cut = False
            async with client.threads.stream(thread, assistant_id="lg_chat") as stream:
                repeats = _count_repeats(stream)
                async for event in stream.subscribe(CHANNELS):
                    seen.append(event)
                    data = event["params"]["data"]
                    if not cut and data.get("event") == "content-block-delta":
                        await proxy.cut()  # a reset in the middle of the message
                        await proxy.restore()
                        cut = True
                    if ended(event):
                        break
        finally:
            await client.aclose()
            await proxy.close()
        whole = await protocol_frames(srv.client, thread, {"channels": CHANNELS, "since": 0})
        assert cut and repeats["repeats"] == 0
        same_events(seen, whole)
        deltas = [e for e in whole if e["params"]["data"].get("event") == "content-block-delta"]
        assert len(deltas) > 3


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
async def test_after_the_server_is_killed_the_sdk_gets_exactly_the_rest(
    db_url: str, tmp_path: Path, sig: signal.Signals
) -> None:
    """The run is taken over by the restarted server (after a SIGKILL its lease lapses;
    a SIGTERM drains it back to the queue), its next attempt resuming from the last
    checkpoint; the client's reconnect reaches that server with its cursor and reads on
    from there. A SIGTERM cuts the stream rather than ending it: the SDKs take a stream
    that ends as the end of the run."""
    server, url = start_server(db_url, tmp_path / "s1.log")
    port = int(url.rsplit(":", 1)[1])
    restarted = None
    client = get_client(url=url)
    try:
        thread = (await client.threads.create())["thread_id"]
        config = {"configurable": {"steps": 8, "delay": 0.25}}
        await client.runs.create(thread, "lg_slow", input={}, config=config)
        seen: list[dict[str, Any]] = []
        async with client.threads.stream(thread, assistant_id="lg_slow") as stream:
            repeats = _count_repeats(stream)

            async def follow() -> None:
                async for event in stream.subscribe(CHANNELS):
                    seen.append(event)
                    if ended(event):
                        return

            task = asyncio.create_task(follow())

            def two_updates() -> bool:
                assert not task.done(), task
                return sum(e["method"] == "updates" for e in seen) >= 2

            await eventually(two_updates, what="two updates streamed")
            kill(server, sig)
            before = len(seen)
            restarted, _ = start_server(db_url, tmp_path / "s2.log", port=port)
            await asyncio.wait_for(task, 60)
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            whole = await protocol_frames(http, thread, {"channels": CHANNELS, "since": 0})
        assert len(seen) > before and repeats["repeats"] == 0
        assert seen == whole
        attempts = [
            e["params"]["data"]["attempt"]
            for e in whole
            if e["method"] == "lifecycle" and e["params"]["data"]["event"] == "running"
        ]
        assert len(attempts) == 2  # taken over by the restarted server
        # the killed attempt had saved steps (a takeover with progress), the drained one
        # gave its run back: neither spends one of the run's attempts
        assert attempts == [1, 1]
        updates = [e["params"]["data"]["values"]["done"] for e in whole if e["method"] == "updates"]
        assert sorted(x for update in updates for x in update) == list(range(8))
    finally:
        await client.aclose()
        kill(server, signal.SIGKILL)
        if restarted is not None:
            kill(restarted, signal.SIGTERM)
