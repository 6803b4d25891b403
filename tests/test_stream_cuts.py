"""A client whose connection is cut at random points, over and over, still sees every
event exactly once: what it received, concatenated, equals the stored log."""

from __future__ import annotations

import asyncio
import json
import random

import httpx

from outlast.client.sse import Frame, Frames
from outlast.store import Store
from tests.harness import post_run, serve


def _complete_events(buffer: bytes) -> tuple[list[Frame], bytes]:
    """Split complete SSE events off the buffer; an event cut in half stays behind and is
    discarded with the connection, exactly as EventSource does."""
    *blocks, rest = buffer.replace(b"\r\n", b"\n").split(b"\n\n")
    reader = Frames()
    lines = [line for block in blocks for line in [*block.decode().split("\n"), ""]]
    sent = [reader.feed(line) for line in lines]
    return [frame for frame in sent if frame and frame.data is not None], rest


async def _follow_with_cuts(
    client: httpx.AsyncClient, run_id: str, rng: random.Random
) -> tuple[list[Frame], int, int]:
    """Follow the run to its end through cuts; returns what was received, the number of
    cuts, and how many of them fell inside an event (its first half thrown away)."""
    received: list[Frame] = []
    last_id: str | None = None
    cuts = 0
    halves = 0
    while True:
        budget = rng.choice([1, 7, 50, 200, 600, 2000, 10**9])  # bytes before the cut
        headers = {"Last-Event-ID": last_id} if last_id is not None else {}
        seen = 0
        buffer = b""
        finished = False
        async with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as response:
            assert response.status_code == 200
            async for chunk in response.aiter_raw():
                take = chunk[: max(0, budget - seen)]
                seen += len(take)
                buffer += take
                events, buffer = _complete_events(buffer)
                for event in events:
                    received.append(event)
                    last_id = event.id
                    if event.event in ("run.completed", "run.failed", "run.cancelled"):
                        finished = True
                if finished or seen >= budget:
                    break  # leaving the block closes the TCP connection mid-stream
        if finished:
            return received, cuts, halves
        cuts += 1
        halves += bool(buffer.strip(b"\n"))


async def test_random_cuts_lose_and_repeat_nothing(store: Store) -> None:
    rng = random.Random(20261129)
    async with serve(store) as srv:
        total_cuts = 0
        total_halves = 0
        runs = 0
        while total_cuts < 50 or runs < 3:
            # several runs live at once, each followed by its own cut-prone client
            batch = [
                await post_run(
                    srv.client,
                    graph="counted",
                    input={},
                    config={"configurable": {"count_file": "/dev/null", "step_delay": 0.03}},
                )
                for _ in range(3)
            ]
            results = await asyncio.gather(
                *(
                    _follow_with_cuts(srv.client, r["id"], random.Random(rng.random()))
                    for r in batch
                )
            )
            for run, (received, cuts, halves) in zip(batch, results, strict=True):
                runs += 1
                total_cuts += cuts
                total_halves += halves
                stored = await store.read_events(run["id"], 0, 10_000)
                assert [int(e.id or 0) for e in received] == [e.seq for e in stored]
                assert [e.event for e in received] == [e.type for e in stored]
                assert [json.loads(e.data or "")["data"] for e in received] == [
                    e.data for e in stored
                ]
        # The cuts were real faults, not only clean reconnects between events: some fell
        # inside an event, whose first half the client had to throw away and get again.
        assert total_halves > 0, total_cuts
