"""The batcher's writer (store/batcher.py) without a database: batches form from what is
pending while one is in flight, and closing it leaves no caller waiting."""

from __future__ import annotations

import asyncio

import pytest

from outlast.store.batcher import Batcher


def _batcher(commit: object) -> Batcher[str]:
    return Batcher(
        commit,  # type: ignore[arg-type]
        isolate=lambda exc: False,
        failure=lambda _, exc: exc,
        name="test-batcher",
    )


async def test_what_queues_behind_a_batch_in_flight_goes_in_the_next_one() -> None:
    release = asyncio.Event()
    batches: list[list[str]] = []

    async def commit(items: list[str]) -> None:
        batches.append(items)
        await release.wait()

    batcher = _batcher(commit)
    first = asyncio.create_task(batcher.submit("a"))
    while not batches:  # the writer took "a" alone: nothing else was pending
        await asyncio.sleep(0)
    rest = [asyncio.create_task(batcher.submit(x)) for x in "bcd"]
    await asyncio.sleep(0)
    release.set()
    await asyncio.wait_for(asyncio.gather(first, *rest), 5)
    assert batches == [["a"], ["b", "c", "d"]]
    assert (batcher.batches, batcher.items, batcher.largest) == (2, 4, 3)
    await batcher.close()


async def test_closing_cancels_the_batch_in_flight_and_the_writes_waiting() -> None:
    started = asyncio.Event()

    async def commit(items: list[str]) -> None:
        started.set()
        await asyncio.Event().wait()  # a write that never ends

    batcher = _batcher(commit)
    in_flight = asyncio.create_task(batcher.submit("a"))
    await asyncio.wait_for(started.wait(), 5)
    waiting = asyncio.create_task(batcher.submit("b"))
    await asyncio.sleep(0)
    await batcher.close()
    for task in (in_flight, waiting):
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
