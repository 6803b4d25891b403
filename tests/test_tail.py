"""Many streams on one run share one reader: an event costs one query, not one per client."""

from __future__ import annotations

import asyncio
from typing import Any

from outlast.store import Store
from tests.harness import collect, post_run, serve, wait_result


async def test_twenty_streams_share_the_reads_of_one(store: Store) -> None:
    reads = 0
    real = store.read_events

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal reads
        reads += 1
        return await real(*args, **kwargs)

    store.read_events = counted  # type: ignore[method-assign]
    async with serve(store) as srv:
        run = await post_run(
            srv.client, graph="steps", config={"configurable": {"step_delay": 0.3}}
        )
        streams = [collect(srv.client, run["id"]) for _ in range(20)]
        got = await asyncio.gather(*streams)
        final = await wait_result(srv.client, run["id"])
    everything = list(range(1, final["last_seq"] + 1))
    for events in got:
        assert [int(e.id) for e in events if e.id] == everything  # each exact
    # Without sharing: about one read per client per wake-up, 20 x the events.
    assert reads < 3 * len(everything) + 40, reads


async def test_each_event_is_encoded_once_for_all_its_streams(
    store: Store, monkeypatch: Any
) -> None:
    from outlast.api import sse

    encodings = 0
    real = sse.encoded

    def counted(event: Any) -> bytes:
        nonlocal encodings
        encodings += 1
        return real(event)

    monkeypatch.setattr(sse, "encoded", counted)
    async with serve(store) as srv:
        run = await post_run(
            srv.client, graph="steps", config={"configurable": {"step_delay": 0.2}}
        )
        got = await asyncio.gather(*(collect(srv.client, run["id"]) for _ in range(20)))
        final = await wait_result(srv.client, run["id"])
    for events in got:
        assert [int(e.id) for e in events if e.id] == list(range(1, final["last_seq"] + 1))
        assert [e.data for e in events if e.id] == [e.data for e in got[0] if e.id]
    # 20 streams of every event: one encoding each, but for the replays of streams that
    # attached behind the tail (at most the events already written when they attached)
    assert encodings < 2 * final["last_seq"] + 20, encodings
