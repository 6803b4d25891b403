"""The in-process hub's wait primitive."""

from __future__ import annotations

import asyncio

import pytest

from outlast.store.hub import Hub, wait_for


async def test_wait_for_never_swallows_a_cancellation() -> None:
    """A cancellation that arrives together with the event must still cancel; otherwise a
    background loop built on wait_for can never be stopped (a worker that hangs on exit)."""
    event = asyncio.Event()
    task = asyncio.create_task(wait_for(event, 10))
    await asyncio.sleep(0)  # the task is now waiting
    event.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_wait_for_times_out_and_sees_the_event() -> None:
    event = asyncio.Event()
    assert await wait_for(event, 0.01) is False
    event.set()
    assert await wait_for(event, 0.01) is True


async def test_publish_wakes_key_and_wildcard_watchers_and_callbacks() -> None:
    hub = Hub()
    seen: list[str] = []
    unsubscribe = hub.subscribe("control", seen.append)
    with (
        hub.watch("events", "r1") as one,
        hub.watch("events") as anyone,
        hub.watch("events", "r2") as other,
    ):
        hub.publish("events", "r1")
        assert one.is_set() and anyone.is_set() and not other.is_set()
    hub.publish("control", "r9")
    unsubscribe()
    hub.publish("control", "r10")
    assert seen == ["r9"] and hub.watcher_count() == 0
